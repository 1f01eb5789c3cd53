import Foundation
import HeraldCore

/// Whether and how an app is running: not connected, background (including suspended), or frontmost.
public enum AppRunState: String, Sendable, Codable, CaseIterable {
    case notRunning, background, foreground
}

/// What the foreground app asks to be shown (`UNNotificationPresentationOptions`).
public struct PresentationOptions: OptionSet, Sendable, Hashable, Codable {
    public let rawValue: Int
    /// Creates options from raw bits.
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let banner = PresentationOptions(rawValue: 1 << 0)
    public static let list = PresentationOptions(rawValue: 1 << 1)
    public static let sound = PresentationOptions(rawValue: 1 << 2)
    public static let badge = PresentationOptions(rawValue: 1 << 3)
    /// Every option: what a background app's notification may use.
    public static let all: PresentationOptions = [.banner, .list, .sound, .badge]
}

/// An installed app as the engine knows it.
public struct InstalledApp: Sendable, Hashable, Codable {
    public var bundleID: String
    /// The app's bundle directory (sounds, `<lang>.lproj` strings).
    public var bundleDirectory: String?
    /// The app's data container `Library` directory (`Library/Sounds`).
    public var libraryDirectory: String?
    /// The app's strings, for `loc-key`s.
    public var localization: LocalizationBundle?

    /// Creates an app.
    public init(
        bundleID: String, bundleDirectory: String? = nil, libraryDirectory: String? = nil,
        localization: LocalizationBundle? = nil
    ) {
        self.bundleID = bundleID
        self.bundleDirectory = bundleDirectory
        self.libraryDirectory = libraryDirectory
        self.localization = localization
    }
}

/// A request waiting to fire.
public struct PendingRequest: Sendable, Hashable, Codable {
    public var request: NotificationRequest
    /// When it was added: the anchor of time-interval triggers.
    public var addedAt: Date
    /// The next fire date; `nil` for location triggers.
    public var nextFireDate: Date?
}

/// A notification that was delivered (`UNNotification`).
public struct DeliveredNotification: Sendable, Hashable, Codable {
    public var request: NotificationRequest
    public var date: Date
    /// Remote (from a push) rather than local.
    public var isRemote: Bool
    /// Fired after its time because the device was off (or the engine stopped).
    public var late: Bool
    /// The push's `apns-id`, for remote notifications.
    public var apnsID: String?

    /// The notification's identifier (the request's; for a push, its collapse id or apns-id).
    public var identifier: String { request.identifier }
}

/// A remote notification handed to the app's service extension, with the time it has.
public struct AwaitingExtension: Sendable, Hashable, Codable {
    public var notification: DeliveredNotification
    public var deadline: Date
}

/// A request the 64-pending limit pushed out: reported, and kept here so nothing disappears silently.
public struct DroppedRequest: Sendable, Hashable, Codable {
    public var request: NotificationRequest
    public var droppedAt: Date
    public var reason: String
}

/// Everything the device keeps about one app; what `DeviceStore` persists.
public struct AppRecord: Sendable, Hashable, Codable {
    public var app: InstalledApp
    public var settings: NotificationSettings = .notDetermined
    /// The options of the app's last authorization request.
    public var requestedOptions: AuthorizationOptions = []
    public var categories: [String: NotificationCategory] = [:]
    public var pending: [String: PendingRequest] = [:]
    /// Newest first.
    public var delivered: [DeliveredNotification] = []
    public var dropped: [DroppedRequest] = []
    public var badge: Int = 0
    /// The user's location authorization for this app; location triggers never fire without it.
    public var locationAuthorized: Bool = false
    /// Remote notifications waiting for the app's service extension (`mutable-content`), by identifier:
    /// kept with the record so that a restart still shows them (the original, once the deadline passed).
    public var awaitingExtension: [String: AwaitingExtension] = [:]
    /// Runtime only: reset to not running when the engine starts.
    public var runState: AppRunState = .notRunning

    /// Creates a record for a newly installed app.
    public init(app: InstalledApp) { self.app = app }
}

/// The sound a presentation plays, before file resolution.
public enum PresentedSound: Sendable, Hashable, Codable {
    case `default`
    case named(String)
    case critical(name: String?, volume: Double)
}

/// How the system shows one notification.
public struct Presentation: Sendable, Hashable, Codable {
    public var app: String
    /// With its `loc-key`s resolved in the user's languages.
    public var notification: DeliveredNotification
    /// Banner, alert, or none.
    public var alertStyle: AlertStyle
    /// Listed in the notification list.
    public var inList: Bool
    public var onLockScreen: Bool
    /// Plays this sound (already allowed by the settings); `nil` is silent.
    public var sound: PresentedSound?
    /// Sets the app's badge to this number.
    public var badge: Int?
    /// Actions in the default context (up to four).
    public var actions: [NotificationAction]
    /// Actions in the minimal context (up to two).
    public var minimalActions: [NotificationAction]
    /// Asked for by the foreground app (`willPresent`), rather than decided by the system.
    public var requestedByForegroundApp: Bool
}

/// How an app is started.
public enum LaunchMode: String, Sendable, Hashable, Codable {
    /// Launched or brought forward to the foreground.
    case foreground
    /// Launched in the background with a time budget.
    case background
}

/// What the app is told when the user acts on a notification (`UNNotificationResponse`).
public struct NotificationResponse: Sendable, Hashable, Codable {
    public var notification: DeliveredNotification
    public var actionIdentifier: String
    /// For a text-input action.
    public var userText: String?
}

/// The effects of an event, for the service to carry out.
public enum DeviceAction: Sendable, Hashable {
    /// The answer to an authorization request.
    case authorizationResult(app: String, granted: Bool, settings: NotificationSettings)
    /// Show a notification.
    case present(Presentation)
    /// Ask the foreground app which options to use (`willPresent`); answer with `.willPresentAnswered`.
    case askWillPresent(app: String, notification: DeliveredNotification)
    /// A remote notification for an app without notification types: delivered to the app silently.
    case deliverSilently(app: String, notification: DeliveredNotification)
    /// `content-available`: wake the app in the background to fetch (about 30 s).
    case backgroundWake(app: String, notification: DeliveredNotification, budget: TimeInterval)
    /// `mutable-content`: give the app's service extension until `deadline` to rewrite the content;
    /// answer with `.serviceExtensionFinished`, or the original is shown at the deadline.
    case runServiceExtension(app: String, notification: DeliveredNotification, deadline: Date)
    /// Start the app (it was not running).
    case launchApp(app: String, mode: LaunchMode, launchOptions: DeliveredNotification?)
    /// Bring a background app to the foreground.
    case bringToForeground(app: String)
    /// Tell the app of the user's response (`didReceive`).
    case tellApp(app: String, response: NotificationResponse)
    /// The app's badge changed.
    case setBadge(app: String, badge: Int)
    /// Requests pushed out by the pending limit.
    case pendingDropped(app: String, identifiers: [String])
    /// Delivered notifications removed: take them off the screen.
    case removeFromScreen(app: String, identifiers: [String])
}
