/// What an app asks the user to allow (`UNAuthorizationOptions`).
public struct AuthorizationOptions: OptionSet, Sendable, Hashable, Codable {
    public let rawValue: Int
    /// Creates options from raw bits.
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let badge = AuthorizationOptions(rawValue: 1 << 0)
    public static let sound = AuthorizationOptions(rawValue: 1 << 1)
    public static let alert = AuthorizationOptions(rawValue: 1 << 2)
    public static let carPlay = AuthorizationOptions(rawValue: 1 << 3)
    public static let criticalAlert = AuthorizationOptions(rawValue: 1 << 4)
    public static let providesAppNotificationSettings = AuthorizationOptions(rawValue: 1 << 5)
    public static let provisional = AuthorizationOptions(rawValue: 1 << 6)
    /// Deprecated by Apple; accepted and ignored.
    public static let announcement = AuthorizationOptions(rawValue: 1 << 7)
    /// Deprecated by Apple; accepted and ignored.
    public static let timeSensitive = AuthorizationOptions(rawValue: 1 << 8)

    /// Names, for the CLI and logs.
    public static let names: [(String, AuthorizationOptions)] = [
        ("badge", .badge), ("sound", .sound), ("alert", .alert), ("carPlay", .carPlay),
        ("criticalAlert", .criticalAlert), ("providesAppNotificationSettings", .providesAppNotificationSettings),
        ("provisional", .provisional), ("announcement", .announcement), ("timeSensitive", .timeSensitive),
    ]

    /// Parses a name such as `alert` (case-insensitive).
    public init?(name: String) {
        guard let match = Self.names.first(where: { $0.0.lowercased() == name.lowercased() }) else { return nil }
        self = match.1
    }
}

/// The app's authorization status (`UNAuthorizationStatus`).
public enum AuthorizationStatus: String, Sendable, Codable, CaseIterable {
    case notDetermined, denied, authorized, provisional, ephemeral
}

/// One setting's state (`UNNotificationSetting`).
public enum NotificationSetting: String, Sendable, Codable, CaseIterable {
    case notSupported, disabled, enabled
}

/// How alerts are shown (`UNAlertStyle`).
public enum AlertStyle: String, Sendable, Codable, CaseIterable {
    case none, banner, alert
}

/// How Notification Center stacks an app's notifications (Settings → Notifications → the app →
/// Notification Grouping).
public enum GroupingSetting: String, Sendable, Codable, CaseIterable {
    /// By `thread-id` (`threadIdentifier`); notifications without one stack by app.
    case automatic
    /// Every notification of the app in one stack.
    case byApp
    /// No stacks: each notification on its own.
    case off
}

/// When previews are shown (`UNShowPreviewsSetting`).
public enum ShowPreviewsSetting: String, Sendable, Codable, CaseIterable {
    case always, whenAuthenticated, never
}

/// An app's notification settings as the user controls them (`UNNotificationSettings`). The system
/// enforces them whatever the app asks: no sound if sound is off, no badge if badge is off.
public struct NotificationSettings: Sendable, Hashable, Codable {
    public var authorizationStatus: AuthorizationStatus
    public var alertSetting: NotificationSetting
    public var soundSetting: NotificationSetting
    public var badgeSetting: NotificationSetting
    /// The notification list (Notification Center).
    public var notificationCenterSetting: NotificationSetting
    public var lockScreenSetting: NotificationSetting
    public var carPlaySetting: NotificationSetting
    public var criticalAlertSetting: NotificationSetting
    public var timeSensitiveSetting: NotificationSetting
    public var alertStyle: AlertStyle
    public var showPreviewsSetting: ShowPreviewsSetting
    public var providesAppNotificationSettings: Bool
    /// Notification Grouping; `nil` (settings saved before it existed) is automatic.
    public var groupingSetting: GroupingSetting?

