import Foundation
import HeraldCore
import Logging
import NIOCore
import Synchronization

/// Commits store batches in groups: while one transaction is being written, everything that
/// arrives waits and goes into the next one together. One fsync then covers many pushes, and a
/// lone push waits for one transaction only.
///
/// Log lines nobody waits for (``submitLog(_:)``) may also linger: with a `logBatch` above zero
/// they wait until that many are queued, a durable batch comes along, or ``flushLog()`` (the
/// gateway calls it every 100 ms). Writing them in big groups costs far less per line than a
/// transaction each, and the promise is about pushes, not their log.
public final class GroupCommitter: Sendable {
    struct Pending {
        var batch: StoreBatch
        var completion: (@Sendable (Result<[String], any Error>) -> Void)?
    }
    struct State {
        var queue: [Pending] = []
        var lingering = StoreBatch()
        var running = false

        /// Moves the lingering log into the queue; whether a drain should start.
        mutating func releaseLog() -> Bool {
            if !lingering.isEmpty {
                queue.append(Pending(batch: lingering, completion: nil))
                lingering = StoreBatch()
            }
            return startIfIdle()
        }

        /// Adds log lines to the lingering ones, releasing them once there are `threshold`;
        /// whether a drain should start.
        mutating func addLog(_ events: [DeliveryEvent], threshold: Int) -> Bool {
            lingering.events += events
            return lingeringLines >= threshold ? releaseLog() : false
        }

        /// ``addLog(_:threshold:)`` for a delivered push (three lines).
        mutating func addLog(_ delivered: DeliveredPush, threshold: Int) -> Bool {
            lingering.delivered.append(delivered)
            return lingeringLines >= threshold ? releaseLog() : false
        }

        var lingeringLines: Int { lingering.events.count + 3 * lingering.delivered.count }

        mutating func startIfIdle() -> Bool {
            if running || queue.isEmpty { return false }
            running = true
            return true
        }
    }

    let store: any GatewayStore
    let policy: OfflinePolicy
    let now: @Sendable () -> Date
    /// How many log lines may wait for a group of their own; 0 writes each at once.
    let logBatch: Int
    private let state = Mutex(State())

    /// Creates a committer over a store; `now` stamps the log entries it writes itself.
    public init(
        store: any GatewayStore, policy: OfflinePolicy, logBatch: Int = 0,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.policy = policy
        self.logBatch = logBatch
        self.now = now
    }

    /// Queues a batch; `completion` runs once it is durable (with the `apns-id`s the policy replaced).
    public func submit(_ batch: StoreBatch, completion: (@Sendable (Result<[String], any Error>) -> Void)? = nil) {
        let start = state.withLock { s in
            s.queue.append(Pending(batch: batch, completion: completion))
            return s.releaseLog()
        }
        if start { Task { await self.drain() } }
    }

    /// Queues delivery-log events nobody waits for; they may linger (see the type's notes).
    public func submitLog(_ events: [DeliveryEvent]) {
        let start = state.withLock { $0.addLog(events, threshold: logBatch) }
        if start { Task { await self.drain() } }
    }

    /// Queues the log lines of a push delivered and acknowledged at once; they may linger too.
    public func submitLog(_ delivered: DeliveredPush) {
        let start = state.withLock { $0.addLog(delivered, threshold: logBatch) }
        if start { Task { await self.drain() } }
    }

    /// Starts writing the lingering log lines now.
    public func flushLog() {
        if state.withLock({ $0.releaseLog() }) { Task { await self.drain() } }
    }

    /// Queues a batch and waits until it is durable.
    public func commit(_ batch: StoreBatch) async throws -> [String] {
        try await withCheckedThrowingContinuation { continuation in
            submit(batch) { continuation.resume(with: $0) }
        }
    }

    private func drain() async {
        while true {
            let items = state.withLock { s -> [Pending] in
                let items = s.queue
                s.queue = []
                if items.isEmpty { s.running = false }
                return items
            }
            if items.isEmpty { return }
            var merged: StoreBatch
            if items.count == 1 {
                merged = items[0].batch
            } else {
                merged = StoreBatch()
                for item in items { merged.append(item.batch) }
            }
            // Log lines nobody waits for (a delivered push's accepted → delivered → acknowledged)
            // need not be forced to disk: the promise is about pushes, not their log.
            let durable =
                !merged.pushes.isEmpty || !merged.removals.isEmpty || items.contains { $0.completion != nil }
            let result: Result<[String], any Error>
            do {
                result = .success(try await store.commit(merged, policy: policy, durable: durable))
            } catch {
                result = .failure(error)
            }
            // (What the policy pushed out was logged by the store, in the same transaction.)
            for item in items { item.completion?(result) }
        }
    }
}

