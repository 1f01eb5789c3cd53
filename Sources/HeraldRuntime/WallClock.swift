import Foundation
import Synchronization

/// Herald's one clock for dates: the wall-clock time (a notification's fire date, a push's expiry,
/// the delivery log's times) and waiting until one. The device's daemon runs on it; the gateway reads
/// its dates from it. Timers inside NIO handlers run on their event loop's time instead (monotonic,
/// and virtual in tests). Tests use ``ManualClock`` and move time themselves.
public protocol WallClock: Sendable {
    /// The current time.
    func now() -> Date
    /// Returns at `deadline` (at once if it has passed); throws `CancellationError` when cancelled.
    func sleep(until deadline: Date) async throws
}

/// The system's clock.
public struct SystemClock: WallClock {
    /// Creates the clock.
    public init() {}

    /// `Date()`.
    public func now() -> Date { Date() }

    /// Sleeps in steps of at most a minute, so that a wall-clock change (a suspended machine, a
    /// corrected clock) moves the wake-up with it.
    public func sleep(until deadline: Date) async throws {
        while true {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return }
            try await Task.sleep(for: .milliseconds(Int64(min(left, 60) * 1000) + 1))
        }
    }
}

/// A clock that moves only when told to: sleepers wake when ``advance(to:)`` passes their deadline.
public final class ManualClock: WallClock {
    struct Sleeper {
        var deadline: Date
        var continuation: CheckedContinuation<Void, any Error>
    }

    struct State {
        var now: Date
        var sleepers: [Int: Sleeper] = [:]
        var next = 0
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

        /// Watchers whose count of sleepers has been reached.
        mutating func satisfiedWatchers() -> [CheckedContinuation<Void, Never>] {
            let ready = watchers.filter { $0.count <= sleepers.count }.map(\.continuation)
            watchers.removeAll { $0.count <= sleepers.count }
            return ready
        }
    }

    let state: Mutex<State>

    /// Creates a clock showing `now`.
    public init(now: Date) { state = Mutex(State(now: now)) }

    /// The clock's time.
    public func now() -> Date { state.withLock { $0.now } }

    /// How many tasks are waiting on the clock.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// The earliest deadline anyone waits for.
    public var nextDeadline: Date? { state.withLock { $0.sleepers.values.map(\.deadline).min() } }

    /// Moves the clock to `date` (never backwards) and wakes every sleeper whose deadline has come.
    public func advance(to date: Date) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.now = max(state.now, date)
            let due = state.sleepers.filter { $0.value.deadline <= state.now }
            for key in due.keys { state.sleepers[key] = nil }
            return due.values.map(\.continuation)
        }
        for continuation in woken { continuation.resume() }
    }

    /// Returns once at least `count` tasks wait on the clock: a test's way to know that the code under
    /// test has armed its timers before it moves time.
    public func sleepers(atLeast count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.sleepers.count >= count { return true }
                state.watchers.append((count, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Moves the clock forward by `seconds`.
    public func advance(by seconds: TimeInterval) { advance(to: now().addingTimeInterval(seconds)) }

    /// Waits until the clock reaches `deadline`.
    public func sleep(until deadline: Date) async throws {
        let id = state.withLock { state -> Int in
            state.next += 1
            return state.next
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (resumeNow, watchers) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                    if deadline <= state.now || Task.isCancelled { return (true, []) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return (false, state.satisfiedWatchers())
                }
                for watcher in watchers { watcher.resume() }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let continuation = state.withLock { $0.sleepers.removeValue(forKey: id)?.continuation }
            continuation?.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }
}