    /// Notification Grouping, automatic unless the user chose otherwise.
    public var grouping: GroupingSetting { groupingSetting ?? .automatic }

    /// Settings of an app that has not asked yet: everything not supported.
    public static let notDetermined = NotificationSettings(
        authorizationStatus: .notDetermined, alertSetting: .notSupported, soundSetting: .notSupported,
        badgeSetting: .notSupported, notificationCenterSetting: .notSupported, lockScreenSetting: .notSupported,
        carPlaySetting: .notSupported, criticalAlertSetting: .notSupported, timeSensitiveSetting: .notSupported,
        alertStyle: .none, showPreviewsSetting: .always, providesAppNotificationSettings: false)

    /// Creates settings.
    public init(
        authorizationStatus: AuthorizationStatus, alertSetting: NotificationSetting, soundSetting: NotificationSetting,
        badgeSetting: NotificationSetting, notificationCenterSetting: NotificationSetting,
        lockScreenSetting: NotificationSetting, carPlaySetting: NotificationSetting,
        criticalAlertSetting: NotificationSetting, timeSensitiveSetting: NotificationSetting, alertStyle: AlertStyle,
        showPreviewsSetting: ShowPreviewsSetting, providesAppNotificationSettings: Bool
    ) {
        self.authorizationStatus = authorizationStatus
        self.alertSetting = alertSetting
        self.soundSetting = soundSetting
        self.badgeSetting = badgeSetting
        self.notificationCenterSetting = notificationCenterSetting
        self.lockScreenSetting = lockScreenSetting
        self.carPlaySetting = carPlaySetting
        self.criticalAlertSetting = criticalAlertSetting
        self.timeSensitiveSetting = timeSensitiveSetting
        self.alertStyle = alertStyle
        self.showPreviewsSetting = showPreviewsSetting
        self.providesAppNotificationSettings = providesAppNotificationSettings
    }

    /// The settings that follow a user's answer to a request for `options`.
    /// - `granted` with `provisional` in the options: provisional, list only (no banner, sound or badge).
    /// - `granted`: each requested type enabled, the rest disabled; banners; previews always.
    /// - denied: everything disabled.
    public static func after(decision granted: Bool, options: AuthorizationOptions) -> NotificationSettings {
        func setting(_ option: AuthorizationOptions) -> NotificationSetting {
            granted && options.contains(option) ? .enabled : .disabled
        }
        if granted && options.contains(.provisional) {
            return NotificationSettings(
                authorizationStatus: .provisional, alertSetting: .disabled, soundSetting: .disabled,
                badgeSetting: .disabled, notificationCenterSetting: .enabled, lockScreenSetting: .disabled,
                carPlaySetting: .disabled, criticalAlertSetting: setting(.criticalAlert),
                timeSensitiveSetting: .disabled, alertStyle: .none, showPreviewsSetting: .always,
                providesAppNotificationSettings: options.contains(.providesAppNotificationSettings))
        }
        let anyVisible = options.contains(.alert)
        return NotificationSettings(
            authorizationStatus: granted ? .authorized : .denied, alertSetting: setting(.alert),
            soundSetting: setting(.sound), badgeSetting: setting(.badge),
            notificationCenterSetting: granted && anyVisible ? .enabled : .disabled,
            lockScreenSetting: granted && anyVisible ? .enabled : .disabled, carPlaySetting: setting(.carPlay),
            criticalAlertSetting: setting(.criticalAlert),
            timeSensitiveSetting: granted && anyVisible ? .enabled : .disabled,
            alertStyle: granted && anyVisible ? .banner : .none, showPreviewsSetting: .always,
            providesAppNotificationSettings: options.contains(.providesAppNotificationSettings))
    }

    /// Whether the app is allowed to notify the user at all (authorized, provisional or ephemeral).
    public var isAllowed: Bool {
        authorizationStatus == .authorized || authorizationStatus == .provisional
            || authorizationStatus == .ephemeral
    }
}
