import Foundation
import HeraldCore
import Logging
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
        mutating func addLog(_ delivered: consuming DeliveredPush, threshold: Int) -> Bool {
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

    let store: any PushStore
    let policy: OfflinePolicy
    /// How many log lines may wait for a group of their own; 0 writes each at once.
    let logBatch: Int
    /// Told of each group once written (its counts of Apple's states, ``StoreBatch/counts``, are then
    /// complete).
    let committed: (@Sendable (StoreBatch) -> Void)?
    /// Signalled after each group written: what the test API's long polls wait on.
    public let commits = CommitSignal()
    /// The devices that may have pushes stored: every batch's pushes are added before it is written.
    public let storedDevices: StoredDevices
    private let state = Mutex(State())

    /// Creates a committer over a store; `committed` hears of every group written. The pushes of
    /// every batch go into `storedDevices` before they are written.
    public init(
        store: any PushStore, policy: OfflinePolicy, logBatch: Int = 0,
        committed: (@Sendable (StoreBatch) -> Void)? = nil, storedDevices: StoredDevices = StoredDevices()
    ) {
        self.storedDevices = storedDevices
        self.store = store
        self.policy = policy
        self.logBatch = logBatch
        self.committed = committed
    }

    /// Queues a batch; `completion` runs once it is durable (with the `apns-id`s the policy replaced).
    public func submit(_ batch: StoreBatch, completion: (@Sendable (Result<[String], any Error>) -> Void)? = nil) {
        if !batch.pushes.isEmpty { storedDevices.storing(batch.pushes.lazy.map(\.deviceID)) }
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
    public func submitLog(_ delivered: consuming DeliveredPush) {
        // Taken into the lock rather than captured: a capture would be copied (a retain of each string).
        var pending = Optional(consume delivered)
        let start = state.withLock { $0.addLog(pending.take()!, threshold: logBatch) }
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
            merged.tallyDelivered()
            let result: Result<[String], any Error>
            do {
                result = .success(try await store.commit(merged, policy: policy, durable: durable))
                committed?(merged)
                commits.signal()
            } catch {
                result = .failure(error)
            }
            if !merged.pushes.isEmpty { storedDevices.settled(merged.pushes.lazy.map(\.deviceID)) }
            // (What the policy pushed out was logged by the store, in the same transaction.)
            for item in items { item.completion?(result) }
        }
    }
}
