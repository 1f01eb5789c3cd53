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
///
/// What waits is bounded (``Limits``): a provider's push that must be stored is admitted only while
/// the pushes and bytes waiting are under their limits (``submitIfRoom(_:bytes:completion:)``; the
/// gateway answers the others 503 at once), and log lines nobody waits for past theirs are dropped
/// and counted. What a device reports (acknowledgements, removals) is always taken: it is how the
/// store empties. Each stretch over a limit is told to ``overload`` when it begins and when it ends.
public final class GroupCommitter: Sendable {
    /// How much may wait for the store (queued or being written) at once; 0: no limit.
    public struct Limits: Sendable, Equatable {
        /// Provider requests whose answer waits for the store (a push to store for a device that
        /// is offline or did not acknowledge in time, or the line of one discarded).
        public var requests = 50_000
        /// The payload bytes of the pushes among them.
        public var bytes = 64 << 20
        /// Delivery-log lines nobody waits for (a delivered push counts three).
        public var logLines = 300_000

        /// The defaults: 50,000 requests, 64 MiB of payloads, 300,000 log lines.
        public init() {}

        /// No limits.
        public static let none: Limits = {
            var limits = Limits()
            (limits.requests, limits.bytes, limits.logLines) = (0, 0, 0)
            return limits
        }()
    }

    /// A stretch of time over a limit, as told to ``overload``.
    public enum Overload: Sendable, Equatable {
        /// A request was refused or a log line dropped, the first since the last stretch ended.
        /// (Requests are taken again as soon as there is room; the stretch ends later.)
        case began
        /// The queue fell back to half of every limit; how many requests were not taken meanwhile
        /// (answered 503, or 200 for a push that was only to be discarded) and log lines dropped.
        case ended(refusedRequests: Int, droppedLogLines: Int)
    }

    struct Pending {
        var batch: StoreBatch
        var completion: (@Sendable (Result<[String], any Error>) -> Void)?
        /// What this item counts against the limits, given back once it is written.
        var cost = Cost()
    }

    /// What an item holds of the limits.
    struct Cost {
        var requests = 0
        var bytes = 0
        var logLines = 0

        static func += (a: inout Cost, b: Cost) {
            a.requests += b.requests
            a.bytes += b.bytes
            a.logLines += b.logLines
        }

        static func -= (a: inout Cost, b: Cost) {
            a.requests -= b.requests
            a.bytes -= b.bytes
            a.logLines -= b.logLines
        }
    }

    struct State {
        var queue: [Pending] = []
        var lingering = StoreBatch()
        /// The log lines in ``lingering``, counted against ``Limits/logLines``.
        var lingeringLogLines = 0
        var running = false
        /// Everything admitted and not yet written (queued, lingering or being written).
        var held = Cost()
        /// Whether a stretch over a limit has begun and not ended; what it refused and dropped.
        var overloaded = false
        var refusedRequests = 0
        var droppedLogLines = 0

        /// Moves the lingering log into the queue; whether a drain should start.
        mutating func releaseLog() -> Bool {
            if !lingering.isEmpty {
                queue.append(Pending(batch: lingering, completion: nil, cost: Cost(logLines: lingeringLogLines)))
                lingering = StoreBatch()
                lingeringLogLines = 0
            }
            return startIfIdle()
        }

        /// Adds log lines to the lingering ones, releasing them once there are `threshold`;
        /// whether a drain should start.
        mutating func addLog(_ events: [DeliveryEvent], threshold: Int) -> Bool {
            lingering.events += events
            lingeringLogLines += events.count
            held.logLines += events.count
            return lingeringLines >= threshold ? releaseLog() : false
        }

        /// ``addLog(_:threshold:)`` for a delivered push (three lines).
        mutating func addLog(_ delivered: consuming DeliveredPush, threshold: Int) -> Bool {
            lingering.delivered.append(delivered)
            lingeringLogLines += 3
            held.logLines += 3
            return lingeringLines >= threshold ? releaseLog() : false
        }

        /// Whether `lines` more log lines stay within `limits`; if not they are counted as dropped,
        /// and the result says whether that began a stretch over the limits.
        mutating func admitLog(_ lines: Int, limits: Limits) -> (admitted: Bool, began: Bool) {
            // As for requests, lines are always taken when none waits.
            guard limits.logLines > 0, held.logLines > 0, held.logLines + lines > limits.logLines else {
                return (true, false)
            }
            droppedLogLines += lines
            return (false, beginOverload())
        }

        /// Whether a request of `bytes` stays within `limits` (one is always admitted when none
        /// waits, so that no limit refuses everything); if not it is counted as refused, and the
        /// result says whether that began a stretch over the limits.
        mutating func admitRequest(bytes: Int, limits: Limits) -> (admitted: Bool, began: Bool) {
            let over =
                held.requests > 0
                && (limits.requests > 0 && held.requests + 1 > limits.requests
                    || limits.bytes > 0 && held.bytes + bytes > limits.bytes)
            guard over else { return (true, false) }
            refusedRequests += 1
            return (false, beginOverload())
        }

