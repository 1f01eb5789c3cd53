import Foundation

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

    /// Names, for the CLI and logs.
    public static let names: [(String, PresentationOptions)] = [
        ("banner", .banner), ("list", .list), ("sound", .sound), ("badge", .badge),
    ]

    /// The names of the options set, in order.
    public var nameList: [String] { Self.names.filter { contains($0.1) }.map(\.0) }
}

/// A request waiting to fire.
public struct PendingRequest: Sendable, Hashable, Codable {
    public var request: NotificationRequest
    /// When it was added: the anchor of time-interval triggers.
    public var addedAt: Date
    /// The next fire date; `nil` for location triggers.
    public var nextFireDate: Date?

    /// Creates a pending request.
    public init(request: NotificationRequest, addedAt: Date, nextFireDate: Date?) {
        self.request = request
        self.addedAt = addedAt
        self.nextFireDate = nextFireDate
    }
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
    /// Herald: where the device put it (the lock screen's list, silenced by a Focus, in a Scheduled
    /// Summary, delivered quietly); `nil` until the device has placed it.
    public var placement: NotificationPlacement?

    /// Creates a delivered notification.
    public init(
        request: NotificationRequest, date: Date, isRemote: Bool, late: Bool, apnsID: String? = nil,
        placement: NotificationPlacement? = nil
    ) {
        self.request = request
        self.date = date
        self.isRemote = isRemote
        self.late = late
        self.apnsID = apnsID
        self.placement = placement
    }

    /// The notification's identifier (the request's; for a push, its collapse id or apns-id).
    public var identifier: String { request.identifier }
}

/// Where the device put a delivered notification, beside Notification Center (Herald's record of
/// the decisions of docs/device-engine.md, for the screens that show it).
public struct NotificationPlacement: Sendable, Hashable, Codable {
    /// In the lock screen's list as well as Notification Center.
    public var lockScreen: Bool
    /// The Focus that silenced it (its name), if one did.
    public var silencedBy: String?
    /// The Scheduled Summary it came in, if it was held for one.
    public var summaryID: String?
    /// Delivered quietly under provisional authorization: it offers Keep and Turn Off.
    public var quiet: Bool
    /// Shown as "Time Sensitive" (its level broke through, with the app's setting on).
    public var timeSensitive: Bool
    /// Critical: shown and heard whatever the Focus and sound settings.
    public var critical: Bool
    /// Its place in the order of arrival (larger is newer), kept across restarts.
    public var sequence: Int64

    /// Creates a placement.
    public init(
        lockScreen: Bool = true, silencedBy: String? = nil, summaryID: String? = nil, quiet: Bool = false,
        timeSensitive: Bool = false, critical: Bool = false, sequence: Int64 = 0
    ) {
        self.lockScreen = lockScreen
        self.silencedBy = silencedBy
        self.summaryID = summaryID
        self.quiet = quiet
        self.timeSensitive = timeSensitive
        self.critical = critical
        self.sequence = sequence
    }
}

/// What the app is told when the user acts on a notification (`UNNotificationResponse`).
public struct NotificationResponse: Sendable, Hashable, Codable {
    public var notification: DeliveredNotification
    public var actionIdentifier: String
    /// For a text-input action.
    public var userText: String?

    /// Creates a response.
    public init(notification: DeliveredNotification, actionIdentifier: String, userText: String? = nil) {
        self.notification = notification
        self.actionIdentifier = actionIdentifier
        self.userText = userText
    }
}

/// How an app is started.
public enum LaunchMode: String, Sendable, Hashable, Codable {
    /// Launched or brought forward to the foreground.
    case foreground
    /// Launched in the background with a time budget.
    case background
}
