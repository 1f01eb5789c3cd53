import Foundation
import HeraldCore

/// A notification kept for a device that is offline (or not yet acknowledged).
public struct StoredPush: Sendable, Codable, Equatable {
    /// `apns-id`.
    public var apnsID: String
    /// `apns-unique-id`, development only.
    public var uniqueID: String?
    /// The device it is for.
    public var deviceID: String
    /// The token it was sent to.
    public var token: DeviceToken
    /// The environment of that token.
    public var environment: APNsEnvironment
    /// `apns-topic` as sent.
    public var topic: String
    /// The push type.
    public var pushType: PushType
    /// The priority.
    public var priority: PushPriority
    /// `apns-collapse-id`.
    public var collapseID: String?
    /// `apns-expiration` as the provider sent it (UNIX seconds), if it did.
    public var expiration: Int64?
    /// When the gateway gives up on it (`apns-expiration`, capped at 30 days).
    public var expiresAt: Date
    /// When the gateway accepted it.
    public var receivedAt: Date
    /// The payload bytes, unchanged.
    public var payload: Data
    /// `content-available: 1`.
    public var contentAvailable: Bool

    /// Creates a stored push.
    public init(
        apnsID: String, uniqueID: String?, deviceID: String, token: DeviceToken, environment: APNsEnvironment,
        topic: String, pushType: PushType, priority: PushPriority, collapseID: String?, expiration: Int64? = nil,
        expiresAt: Date, receivedAt: Date, payload: Data, contentAvailable: Bool
    ) {
        self.apnsID = apnsID
        self.uniqueID = uniqueID
        self.deviceID = deviceID
        self.token = token
        self.environment = environment
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.collapseID = collapseID
        self.expiration = expiration
        self.expiresAt = expiresAt
        self.receivedAt = receivedAt
        self.payload = payload
        self.contentAvailable = contentAvailable
    }
}

/// One step in a push's life, for the delivery log (lookup by `apns-id` or `apns-unique-id`).
public struct DeliveryEvent: Sendable, Codable, Equatable {
    /// The steps.
    public enum Kind: String, Sendable, Codable {
        /// The provider API answered 200.
        case accepted
        /// Written to the offline store.
        case stored
        /// Sent down the device link.
        case delivered
        /// The device acknowledged it.
        case acknowledged
        /// Replaced in the offline store by a newer push (same topic or collapse id).
        case replaced
        /// Dropped: expired, expiration 0 while offline, or the token became invalid.
        case discarded
        /// The device acknowledged it but could not use it (the detail says why, naming the key
        /// when the payload is at fault).
        case refused
    }
    /// `apns-id`.
    public var apnsID: String
    /// `apns-unique-id`.
    public var uniqueID: String?
    /// The step.
    public var kind: Kind
    /// When it happened.
    public var at: Date
    /// Extra detail (the device, why it was discarded, …).
    public var detail: String?

    /// Creates an event.
    public init(apnsID: String, uniqueID: String?, kind: Kind, at: Date, detail: String? = nil) {
        self.apnsID = apnsID
        self.uniqueID = uniqueID
        self.kind = kind
        self.at = at
        self.detail = detail
    }
}

