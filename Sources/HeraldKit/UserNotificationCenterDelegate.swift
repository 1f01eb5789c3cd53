import HeraldCore

/// What an app implements to take part in presentation and responses (`UNUserNotificationCenterDelegate`).
/// Every method has a default: nothing is shown for a foreground notification, responses and pushes
/// are accepted without doing anything.
public protocol UserNotificationCenterDelegate: Sendable {
    /// A notification arrived while the app is in the foreground: return how to show it (empty: not at all).
    func willPresent(_ notification: DeliveredNotification, center: UserNotificationCenter) async
        -> PresentationOptions
    /// The user acted on a notification (default, dismiss, or one of its category's actions). The daemon
    /// waits for this to return, as Apple's completion handler.
    func didReceive(_ response: NotificationResponse, center: UserNotificationCenter) async
    /// A remote notification for the app itself: `content-available` (background time to fetch) or a push
    /// for an app without notification types. Return what the fetch found.
    func didReceiveRemoteNotification(_ notification: DeliveredNotification, center: UserNotificationCenter) async
        -> BackgroundFetchResult
    /// A `mutable-content` push before it is shown (the service extension): return new content, or `nil`
    /// to show it unchanged.
    func serviceExtension(_ notification: DeliveredNotification, center: UserNotificationCenter) async
        -> NotificationContent?
    /// A `widgets` or `controls` push (`content-changed: true`) asked the app's widgets or controls to
    /// reload (what WidgetKit does on such a push): reload them. Only while the app runs.
    func contentChanged(_ kind: ReloadKind, center: UserNotificationCenter) async
    /// A `location` push (Apple's location push service extension): answer the query, for example by
    /// reporting where the device is. The app is launched in the background for it when it is not
    /// running; the daemon waits for this to return, within the background budget.
    func didReceiveLocationPush(_ notification: DeliveredNotification, center: UserNotificationCenter) async
    /// One of the app's Live Activities changed: started (by the app or a push-to-start), updated,
    /// got its push token, went stale, ended or was dismissed (docs/live-activities.md).
    func activityChanged(_ activity: LiveActivity, center: UserNotificationCenter) async
    /// The time the system gave the app for background work ran out before the app said it had
    /// finished (`kind`: background fetch, response, location query): the app is suspended right
    /// after this (its link closes), as iOS calls a background task's expiration handler.
    func backgroundTimeExpired(identifier: String, kind: String, center: UserNotificationCenter) async
    /// A Focus came on or went off (only for an app the user lets know: ``UserNotificationCenter/requestFocusStatusAuthorization()``).
    func focusStatusChanged(_ status: FocusStatus, center: UserNotificationCenter) async
}

extension UserNotificationCenterDelegate {
    public func willPresent(_ notification: DeliveredNotification, center: UserNotificationCenter) async
        -> PresentationOptions
    { [] }
    public func didReceive(_ response: NotificationResponse, center: UserNotificationCenter) async {}
    public func didReceiveRemoteNotification(_ notification: DeliveredNotification, center: UserNotificationCenter)
        async -> BackgroundFetchResult
    { .noData }
    public func serviceExtension(_ notification: DeliveredNotification, center: UserNotificationCenter) async
        -> NotificationContent?
    { nil }
    public func contentChanged(_ kind: ReloadKind, center: UserNotificationCenter) async {}
    public func didReceiveLocationPush(_ notification: DeliveredNotification, center: UserNotificationCenter) async {}
    public func activityChanged(_ activity: LiveActivity, center: UserNotificationCenter) async {}
    public func backgroundTimeExpired(identifier: String, kind: String, center: UserNotificationCenter) async {}
    public func focusStatusChanged(_ status: FocusStatus, center: UserNotificationCenter) async {}
}
