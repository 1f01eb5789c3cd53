import Foundation
import HeraldCore

/// What the engine changed since its last ``DeviceEngine/takeChanges()``, for a ``DeviceStore`` to
/// write in one transaction: app records (without their notifications), apps removed, the rows of
/// delivered and held notifications, the device's own state, and the pushes taken.
public struct DeviceChanges: Sendable {
    /// Records of apps that changed, in bundle-id order (their `delivered` and `held` lists are
    /// written as ``notifications``).
    public var records: [AppRecord]
    /// Apps removed, in bundle-id order: their record and every notification row go first.
    public var removed: [String]
    /// Notification rows to write (or delete, without a notification).
    public var notifications: [NotificationRow]
    /// The device's Focus modes, Scheduled Summary and summaries, when they changed.
    public var device: DeviceState?
    /// `apns-id`s of the pushes handled.
    public var taken: [String]

    /// Creates changes.
    public init(
        records: [AppRecord] = [], removed: [String] = [], notifications: [NotificationRow] = [],
        device: DeviceState? = nil, taken: [String] = []
    ) {
        self.records = records
        self.removed = removed
        self.notifications = notifications
        self.device = device
        self.taken = taken
    }

    /// Nothing to write.
    public var isEmpty: Bool {
        records.isEmpty && removed.isEmpty && notifications.isEmpty && device == nil && taken.isEmpty
    }
}

/// One delivered or held notification of an app, as stored: written when `notification` is set,
/// deleted when it is `nil`.
public struct NotificationRow: Sendable, Hashable {
    /// The app's bundle id.
    public var app: String
    /// The notification's identifier.
    public var identifier: String
    /// Waiting for a Scheduled Summary rather than in Notification Center.
    public var held: Bool
    /// The notification to write; `nil`: delete the row.
    public var notification: DeliveredNotification?
}
