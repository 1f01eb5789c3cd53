import Foundation
import HeraldCore

/// A token on a topic's feedback list: its app was removed from the device at `removedAt`.
public struct FeedbackEntry: Sendable, Codable, Equatable {
    /// The app's bundle id.
    public var bundleID: String
    /// The token.
    public var token: DeviceToken
    /// The environment of the token.
    public var environment: APNsEnvironment
    /// When the app was removed.
    public var removedAt: Date

    /// Creates an entry.
    public init(bundleID: String, token: DeviceToken, environment: APNsEnvironment, removedAt: Date) {
        self.bundleID = bundleID
        self.token = token
        self.environment = environment
        self.removedAt = removedAt
    }
}

/// Where the gateway keeps what happens to pushes: the offline queues (with their policy enforced
/// inside each transaction), the delivery log, and the feedback lists of tokens whose app was
/// removed. Every method is one transaction; implementations must not assume they are the only
/// process writing.
public protocol PushStore: Sendable {
    /// Writes a batch in one transaction, applying `policy` to the offline queues it touches. The
    /// `replaced` delivery-log line of every push the policy pushes out is written in the same
    /// transaction, so it is exactly as durable as the replacement. Returns their `apns-id`s.
    ///
    /// `durable` false says the batch only extends the delivery log and nobody waits on it: the
    /// store may commit it without forcing it to disk (it must still be atomic and survive a
    /// killed process; a power cut may lose it).
    func commit(_ batch: StoreBatch, policy: OfflinePolicy, durable: Bool) async throws -> [String]
    /// The unexpired pushes waiting for a device, oldest first.
    func pending(device: String, now: Date) async throws -> [StoredPush]
    /// ``pending(device:now:)`` for several devices in one query: what a reconnect storm reads.
    /// Devices with nothing waiting are left out.
    func pending(devices: [String], now: Date) async throws -> [String: [StoredPush]]
    /// Deletes expired pushes; returns them.
    func purgeExpired(now: Date) async throws -> [StoredPush]
    /// The delivery log of one push, by `apns-id` or `apns-unique-id`, in order. A row that cannot
    /// be read is left out and counted (``DeliveryLogRead/unreadableRows``).
    func deliveryLogRead(id: String) async throws -> DeliveryLogRead
    /// Pushes by day, app and Apple's delivery state, from `day` (`YYYY-MM-DD`, UTC) on.
    func deliveryCounts(since day: String) async throws -> [DeliveryCount]
    /// The test API's reset (docs/testing.md): deletes every device with its registrations and
    /// feedback, every stored push, and the delivery log with its counts. Teams, keys, apps and
    /// broadcast channels stay.
    func eraseTestData() async throws
    /// Reads and empties a topic's feedback list for one environment.
    func takeFeedback(bundleID: String, environment: APNsEnvironment) async throws -> [FeedbackEntry]
    /// How many pushes are stored.
    func storedCount() async throws -> Int
    /// Returns once the store has answered one small read, or throws why it could not: what the
    /// admin API's `/readyz` asks.
    func ping() async throws
    /// How many pushes are stored for one device.
    func storedCount(device: String) async throws -> Int
    /// How many pushes are stored for each device that has any.
    func storedCountsByDevice() async throws -> [String: Int]
    /// A topic's feedback list in one environment, oldest first, without emptying it.
    func feedback(bundleID: String, environment: APNsEnvironment) async throws -> [FeedbackEntry]
    /// The events of the newest `rows` rows of the delivery log (a row is a run of one push's steps
    /// written together), oldest first: what the console's history is built from. A row that cannot
    /// be read is left out and counted (``DeliveryLogRead/unreadableRows``).
    func recentDeliveryLog(rows: Int) async throws -> DeliveryLogRead
    /// Notes where the delivery log stands at `now` and deletes every row that was written before
    /// `cutoff`, to the precision of those notes (the purge runs hourly, so a row goes within an
    /// hour after it is due). Returns how many rows went.
    func purgeDeliveryLog(now: Date, before cutoff: Date) async throws -> Int
}

/// Rows of the delivery log, read (``PushStore/recentDeliveryLog(rows:)``,
/// ``PushStore/deliveryLogRead(id:)``).
public struct DeliveryLogRead: Sendable, Equatable {
    /// Their events, oldest first.
    public var events: [DeliveryEvent] = []
    /// How many of the rows could not be read (damaged, or written by a newer release), and are not
    /// in ``events``.
    public var unreadableRows = 0

    /// A log read.
    public init(events: [DeliveryEvent] = [], unreadableRows: Int = 0) {
        self.events = events
        self.unreadableRows = unreadableRows
    }
}

extension PushStore {
    /// The events of the newest `rows` rows of the delivery log, oldest first, leaving out those
    /// that cannot be read (``recentDeliveryLog(rows:)``).
    public func recentDeliveryEvents(rows: Int) async throws -> [DeliveryEvent] {
        try await recentDeliveryLog(rows: rows).events
    }

    /// The delivery log of one push, by `apns-id` or `apns-unique-id`, in order, leaving out the
    /// rows that cannot be read (``deliveryLogRead(id:)``).
    public func deliveryLog(id: String) async throws -> [DeliveryEvent] {
        try await deliveryLogRead(id: id).events
    }

    /// Writes a batch in one durable transaction.
    public func commit(_ batch: StoreBatch, policy: OfflinePolicy) async throws -> [String] {
        try await commit(batch, policy: policy, durable: true)
    }
}

extension PushStore {
    /// One ``pending(device:now:)`` after the other, for a store that has no query for many.
    public func pending(devices: [String], now: Date) async throws -> [String: [StoredPush]] {
        var found: [String: [StoredPush]] = [:]
        for device in devices {
            let pushes = try await pending(device: device, now: now)
            if !pushes.isEmpty { found[device] = pushes }
        }
        return found
    }
}
