import Foundation
import HeraldCore

/// An installed app as the engine knows it.
public struct InstalledApp: Sendable, Hashable, Codable {
    public var bundleID: String
    /// The app's bundle directory (sounds, `<lang>.lproj` strings).
    public var bundleDirectory: String?
    /// The app's data container `Library` directory (`Library/Sounds`).
    public var libraryDirectory: String?
    /// The app's strings, for `loc-key`s.
    public var localization: LocalizationBundle?
    /// The program the daemon starts to launch the app; `nil`: the app cannot be launched.
    public var executable: String?
    /// The app's `aps-environment` entitlement: the environment its topic is registered in with the
    /// push service; `nil`: the app cannot register for remote notifications.
    public var apsEnvironment: APNsEnvironment?
    /// `NSSupportsLiveActivitiesFrequentUpdates`: a larger hourly budget of priority-10 activity
    /// updates (docs/live-activities.md); `nil` = no.
    public var supportsFrequentActivityUpdates: Bool?

    /// Creates an app.
    public init(
        bundleID: String, bundleDirectory: String? = nil, libraryDirectory: String? = nil,
        localization: LocalizationBundle? = nil, executable: String? = nil, apsEnvironment: APNsEnvironment? = nil,
        supportsFrequentActivityUpdates: Bool? = nil
    ) {
        self.supportsFrequentActivityUpdates = supportsFrequentActivityUpdates
        self.bundleID = bundleID
        self.bundleDirectory = bundleDirectory
        self.libraryDirectory = libraryDirectory
        self.localization = localization
        self.executable = executable
        self.apsEnvironment = apsEnvironment
    }
}

extension InstalledApp {
    /// What the user sees as the app's name: the bundle id's last part, capitalised
    /// (`dev.herald.remindme` → `Remindme`).
    public static func displayName(of bundleID: String) -> String {
        let last = bundleID.split(separator: ".").last.map(String.init) ?? bundleID
        return last.prefix(1).uppercased() + last.dropFirst()
    }
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
    /// Notification Center (and the lock screen's list), newest first, at most
    /// ``DeviceEngine/Configuration/deliveredLimit``.
    public var delivered: [DeliveredNotification] = []
    /// Notifications held for the next Scheduled Summary, newest first; `nil` when none ever were.
    public var held: [DeliveredNotification]?
    public var dropped: [DroppedRequest] = []
    public var badge: Int = 0
    /// The user's location authorization for this app; location triggers never fire without it.
    public var locationAuthorized: Bool = false
    /// Whether the user has decided about location (asked by the app, or set in Settings); optional so
    /// that records saved before it existed still load.
    public var locationDecided: Bool?
    /// Remote notifications waiting for the app's service extension (`mutable-content`), by identifier:
    /// kept with the record so that a restart still shows them (the original, once the deadline passed).
    public var awaitingExtension: [String: AwaitingExtension] = [:]
    /// The app's Live Activities and push-to-start tokens (``liveActivities``); `nil` until it has
    /// any, so that records saved before activities existed still load.
    public var activityState: AppActivities?
    /// Whether the user lets the app read if a Focus is on (`INFocusStatusCenter`); `nil`: not asked.
    public var focusStatusAuthorized: Bool?
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
    /// With its `loc-key`s resolved in the user's languages, and its placement.
    public var notification: DeliveredNotification
    /// Banner, alert, or none.
    public var alertStyle: AlertStyle
    /// Listed in the notification list.
    public var inList: Bool
    public var onLockScreen: Bool
    /// The interruption level it was delivered at: the content's, unless the app's settings lowered
    /// a time-sensitive or critical one to active.
    public var level: InterruptionLevel
    /// The Focus that silenced it: no sound, no banner, the screen stays dark.
    public var silencedBy: String?
    /// Whether it lights the screen (a banner, an alert, a sound or a lock-screen entry that is not
    /// passive, silenced or quiet).
    public var wakesScreen: Bool
    /// Whether it has a title, subtitle or body to show; without, only its badge and sound apply.
    public var hasText: Bool
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
    /// A notification of an app in Scheduled Summary, held until the summary at `until`.
    case held(app: String, notification: DeliveredNotification, until: Date?)
    /// A notification with nothing to show, hear or count: delivered to no screen.
    case nothingToShow(app: String, notification: DeliveredNotification)
    /// A Scheduled Summary is delivered: its notifications, in the summary's order, localized.
    case summaryDelivered(DeliveredSummary, notifications: [SummaryNotification])
    /// A Focus came on or went off (`nil`).
    case focusChanged(ActiveFocus?)
    /// The device locked or unlocked.
    case lockChanged(locked: Bool)
    /// The user changed the app's settings from a notification (provisional Keep or Turn Off).
    case settingsChanged(app: String, settings: NotificationSettings)
    /// A `widgets` or `controls` push: tell the app its widgets or controls should reload.
    case reloadContent(app: String, kind: ReloadKind, apnsID: String)
    /// A `location` push: give it to the app's location query handler (``AppLinkEvent/locationPush(notification:)``).
    case locationQuery(app: String, notification: DeliveredNotification)
    /// A Live Activity started, changed, ended or was dismissed: tell its app and show it.
    case activityChanged(LiveActivity)
    /// An activity's update came with an alert the settings let through.
    case activityAlert(app: String, activityID: String, alert: ActivityAlert, sound: PresentedSound?)
    /// Something about an activity worth a log line (an update ignored or held).
    case activityNote(app: String, activityID: String, text: String)
    /// Ask the push service for an activity's token (``ActivityEvent/tokenIssued(app:id:token:)`` with it).
    case requestActivityToken(app: String, activityID: String)
    /// Give an activity's token up at the push service.
    case releaseActivityToken(app: String, activityID: String)
    /// Subscribe the app to a broadcast channel at the push service.
    case subscribeChannel(app: String, channelID: String)
    /// End the app's subscription to a broadcast channel.
    case unsubscribeChannel(app: String, channelID: String)
}

/// One notification of a delivered summary, as shown.
public struct SummaryNotification: Sendable, Hashable, Codable {
    /// The app's bundle id.
    public var app: String
    /// Localized, with its placement.
    public var notification: DeliveredNotification
}

/// A delivered or held notification of an app, as the store keeps it (one row each).
public struct NotificationKey: Sendable, Hashable {
    /// The notification's identifier.
    public var identifier: String
    /// Held for the Scheduled Summary rather than delivered.
    public var held: Bool
}
