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

/// Everything the registry holds, as loaded from a store.
public struct DirectorySnapshot: Sendable {
    /// Teams.
    public var teams: [Team] = []
    /// Provider keys.
    public var keys: [ProviderKey] = []
    /// Apps.
    public var apps: [TeamApp] = []
    /// Devices.
    public var devices: [DeviceRecord] = []
    /// Registrations, current and invalidated.
    public var registrations: [Registration] = []

    /// An empty snapshot.
    public init() {}
}

/// The gateway's persistence (DESIGN.md: every role keeps its persistence behind a protocol).
/// Implementations must not assume they are the only process writing: every method is one
/// transaction, and the offline-queue policy is enforced inside it.
public protocol GatewayStore: Sendable {
    /// Everything the registry needs at start.
    func loadDirectory() async throws -> DirectorySnapshot
    /// Inserts or replaces a team.
    func save(_ team: Team) async throws
    /// Deletes a team.
    func deleteTeam(_ id: String) async throws
    /// Inserts or replaces a key.
    func save(_ key: ProviderKey) async throws
    /// Deletes a key.
    func deleteKey(_ id: String) async throws
    /// Inserts or replaces an app.
    func save(_ app: TeamApp) async throws
    /// Deletes an app.
    func deleteApp(_ bundleID: String) async throws
    /// Inserts or replaces a device.
    func save(_ device: DeviceRecord) async throws
    /// Inserts or replaces many devices in one transaction (a load test's thousands at once).
    func save(devices: [DeviceRecord]) async throws
    /// Inserts or replaces registrations, feedback entries (for removed apps) and, when given, the
    /// device record, in one transaction (a reset's new generation and its invalidated tokens
    /// land together or not at all).
    func save(_ registrations: [Registration], feedback: [FeedbackEntry], device: DeviceRecord?) async throws
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
    /// Deletes expired pushes; returns them.
    func purgeExpired(now: Date) async throws -> [StoredPush]
    /// The delivery log of one push, by `apns-id` or `apns-unique-id`, in order.
    func deliveryLog(id: String) async throws -> [DeliveryEvent]
    /// Reads and empties a topic's feedback list for one environment.
    func takeFeedback(bundleID: String, environment: APNsEnvironment) async throws -> [FeedbackEntry]
    /// How many pushes are stored.
    func storedCount() async throws -> Int
    /// Creates `channel` unless its app already has `limit` channels in its environment; returns
    /// whether it was created (docs/broadcast.md).
    func createChannel(_ channel: BroadcastChannel, limit: Int) async throws -> Bool
    /// One of an app's channels in an environment.
    func channel(bundleID: String, environment: APNsEnvironment, id: String) async throws -> BroadcastChannel?
    /// Deletes one of an app's channels; returns whether it existed.
    func deleteChannel(bundleID: String, environment: APNsEnvironment, id: String) async throws -> Bool
    /// The ids of an app's channels in an environment, oldest first.
    func channelIDs(bundleID: String, environment: APNsEnvironment) async throws -> [String]
    /// Records a message broadcast on a channel, forgetting the channel's messages sent more than
    /// a minute before it (others nodes of a cluster read a message by its id after hearing of it;
    /// a late subscriber gets only the most recent). On PostgreSQL every node hears of it
    /// (``BroadcastChange``) when it commits.
    func saveBroadcast(_ message: BroadcastMessage) async throws
    /// A broadcast message by its `apns-unique-id`, while it is kept.
    func broadcast(uniqueID: String) async throws -> BroadcastMessage?
    /// A channel's most recent broadcast message, if any is kept.
    func latestBroadcast(channelID: String, environment: APNsEnvironment) async throws -> BroadcastMessage?
    /// How many pushes are stored for one device.
    func storedCount(device: String) async throws -> Int
    /// How many pushes are stored for each device that has any.
    func storedCountsByDevice() async throws -> [String: Int]
    /// A topic's feedback list in one environment, oldest first, without emptying it.
    func feedback(bundleID: String, environment: APNsEnvironment) async throws -> [FeedbackEntry]
    /// The events of the newest `rows` rows of the delivery log (a row is a run of one push's steps
    /// written together), oldest first: what the console's history is built from.
    func recentDeliveryEvents(rows: Int) async throws -> [DeliveryEvent]
    /// Notes where the delivery log stands at `now` and deletes every row that was written before
    /// `cutoff`, to the precision of those notes (the purge runs hourly, so a row goes within an
    /// hour after it is due). Returns how many rows went.
    func purgeDeliveryLog(now: Date, before cutoff: Date) async throws -> Int
}

extension GatewayStore {
    /// One device after another; a store that can should do it in one transaction.
    public func save(devices: [DeviceRecord]) async throws {
        for device in devices { try await save(device) }
    }

    /// Writes a batch in one durable transaction.
    public func commit(_ batch: StoreBatch, policy: OfflinePolicy) async throws -> [String] {
        try await commit(batch, policy: policy, durable: true)
    }
}
