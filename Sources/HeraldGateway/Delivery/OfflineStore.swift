import Foundation
import HeraldCore
import HeraldRuntime
import Logging

/// The offline store as the rest of the gateway uses it: what a push that cannot be delivered now
/// becomes (stored under the offline policy, or discarded), what a device link reads when a device
/// connects and what it reports back (acknowledged, refused, void), and the purge of what expired.
/// Every write goes through the ``GroupCommitter``, and every step is a line in the delivery log;
/// the delivery metrics (delivered, stored, discarded) are counted here, with the line that records
/// the step. (The provider API's answers are counted where they are carried out.)
public final class OfflineStore: Sendable {
    /// The store writer.
    public let committer: GroupCommitter
    /// The store the committer writes to, for reading (what is stored, the delivery log, feedback).
    public var store: any PushStore { committer.store }
    /// The offline policy.
    public var policy: OfflinePolicy { committer.policy }
    let metrics: GatewayMetrics
    let logger: Logger
    /// What devices acknowledged lately, for the test API (when it is on).
    public let received: ReceivedPushes
    /// The policy's ``OfflinePolicy/maximumAge`` and ``OfflinePolicy/defaultAge`` in seconds,
    /// converted once.
    private let maximumAge: TimeInterval
    private let defaultAge: TimeInterval

    /// Creates the offline store over a committer.
    public init(
        committer: GroupCommitter, metrics: GatewayMetrics, received: ReceivedPushes = ReceivedPushes(enabled: false),
        logger: Logger = .silent
    ) {
        self.received = received
        self.committer = committer
        self.metrics = metrics
        self.logger = logger
        self.maximumAge = committer.policy.maximumAge.timeInterval
        self.defaultAge = committer.policy.defaultAge.timeInterval
    }

    /// When a push stored now stops being kept; `nil` = not stored at all.
    public func expiry(of push: AcceptedPush) -> Date? {
        let now = push.receivedAt
        let latest = now.addingTimeInterval(maximumAge)
        guard let expiration = push.expiration else { return now.addingTimeInterval(defaultAge) }
        if expiration == 0 { return nil }
        let date = Date(timeIntervalSince1970: TimeInterval(expiration))
        if date <= now { return nil }
        return min(date, latest)
    }

    /// What is stored for a device and not expired at `now`, oldest first.
    func pending(device: String, now: Date) async throws -> [StoredPush] {
        try await committer.store.pending(device: device, now: now)
    }

    /// What is stored for each of `devices`, in one query.
    func pending(devices: [String], now: Date) async throws -> [String: [StoredPush]] {
        try await committer.store.pending(devices: devices, now: now)
    }

    /// The device acknowledged a push that was in the store: remove it and log both steps.
    func acknowledged(_ push: LinkPush, device: String, deliveredAt: Date, acknowledgedAt: Date) {
        var batch = StoreBatch()
        batch.removals = [(deviceID: device, apnsID: push.apnsID)]
        batch.events = [
            DeliveryEvent(
                apnsID: push.apnsID, uniqueID: push.uniqueID, kind: .delivered, at: deliveredAt,
                detail: AppleDeliveryState.fromStorage),
            DeliveryEvent(apnsID: push.apnsID, uniqueID: push.uniqueID, kind: .acknowledged, at: acknowledgedAt),
        ]
        batch.count(.deliveredFromStorage, topic: push.topic, pushType: push.pushType, at: deliveredAt)
        received.record(
            .init(
                apnsID: push.apnsID, uniqueID: push.uniqueID, deviceID: device, topic: push.topic,
                payload: push.payload,
                deliveredAt: deliveredAt, acknowledgedAt: acknowledgedAt, fromStorage: true))
        committer.submit(batch)
        metrics.delivered(acknowledged: true)
    }

    /// Drops stored pushes whose token became invalid (the app was removed or the device reset).
    func discard(_ pushes: [StoredPush], device: String, at: Date) {
        var batch = StoreBatch()
        batch.removals = pushes.map { (deviceID: device, apnsID: $0.apnsID) }
        batch.events = pushes.map {
            DeliveryEvent(
                apnsID: $0.apnsID, uniqueID: $0.uniqueID, kind: .discarded, at: at,
                detail: "its token was invalidated (app removed or device reset) before delivery")
        }
        for push in pushes {
            batch.count(.discardedTokenUnregisteredFromStorage, topic: push.topic, pushType: push.pushType, at: at)
        }
        committer.submit(batch)
    }