/// Routes accepted pushes (spec/APNS.md §5, docs/device-link.md). A push for a connected device
/// goes down its link, and the provider's 200 waits for the device's acknowledgement. A push the
/// link cannot deliver at once (the device is offline, does not acknowledge in time, or the QoS
/// holds it back) is stored under the offline policy, newest per (device, topic) by default,
/// until its expiration, and the 200 waits for the store's commit. Expiration 0 (or a time
/// already past) is never stored.
public final class PushRouter: Sendable {
    /// The store writer.
    public let committer: GroupCommitter
    /// The offline policy.
    public let policy: OfflinePolicy
    /// The connected devices.
    public let links: DeviceLinks
    /// The gateway's counters.
    public let metrics: GatewayMetrics
    let logger: Logger

    /// Creates a router.
    public init(
        committer: GroupCommitter, links: DeviceLinks = DeviceLinks(), metrics: GatewayMetrics = GatewayMetrics(),
        logger: Logger = Logger(label: "herald.router")
    ) {
        self.committer = committer
        self.policy = committer.policy
        self.links = links
        self.metrics = metrics
        self.logger = logger
    }

    /// When a push stored now stops being kept; `nil` = not stored at all.
    public func expiry(of push: AcceptedPush) -> Date? {
        let now = push.receivedAt
        let latest = now.addingTimeInterval(policy.maximumAge)
        guard let expiration = push.expiration else { return now.addingTimeInterval(policy.defaultAge) }
        if expiration == 0 { return nil }
        let date = Date(timeIntervalSince1970: TimeInterval(expiration))
        if date <= now { return nil }
        return min(date, latest)
    }

    /// Routes a push; `respond` receives the provider's answer.
    public func route(_ push: AcceptedPush, respond: @escaping @Sendable (ProviderResponse) -> Void) {
        let expiresAt = expiry(of: push)
        let offer = LinkOffer(push: push.linkPush, expiresAt: expiresAt, background: push.pushType == .background)
        let offered = links.offer(offer, to: push.registration.deviceID) { [self] outcome in
            switch outcome {
            case .acknowledged(let deliveredAt, let acknowledgedAt):
                // The device has it: the 200 need not wait for the log.
                committer.submitLog(
                    DeliveredPush(
                        apnsID: push.apnsID, uniqueID: push.uniqueID, deviceID: push.registration.deviceID,
                        topic: push.topic, binaryIdentifier: push.binaryIdentifier, acceptedAt: push.receivedAt,
                        deliveredAt: deliveredAt, acknowledgedAt: acknowledgedAt))
                metrics.delivered(acknowledged: true)
                respond(.ok(apnsID: push.apnsID, uniqueID: push.uniqueID))
            case .notAcknowledged(let deliveredAt):
                if deliveredAt != nil { metrics.delivered(acknowledged: false) }
                keep(push, expiresAt: expiresAt, deliveredAt: deliveredAt, respond: respond)
            case .hold:
                keep(push, expiresAt: expiresAt, deliveredAt: nil, respond: respond)
            }
        }
        if !offered { keep(push, expiresAt: expiresAt, deliveredAt: nil, respond: respond) }
    }

    /// The device acknowledged a push that was in the store: remove it and log both steps.
    func acknowledgedStored(_ push: LinkPush, device: String, deliveredAt: Date, acknowledgedAt: Date) {
        var batch = StoreBatch()
        batch.removals = [(deviceID: device, apnsID: push.apnsID)]
        batch.events = [
            DeliveryEvent(
                apnsID: push.apnsID, uniqueID: push.uniqueID, kind: .delivered, at: deliveredAt,
                detail: "from the offline store"),
            DeliveryEvent(apnsID: push.apnsID, uniqueID: push.uniqueID, kind: .acknowledged, at: acknowledgedAt),
        ]
        committer.submit(batch)
        metrics.delivered(acknowledged: true)
    }

