import Foundation
import HeraldCore

/// The calls of `UNUserNotificationCenter` (and `UIApplication`'s for notifications, and the seeds'
/// `UILocalNotification` API), each one app-link call answered by the device daemon.
extension UserNotificationCenter {
    // MARK: - UNUserNotificationCenter

    /// Asks the user (once) to let the app use the device's location, which location triggers need
    /// (Core Location's `requestWhenInUseAuthorization`); later calls return the current answer, which
    /// the user can change in Settings (the device API).
    public func requestLocationAuthorization() async throws -> Bool {
        guard case .locationAuthorization(let granted) = try await call(.requestLocationAuthorization) else {
            throw Self.unexpected("requestLocationAuthorization")
        }
        return granted
    }

    /// Asks the user (once) to allow `options`; later calls return the first answer.
    public func requestAuthorization(options: AuthorizationOptions) async throws -> Bool {
        guard case .authorization(let granted, _) = try await call(.requestAuthorization(options: options)) else {
            throw Self.unexpected("requestAuthorization")
        }
        return granted
    }

    /// The app's settings as the user left them.
    public func notificationSettings() async throws -> NotificationSettings {
        guard case .settings(let settings) = try await call(.notificationSettings) else {
            throw Self.unexpected("notificationSettings")
        }
        return settings
    }

    /// Replaces the app's categories.
    public func setNotificationCategories(_ categories: [NotificationCategory]) async throws {
        _ = try await call(.setCategories(categories: categories))
    }

    /// The app's categories.
    public func notificationCategories() async throws -> [NotificationCategory] {
        guard case .categories(let categories) = try await call(.categories) else {
            throw Self.unexpected("notificationCategories")
        }
        return categories
    }

    /// Schedules a request (or replaces the pending one with the same identifier).
    public func add(_ request: NotificationRequest) async throws {
        _ = try await call(.add(request: request))
    }

    /// The pending requests.
    public func pendingNotificationRequests() async throws -> [NotificationRequest] {
        try await pendingNotifications().map(\.request)
    }

    /// The pending requests with their next fire dates (Herald).
    public func pendingNotifications() async throws -> [PendingRequest] {
        guard case .pending(let requests) = try await call(.pending) else {
            throw Self.unexpected("pendingNotificationRequests")
        }
        return requests
    }

    /// Removes pending requests.
    public func removePendingNotificationRequests(withIdentifiers identifiers: [String]) async throws {
        _ = try await call(.removePending(identifiers: identifiers))
    }

    /// Removes every pending request.
    public func removeAllPendingNotificationRequests() async throws {
        _ = try await call(.removePending(identifiers: nil))
    }

    /// The app's notifications in the notification list, newest first.
    public func deliveredNotifications() async throws -> [DeliveredNotification] {
        guard case .delivered(let notifications) = try await call(.delivered) else {
            throw Self.unexpected("deliveredNotifications")
        }
        return notifications
    }

    /// Removes delivered notifications.
    public func removeDeliveredNotifications(withIdentifiers identifiers: [String]) async throws {
        _ = try await call(.removeDelivered(identifiers: identifiers))
    }

    /// Removes every delivered notification.
    public func removeAllDeliveredNotifications() async throws {
        _ = try await call(.removeDelivered(identifiers: nil))
    }

    /// Sets the app's badge (0 clears it).
    public func setBadgeCount(_ count: Int) async throws {
        _ = try await call(.setBadge(badge: count))
    }

    /// The app's badge number (`applicationIconBadgeNumber`), as the user sees it on the icon: read
    /// it to count up (`setBadgeCount(badgeCount() + 1)`).
    public func badgeCount() async throws -> Int {
        guard case .badge(let badge) = try await call(.badge) else { throw Self.unexpected("badge") }
        return badge
    }

    // MARK: - UILocalNotification (the seeds' API)

    /// `scheduleLocalNotification:`: the device computes the schedule's dates on its own clock; a
    /// fire date that is `nil` or already past delivers it at once (a repeating one fires at its next
    /// repetition). Replaces a pending one with the same identifier.
    public func scheduleLocalNotification(_ notification: LegacyNotification) async throws {
        _ = try await call(.addLegacy(notification: notification))
    }

    /// `presentLocalNotificationNow:`: delivers it at once, whatever its fire date.
    public func presentLocalNotificationNow(_ notification: LegacyNotification) async throws {
        var now = notification
        now.schedule = LegacySchedule()
        _ = try await call(.addLegacy(notification: now))
    }

    /// `cancelLocalNotification:`: removes it from the pending ones and, if it is on the screen (in
    /// the list, an alert still up, held for a summary), takes it away.
    public func cancelLocalNotification(identifier: String) async throws {
        _ = try await call(.cancelLegacy(identifiers: [identifier]))
    }

    /// `cancelAllLocalNotifications`: the same for every one of the app's notifications.
    public func cancelAllLocalNotifications() async throws {
        _ = try await call(.cancelLegacy(identifiers: nil))
    }

    /// `scheduledLocalNotifications`: the pending requests, with their next fire dates.
    public func scheduledLocalNotifications() async throws -> [PendingRequest] {
        try await pendingNotifications()
    }

    // MARK: - Focus (INFocusStatusCenter)

    /// Asks the user (once) to let the app know whether a Focus is on; later calls return the answer.
    public func requestFocusStatusAuthorization() async throws -> Bool {
        guard case .focusAuthorization(let granted) = try await call(.requestFocusStatusAuthorization) else {
            throw Self.unexpected("requestFocusStatusAuthorization")
        }
        return granted
    }

    /// Whether the user is focused: `isFocused` is `nil` until the user lets the app know.
    public func focusStatus() async throws -> FocusStatus {
        guard case .focusStatus(let status) = try await call(.focusStatus) else {
            throw Self.unexpected("focusStatus")
        }
        return status
    }

    /// Registers with the push service and returns the device token as 64 hex characters, as a
    /// provider sends it. Later changes arrive on ``tokenChanges``. While the push service cannot be
    /// reached the call waits for it (Apple calls neither callback until the device is connected), up
    /// to the device's bound (5 minutes by default), then fails with Cocoa's 3010.
    public func registerForRemoteNotifications() async throws -> String {
        guard case .token(let token) = try await call(.registerForRemoteNotifications) else {
            throw Self.unexpected("registerForRemoteNotifications")
        }
        return token
    }

    /// Unregisters: the push service answers 410 `Unregistered` for the old token.
    public func unregisterForRemoteNotifications() async throws {
        _ = try await call(.unregisterForRemoteNotifications)
    }

    /// Tells the device the app moved to the foreground or the background.
    public func setState(_ state: AppRunState) async throws {
        _ = try await call(.setState(state: state))
        shared.withLock { $0.state = state }
    }

}