extension DeliveryEvent {
    /// Appends the event's JSON to `w`; without `identifiers`, only its kind, time and detail.
    func write(to w: inout JSONWriter, identifiers: Bool) {
        w.raw("{")
        if identifiers {
            w.raw(#""apnsID":"#)
            w.string(apnsID)
            if let uniqueID {
                w.raw(#","uniqueID":"#)
                w.string(uniqueID)
            }
            w.raw(",")
        }
        w.raw(#""kind":"#)
        w.string(kind.rawValue)
        w.raw(#","at":"#)
        w.integer(Int64((at.timeIntervalSince1970 * 1000).rounded()))
        if let detail {
            w.raw(#","detail":"#)
            w.string(detail)
        }
        w.raw("}")
    }

    /// A run of events of one push (accepted, delivered, acknowledged come together) as the SQLite
    /// store keeps it, written by hand as this runs for every push: a JSON array of the events
    /// without their identifiers, which the row's columns hold once for all of them.
    static func writeRun(_ events: ArraySlice<DeliveryEvent>, to w: inout JSONWriter) {
        w.raw("[")
        for (i, event) in zip(events.indices, events) {
            if i > events.startIndex { w.raw(",") }
            event.write(to: &w, identifiers: false)
        }
        w.raw("]")
    }
}

/// An element of a delivery-log record as stored: the identifiers are absent from runs (the row
/// has them) and present in records written before runs were.
struct StoredDeliveryEvent: Decodable {
    var apnsID: String?
    var uniqueID: String?
    var kind: DeliveryEvent.Kind
    var at: Date
    var detail: String?

    /// The event, taking the identifiers the record leaves out from its row.
    func event(apnsID rowApnsID: String, uniqueID rowUniqueID: String?) -> DeliveryEvent {
        DeliveryEvent(
            apnsID: apnsID ?? rowApnsID, uniqueID: apnsID == nil ? rowUniqueID : uniqueID, kind: kind, at: at,
            detail: detail)
    }
}

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

/// How many notifications to keep per (device, topic) while the device is offline.
public struct OfflinePolicy: Sendable, Equatable {
    /// APNs keeps one (the newest). More is a Herald extension.
    public var depth: Int = 1
    /// The longest anything is kept, whatever `apns-expiration` says (30 days).
    public var maximumAge: TimeInterval = 30 * 24 * 3600
    /// How long a push without `apns-expiration` is kept.
    public var defaultAge: TimeInterval = 30 * 24 * 3600

    /// APNs's policy.
    public init(depth: Int = 1) { self.depth = max(1, depth) }

    /// Applies the policy within one batch, in order: a push replaces an earlier one of the same
    /// (device, topic) and collapse id, and beyond `depth` the oldest go. Returns what is left to
    /// write, in order, and the pushes pushed out, each with the push that replaced it. Writing the
    /// survivors one by one under the same rules gives the same queues as writing every push one
    /// by one.
    public func coalesce(_ pushes: [StoredPush]) -> (survivors: [StoredPush], replaced: [Replacement]) {
        if pushes.count < 2 { return (pushes, []) }
        var queues: [String: [Int]] = [:]
        var dropped = Set<Int>()
        var replaced: [Replacement] = []
        for (i, p) in pushes.enumerated() {
            let key = p.deviceID + "\u{0}" + p.topic
            var queue = queues[key, default: []]
            if let collapse = p.collapseID {
                queue.removeAll { j in
                    guard pushes[j].collapseID == collapse else { return false }
                    dropped.insert(j)
                    replaced.append(Replacement(apnsID: pushes[j].apnsID, by: p))
                    return true
                }
            }
            queue.append(i)
            while queue.count > depth {
                let j = queue.removeFirst()
                dropped.insert(j)
                replaced.append(Replacement(apnsID: pushes[j].apnsID, by: p))
            }
            queues[key] = queue
        }
        let survivors = pushes.indices.filter { !dropped.contains($0) }.map { pushes[$0] }
        return (survivors, replaced)
    }

    /// A stored push the policy pushed out, and the newer push that did it.
    public struct Replacement: Sendable {
        /// The `apns-id` pushed out.
        public var apnsID: String
        /// The push that replaced it.
        public var by: StoredPush

        /// Its delivery-log line, which a store writes in the same transaction as the replacement.
        public var event: DeliveryEvent {
            DeliveryEvent(
                apnsID: apnsID, uniqueID: nil, kind: .replaced, at: by.receivedAt,
                detail: "replaced by \(by.apnsID), a newer push for the same device and topic (or collapse id)")
        }
    }
}

/// One durable write: pushes to store and events to log, committed together.
public struct StoreBatch: Sendable {
    /// Pushes to add to the offline store under the policy.
    public var pushes: [StoredPush] = []
    /// Events to append to the delivery log.
    public var events: [DeliveryEvent] = []
    /// Pushes delivered and acknowledged at once, for the delivery log (each stands for its
    /// accepted, delivered and acknowledged events).
    public var delivered: [DeliveredPush] = []
    /// `apns-id`s to remove from the offline store (acknowledged or discarded), per device.
    public var removals: [(deviceID: String, apnsID: String)] = []

    /// An empty batch.
    public init() {}

    /// Whether there is nothing to write.
    public var isEmpty: Bool { pushes.isEmpty && events.isEmpty && delivered.isEmpty && removals.isEmpty }

    /// Appends another batch.
    public mutating func append(_ other: StoreBatch) {
        pushes += other.pushes
        events += other.events
        delivered += other.delivered
        removals += other.removals
    }
}

/// A push that went down a device's link and was acknowledged before the provider's answer: the
/// common case by far, so its three delivery-log steps travel as one value, without an array of
/// events or a detail string built for each push. Its ``events`` are what the log shows.
public struct DeliveredPush: Sendable, Equatable {
    /// `apns-id`.
    public var apnsID: String
    /// `apns-unique-id` (development only).
    public var uniqueID: String?
    /// The device it went to.
    public var deviceID: String
    /// `apns-topic` as sent.
    public var topic: String
    /// The provider's identifier, for a notification from the legacy binary interface.
    public var binaryIdentifier: UInt32?
    /// When the provider API accepted it.
    public var acceptedAt: Date
    /// When it was written to the device.
    public var deliveredAt: Date
    /// When the device acknowledged it.
    public var acknowledgedAt: Date

    /// Creates a record.
    public init(
        apnsID: String, uniqueID: String?, deviceID: String, topic: String, binaryIdentifier: UInt32? = nil,
        acceptedAt: Date, deliveredAt: Date, acknowledgedAt: Date
    ) {
        self.apnsID = apnsID
        self.uniqueID = uniqueID
        self.deviceID = deviceID
        self.topic = topic
        self.binaryIdentifier = binaryIdentifier
        self.acceptedAt = acceptedAt
        self.deliveredAt = deliveredAt
        self.acknowledgedAt = acknowledgedAt
    }

    /// An accepted event's detail, "device D, topic T[, binary interface identifier N]", built in
    /// one allocation.
    static func acceptedDetail(device: String, topic: String, binaryIdentifier: UInt32?) -> String {
        var detail = ""
        detail.reserveCapacity(16 + device.utf8.count + topic.utf8.count + 40)
        detail += "device "
        detail += device
        detail += ", topic "
        detail += topic
        if let binaryIdentifier {
            detail += ", binary interface identifier "
            detail += String(binaryIdentifier)
        }
        return detail
    }

    /// Its delivery-log steps: accepted, delivered, acknowledged.
    public var events: [DeliveryEvent] {
        [
            DeliveryEvent(
                apnsID: apnsID, uniqueID: uniqueID, kind: .accepted, at: acceptedAt,
                detail: Self.acceptedDetail(device: deviceID, topic: topic, binaryIdentifier: binaryIdentifier)),
            DeliveryEvent(apnsID: apnsID, uniqueID: uniqueID, kind: .delivered, at: deliveredAt),
            DeliveryEvent(apnsID: apnsID, uniqueID: uniqueID, kind: .acknowledged, at: acknowledgedAt),
        ]
    }

    /// ``events`` as ``DeliveryEvent/writeRun(_:to:)`` writes them, straight from the fields.
    func writeRun(to w: inout JSONWriter) {
        w.raw(#"[{"kind":"accepted","at":"#)
        w.integer(Int64((acceptedAt.timeIntervalSince1970 * 1000).rounded()))
        w.raw(#","detail":"device "#)
        w.stringContent(deviceID)
        w.raw(", topic ")
        w.stringContent(topic)
        if let binaryIdentifier {
            w.raw(", binary interface identifier ")
            w.integer(Int64(binaryIdentifier))
        }
        w.raw(#""},{"kind":"delivered","at":"#)
        w.integer(Int64((deliveredAt.timeIntervalSince1970 * 1000).rounded()))
        w.raw(#"},{"kind":"acknowledged","at":"#)
        w.integer(Int64((acknowledgedAt.timeIntervalSince1970 * 1000).rounded()))
        w.raw("}]")
    }
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
}

extension GatewayStore {
    /// Writes a batch in one durable transaction.
    public func commit(_ batch: StoreBatch, policy: OfflinePolicy) async throws -> [String] {
        try await commit(batch, policy: policy, durable: true)
    }
}