    /// Drops stored pushes whose token became invalid (the app was removed or the device reset).
    func discardStored(_ pushes: [StoredPush], device: String, at: Date) {
        var batch = StoreBatch()
        batch.removals = pushes.map { (deviceID: device, apnsID: $0.apnsID) }
        batch.events = pushes.map {
            DeliveryEvent(
                apnsID: $0.apnsID, uniqueID: $0.uniqueID, kind: .discarded, at: at,
                detail: "its token was invalidated (app removed or device reset) before delivery")
        }
        committer.submit(batch)
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

    /// Stores a push under the offline policy (or, with no expiry, discards it) and answers 200
    /// once that is durable.
    private func keep(
        _ push: AcceptedPush, expiresAt: Date?, deliveredAt: Date?,
        respond: @escaping @Sendable (ProviderResponse) -> Void
    ) {
        let ok = ProviderResponse.ok(apnsID: push.apnsID, uniqueID: push.uniqueID)
        var batch = StoreBatch()
        batch.events = [accepted(push)]
        if let deliveredAt {
            batch.events.append(event(push, .delivered, deliveredAt, "not acknowledged in time"))
        }
        guard let expiresAt else {
            // One attempt only, and it did not reach the device: APNs discards it and still answers 200.
            batch.events.append(
                event(
                    push, .discarded, push.receivedAt,
                    deliveredAt == nil
                        ? "expiration 0 or past and the device is offline"
                        : "expiration 0 or past and the device did not acknowledge it"))
            // The 200 waits for this line to be durable: after a crash, the delivery log still says
            // what became of every push answered 200 (it is rare: the device was not connected).
            metrics.discarded()
            let logger = self.logger
            committer.submit(batch) { result in
                if case .failure(let error) = result {
                    logger.error(
                        "delivery log write failed", metadata: ["error": "\(error)", "apns-id": "\(push.apnsID)"])
                }
                respond(ok)
            }
            return
        }
        let stored = StoredPush(
            apnsID: push.apnsID, uniqueID: push.uniqueID, deviceID: push.registration.deviceID,
            token: push.registration.token, environment: push.registration.environment, topic: push.topic,
            pushType: push.pushType, priority: push.priority, collapseID: push.collapseID,
            expiration: push.expiration, expiresAt: expiresAt, receivedAt: push.receivedAt,
            payload: Data(push.payload.readableBytesView), contentAvailable: push.contentAvailable)
        batch.pushes = [stored]
        batch.events.append(
            event(push, .stored, push.receivedAt, "until \(Int64(expiresAt.timeIntervalSince1970)) (UNIX seconds)"))
        let logger = self.logger
        let metrics = self.metrics
        let links = self.links
        committer.submit(batch) { result in
            switch result {
            case .success(let replaced):
                metrics.stored()
                respond(ok)
                // If the device is connected now (it came online after the push found no link, and
                // its link may have read the store before this commit), its link sends the push.
                if !replaced.contains(stored.apnsID) { links.offerStored([stored], to: stored.deviceID) }
            case .failure(let error):
                logger.error("store write failed", metadata: ["error": "\(error)", "apns-id": "\(push.apnsID)"])
                respond(.error(.serviceUnavailable, apnsID: push.apnsID))
            }
        }
    }
}

extension AcceptedPush {
    /// The push as it goes down the device link.
    var linkPush: LinkPush {
        LinkPush(
            apnsID: apnsID, uniqueID: uniqueID, topic: topic, token: registration.token,
            environment: registration.environment, pushType: pushType, priority: priority, expiration: expiration,
            collapseID: collapseID, payload: Data(payload.readableBytesView))
    }
}

extension PushRouter {
    /// Counts an answer, and logs why it was given when the provider API left a note (a body that
    /// is no JSON object, say): the client sees only the reason.
    func answered(_ response: ProviderResponse, after elapsed: TimeAmount) {
        if let note = response.note {
            logger.notice(
                "provider request refused",
                metadata: [
                    "apns-id": "\(response.apnsID)", "reason": "\(response.reason?.rawValue ?? "\(response.status)")",
                    "why": "\(note)",
                ])
        }
        metrics.answered(response, after: elapsed)
    }

    /// Carries out a provider API decision for a transport: answers at once, after an injected
    /// delay, or once the push is delivered or stored. `answer` always runs on `loop` (at once,
    /// inside this call, for an immediate answer), so a channel handler can write from it.
    func carryOut(
        _ decision: ProviderAPI.Decision, on loop: any EventLoop, answer: @escaping (ProviderResponse) -> Void
    ) {
        let start = NIODeadline.now()
        let metrics = self.metrics
        switch decision {
        case .respond(let response, nil):
            answered(response, after: .zero)
            answer(response)
        case .respond(let response, let delay?):
            loop.assumeIsolated().scheduleTask(in: delay) { [self] in
                answered(response, after: .now() - start)
                answer(response)
            }
        case .accept(let push, let delay):
            let bound = NIOLoopBound(answer, eventLoop: loop)
            // One closure per push carries the answer back to the connection's loop (and counts it).
            let respond: @Sendable (ProviderResponse) -> Void = { response in
                metrics.answered(response, after: .now() - start)
                if loop.inEventLoop { bound.value(response) } else { loop.execute { bound.value(response) } }
            }
            if let delay {
                loop.scheduleTask(in: delay) { [self] in route(push, respond: respond) }
            } else {
                route(push, respond: respond)
            }
        }
    }
}