    /// The device refused a push it had acknowledged (its app is not installed, say): a line in the
    /// delivery log.
    /// `refusal` is what the link knew of the push it had acknowledged (its topic, whether it came
    /// from the store), when it still did: then it is counted in Apple's states too.
    func refused(_ apnsID: String, device: String, reason: String, at: Date, refusal: LinkRefusal? = nil) {
        var detail = "device \(device): \(reason)"
        if refusal?.fromStorage == true { detail += " (\(AppleDeliveryState.fromStorage))" }
        let event = DeliveryEvent(
            apnsID: apnsID, uniqueID: refusal?.uniqueID, kind: .refused, at: at, detail: detail)
        guard let refusal, let state = AppleDeliveryState(event) else {
            log([event])
            return
        }
        var batch = StoreBatch()
        batch.events = [event]
        batch.count(state, topic: refusal.topic, pushType: refusal.pushType, at: at)
        committer.submit(batch)
    }

    /// A push the provider API refused: a `rejected` line in the delivery log, saying why (the
    /// reason and, when the gateway knows more, the cause), with what it was for.
    func logRejected(_ response: ProviderResponse, _ refused: RefusedPush) {
        log([
            DeliveryEvent(
                apnsID: response.apnsID, uniqueID: nil, kind: .rejected, at: refused.at,
                detail: RejectedDetail(response: response, refused: refused).text)
        ])
    }

    /// A delivered push's lines for the delivery log; nobody waits for them.
    func logDelivered(_ delivered: consuming DeliveredPush) {
        if !committer.submitLog(consume delivered) { metrics.logLinesDropped(3) }
        metrics.delivered(acknowledged: true)
    }

    /// Log lines nobody waits for, through the committer; those it drops, the store being too far
    /// behind (``GroupCommitter/Limits/logLines``), are counted.
    func log(_ events: [DeliveryEvent]) {
        if !committer.submitLog(events) { metrics.logLinesDropped(events.count) }
    }

    /// Deletes expired pushes from the offline store and logs each as discarded; returns how many.
    @discardableResult
    public func purgeExpired(now: Date) async throws -> Int {
        let expired = try await committer.store.purgeExpired(now: now)
        if expired.isEmpty { return 0 }
        var batch = StoreBatch()
        batch.events = expired.map {
            DeliveryEvent(
                apnsID: $0.apnsID, uniqueID: $0.uniqueID, kind: .discarded, at: now,
                detail: "expired in the offline store")
        }
        for push in expired { batch.count(.discardedExpired, topic: push.topic, pushType: push.pushType, at: now) }
        _ = try await committer.commit(batch)
        logger.info("purged expired pushes", metadata: ["count": "\(expired.count)"])
        return expired.count
    }

    private func accepted(_ push: AcceptedPush) -> DeliveryEvent {
        DeliveryEvent(
            apnsID: push.apnsID, uniqueID: push.uniqueID, kind: .accepted, at: push.receivedAt,
            detail: DeliveredPush.acceptedDetail(
                device: push.registration.deviceID, topic: push.topic, binaryIdentifier: push.binaryIdentifier))
    }

    private func event(_ push: AcceptedPush, _ kind: DeliveryEvent.Kind, _ at: Date, _ detail: String? = nil)
        -> DeliveryEvent
    {
        DeliveryEvent(apnsID: push.apnsID, uniqueID: push.uniqueID, kind: kind, at: at, detail: detail)
    }

    /// Why a push is stored rather than delivered now.
    enum Why: Sendable {
        /// No link has the device, or the device did not acknowledge it in time (`deliveredAt`).
        case unreached
        /// The link's QoS holds it (priority 5 or 1, or the background budget).
        case held
        /// The device's link is backed up: the device has not read what was written to it.
        case backedUp
    }