        private mutating func beginOverload() -> Bool {
            if overloaded { return false }
            overloaded = true
            return true
        }

        /// Gives back what written items held; the end of a stretch over the limits, if this is it
        /// (everything back to half of its limit).
        mutating func written(_ cost: Cost, limits: Limits) -> Overload? {
            held -= cost
            func halfOrLess(_ held: Int, of limit: Int) -> Bool { limit == 0 || 2 * held <= limit }
            guard overloaded, halfOrLess(held.requests, of: limits.requests), halfOrLess(held.bytes, of: limits.bytes),
                halfOrLess(held.logLines, of: limits.logLines)
            else { return nil }
            defer { (overloaded, refusedRequests, droppedLogLines) = (false, 0, 0) }
            return .ended(refusedRequests: refusedRequests, droppedLogLines: droppedLogLines)
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
    /// How much may wait for the store.
    public let limits: Limits
    /// Told when a stretch over the limits begins and ends (the gateway logs both). It is called
    /// with the committer's lock held, so that the two come in order; it must not call the
    /// committer.
    let overload: (@Sendable (Overload) -> Void)?
    /// Signalled after each group written: what the test API's long polls wait on.
    public let commits = CommitSignal()
    /// The devices that may have pushes stored: every batch's pushes are added before it is written.
    public let storedDevices: StoredDevices
    private let state = Mutex(State())

    /// Creates a committer over a store; `committed` hears of every group written, `overload` of
    /// each stretch over `limits`. The pushes of every batch go into `storedDevices` before they are
    /// written.
    public init(
        store: any PushStore, policy: OfflinePolicy, logBatch: Int = 0, limits: Limits = Limits(),
        committed: (@Sendable (StoreBatch) -> Void)? = nil, overload: (@Sendable (Overload) -> Void)? = nil,
        storedDevices: StoredDevices = StoredDevices()
    ) {
        self.limits = limits
        self.overload = overload
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

    /// Queues a provider's request that waits for the store (a push to store, `bytes` of payload,
    /// or the line of one discarded) if it stays within ``limits``; `completion` runs once it is
    /// durable. Returns `false`, queueing nothing and never calling `completion`, when the store is
    /// that far behind: the caller answers the provider at once.
    public func submitIfRoom(
        _ batch: StoreBatch, bytes: Int, completion: @escaping @Sendable (Result<[String], any Error>) -> Void
    ) -> Bool {
        let cost = Cost(requests: 1, bytes: bytes)
        // Its place is taken first; then its devices are marked as storing, before it is queued
        // (a drain could write it and settle them at once), as `submit` does.
        let admitted = state.withLock { s -> Bool in
            let (admitted, began) = s.admitRequest(bytes: bytes, limits: limits)
            if began { overload?(.began) }
            if admitted { s.held += cost }
            return admitted
        }
        guard admitted else { return false }
        if !batch.pushes.isEmpty { storedDevices.storing(batch.pushes.lazy.map(\.deviceID)) }
        let start = state.withLock { s in
            s.queue.append(Pending(batch: batch, completion: completion, cost: cost))
            return s.releaseLog()
        }
        if start { Task { await self.drain() } }
        return true
    }

    /// Queues delivery-log events nobody waits for; they may linger (see the type's notes). Past
    /// ``Limits/logLines`` they are dropped, and counted; returns whether they were taken.
    @discardableResult
    public func submitLog(_ events: [DeliveryEvent]) -> Bool {
        let (admitted, start) = state.withLock { s -> (Bool, Bool) in
            let (admitted, began) = s.admitLog(events.count, limits: limits)
            if began { overload?(.began) }
            return (admitted, admitted ? s.addLog(events, threshold: logBatch) : false)
        }
        if start { Task { await self.drain() } }
        return admitted
    }

    /// Queues the log lines of a push delivered and acknowledged at once; they may linger too, and
    /// are dropped past the limit as ``submitLog(_:)-([DeliveryEvent])`` says.
    @discardableResult
    public func submitLog(_ delivered: consuming DeliveredPush) -> Bool {
        // Taken into the lock rather than captured: a capture would be copied (a retain of each string).
        var pending = Optional(consume delivered)
        let (admitted, start) = state.withLock { s -> (Bool, Bool) in
            let (admitted, began) = s.admitLog(3, limits: limits)
            if began { overload?(.began) }
            return (admitted, admitted ? s.addLog(pending.take()!, threshold: logBatch) : false)
        }
        if start { Task { await self.drain() } }
        return admitted
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
            var cost = Cost()
            for item in items { cost += item.cost }
            state.withLock { s in
                if let ended = s.written(cost, limits: limits) { overload?(ended) }
            }
            // (What the policy pushed out was logged by the store, in the same transaction.)
            for item in items { item.completion?(result) }
        }
    }
}
