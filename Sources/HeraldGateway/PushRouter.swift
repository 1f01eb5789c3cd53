import Foundation
import HeraldCore
import Logging
import NIOCore
import Synchronization

/// Commits store batches in groups: while one transaction is being written, everything that
/// arrives waits and goes into the next one together. One fsync then covers many pushes, and a
/// lone push waits for one transaction only.
public final class GroupCommitter: Sendable {
    struct Pending {
        var batch: StoreBatch
        var completion: (@Sendable (Result<[String], any Error>) -> Void)?
    }
    struct State {
        var queue: [Pending] = []
        var running = false
    }

    let store: any GatewayStore
    let policy: OfflinePolicy
    let now: @Sendable () -> Date
    private let state = Mutex(State())

    /// Creates a committer over a store; `now` stamps the log entries it writes itself.
    public init(store: any GatewayStore, policy: OfflinePolicy, now: @escaping @Sendable () -> Date = { Date() }) {
        self.store = store
        self.policy = policy
        self.now = now
    }

    /// Queues a batch; `completion` runs once it is durable (with the `apns-id`s the policy replaced).
    public func submit(_ batch: StoreBatch, completion: (@Sendable (Result<[String], any Error>) -> Void)? = nil) {
        let start = state.withLock { s in
            s.queue.append(Pending(batch: batch, completion: completion))
            if s.running { return false }
            s.running = true
            return true
        }
        if start { Task { await self.drain() } }
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
            var merged = StoreBatch()
            for item in items { merged.append(item.batch) }
            let result: Result<[String], any Error>
            do {
                result = .success(try await store.commit(merged, policy: policy))
            } catch {
                result = .failure(error)
            }
            for item in items { item.completion?(result) }
            if case .success(let replaced) = result, !replaced.isEmpty {
                // Log what the policy pushed out; this rides in the next transaction.
                var log = StoreBatch()
                log.events = replaced.map {
                    DeliveryEvent(
                        apnsID: $0, uniqueID: nil, kind: .replaced, at: now(),
                        detail: "a newer push for the same device and topic (or collapse id) replaced it")
                }
                state.withLock { $0.queue.append(Pending(batch: log, completion: nil)) }
            }
        }
    }
}

/// Routes accepted pushes under the QoS policy (spec/APNS.md §5): a push for a device that is
/// not connected is stored, newest per (device, topic) by default, until its expiration;
/// expiration 0 (or a time already past) is never stored. The 200 goes out only once the push is
/// durable (or, for a push the policy does not keep, at once).
public final class PushRouter: Sendable {
    /// The store writer.
    public let committer: GroupCommitter
    /// The offline policy.
    public let policy: OfflinePolicy
    let logger: Logger

    /// Creates a router.
    public init(committer: GroupCommitter, logger: Logger = Logger(label: "herald.router")) {
        self.committer = committer
        self.policy = committer.policy
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
        let ok = ProviderResponse.ok(apnsID: push.apnsID, uniqueID: push.uniqueID)
        let accepted = DeliveryEvent(
            apnsID: push.apnsID, uniqueID: push.uniqueID, kind: .accepted, at: push.receivedAt,
            detail: "device \(push.registration.deviceID), topic \(push.topic)")
        guard let expiresAt = expiry(of: push) else {
            // One attempt only, and the device is not connected: APNs discards it and still answers 200.
            var batch = StoreBatch()
            batch.events = [
                accepted,
                DeliveryEvent(
                    apnsID: push.apnsID, uniqueID: push.uniqueID, kind: .discarded, at: push.receivedAt,
                    detail: "expiration 0 or past and the device is offline"),
            ]
            committer.submit(batch)
            respond(ok)
            return
        }
        var batch = StoreBatch()
        batch.pushes = [
            StoredPush(
                apnsID: push.apnsID, uniqueID: push.uniqueID, deviceID: push.registration.deviceID,
                token: push.registration.token, environment: push.registration.environment, topic: push.topic,
                pushType: push.pushType, priority: push.priority, collapseID: push.collapseID, expiresAt: expiresAt,
                receivedAt: push.receivedAt, payload: Data(push.payload.readableBytesView),
                contentAvailable: push.contentAvailable)
        ]
        batch.events = [
            accepted,
            DeliveryEvent(
                apnsID: push.apnsID, uniqueID: push.uniqueID, kind: .stored, at: push.receivedAt,
                detail: "until \(Int64(expiresAt.timeIntervalSince1970)) (UNIX seconds)"),
        ]
        let logger = self.logger
        committer.submit(batch) { result in
            switch result {
            case .success:
                respond(ok)
            case .failure(let error):
                logger.error("store write failed", metadata: ["error": "\(error)", "apns-id": "\(push.apnsID)"])
                respond(.error(.serviceUnavailable, apnsID: push.apnsID))
            }
        }
    }
}

extension PushRouter {
    /// Carries out a provider API decision for a transport: answers at once, after an injected
    /// delay, or once the push is delivered or stored. `answer` always runs on `loop` (at once,
    /// inside this call, for an immediate answer), so a channel handler can write from it.
    func carryOut(
        _ decision: ProviderAPI.Decision, on loop: any EventLoop, answer: @escaping (ProviderResponse) -> Void
    ) {
        switch decision {
        case .respond(let response, nil):
            answer(response)
        case .respond(let response, let delay?):
            loop.assumeIsolated().scheduleTask(in: delay) { answer(response) }
        case .accept(let push, let delay):
            let bound = NIOLoopBound(answer, eventLoop: loop)
            let route: @Sendable () -> Void = { [self] in
                self.route(push) { response in loop.execute { bound.value(response) } }
            }
            if let delay { loop.scheduleTask(in: delay) { route() } } else { route() }
        }
    }
}