    /// Stores a push under the offline policy (or, with no expiry, discards it) and answers 200
    /// once that is durable.
    func keep(
        _ push: AcceptedPush, expiresAt: Date?, deliveredAt: Date?, why: Why = .unreached,
        respond: @escaping @Sendable (ProviderResponse) -> Void,
        whenStored: @escaping @Sendable (StoredPush) -> Void
    ) {
        if deliveredAt != nil { metrics.delivered(acknowledged: false) }
        let ok = ProviderResponse.ok(apnsID: push.apnsID, uniqueID: push.uniqueID)
        var batch = StoreBatch()
        batch.events = [accepted(push)]
        batch.count(.received, topic: push.topic, pushType: push.pushType, at: push.receivedAt)
        for warning in push.warnings { batch.events.append(event(push, .warning, push.receivedAt, warning.rawValue)) }
        if let deliveredAt {
            batch.events.append(event(push, .delivered, deliveredAt, "not acknowledged in time"))
        }
        guard let expiresAt else {
            // One attempt only, and it did not reach the device: APNs discards it and still answers 200.
            batch.events.append(
                event(
                    push, .discarded, push.receivedAt,
                    why == .backedUp
                        ? "expiration 0 or past and the device's link is backed up"
                        : deliveredAt == nil
                            ? "expiration 0 or past and the device is offline"
                            : "expiration 0 or past and the device did not acknowledge it"))
            batch.count(.discardedExpired, topic: push.topic, pushType: push.pushType, at: push.receivedAt)
            // The 200 waits for this line to be durable: after a crash, the delivery log still says
            // what became of every push answered 200 (it is rare: the device was not connected).
            let logger = self.logger
            let admitted = committer.submitIfRoom(batch, bytes: 0) { result in
                if case .failure(let error) = result {
                    logger.error(
                        "delivery log write failed", metadata: ["error": "\(error)", "apns-id": "\(push.apnsID)"])
                }
                respond(ok)
            }
            metrics.discarded()
            if !admitted {
                // The store is too far behind to take the line. APNs discards such a push and
                // answers 200 all the same, and so does the gateway, without its lines in the
                // delivery log (counted as dropped).
                metrics.logLinesDropped(batch.events.count)
                respond(ok)
            }
            return
        }
        let stored = StoredPush(
            apnsID: push.apnsID, uniqueID: push.uniqueID, deviceID: push.registration.deviceID,
            token: push.registration.token, environment: push.registration.environment, topic: push.topic,
            pushType: push.pushType, priority: push.priority, collapseID: push.collapseID,
            expiration: push.expiration, expiresAt: expiresAt, receivedAt: push.receivedAt,
            payload: push.payload.withUnsafeReadableBytes { Data($0) }, contentAvailable: push.contentAvailable,
            registeredAt: push.registration.registeredAt)
        batch.pushes = [stored]
        let because =
            switch why {
            case .held: AppleDeliveryState.heldForPower + " (priority 5 or 1, or the background budget)"
            case .backedUp: "the device's link is backed up (the device is not reading what was sent to it)"
            case .unreached:
                deliveredAt == nil ? "the device is offline" : "the device did not acknowledge it in time"
            }
        batch.events.append(
            event(
                push, .stored, push.receivedAt,
                "until \(Int64(expiresAt.timeIntervalSince1970)) (UNIX seconds); \(because)"))
        batch.count(
            why == .held ? .storedPowerConsiderations : .storedDeviceOffline, topic: push.topic,
            pushType: push.pushType, at: push.receivedAt)
        let logger = self.logger
        let metrics = self.metrics
        let admitted = committer.submitIfRoom(batch, bytes: stored.payload.count) { result in
            switch result {
            case .success(let replaced):
                metrics.stored()
                respond(ok)
                // Not pushed out by a newer one in the same commit: the router offers it to the
                // device's link, in case the device connected meanwhile.
                if !replaced.contains(stored.apnsID) { whenStored(stored) }
            case .failure(let error):
                logger.error("store write failed", metadata: ["error": "\(error)", "apns-id": "\(push.apnsID)"])
                respond(.error(.serviceUnavailable, apnsID: push.apnsID))
            }
        }
        if !admitted { respond(Self.storeBehind(push)) }
    }

    /// The answer to a push that must be stored while the store is too far behind to take it
    /// (``GroupCommitter/Limits``): 503, as APNs answers when it cannot take a push now; the
    /// provider sends it again later. Nothing of it is kept, not even its log line.
    static func storeBehind(_ push: AcceptedPush) -> ProviderResponse {
        .error(.serviceUnavailable, apnsID: push.apnsID)
    }
}

/// What a device link remembers of a push it had acknowledged when the device then refuses it.
public struct LinkRefusal: Sendable, Equatable {
    /// `apns-topic`.
    public var topic: String
    /// Its push type (which says whether the topic carries a suffix).
    public var pushType: PushType
    /// Whether it was delivered from the offline store.
    public var fromStorage: Bool
    /// Its `apns-unique-id`: the refusal's line carries it, so that the history shows the refusal as
    /// a step of its push (the history groups a push's lines by it).
    public var uniqueID: String? = nil
}
