import Synchronization

/// Runs `body`, throwing ``DeadlineExceeded`` if it has not finished after `limit`.
///
/// The caller is answered at the deadline even when `body` does not end: a statement on a connection
/// that died can ignore its cancellation, and a task group (which waits for all of its children)
/// would wait with it. `body` is cancelled and left to end on its own.
public func withDeadline<T: Sendable>(_ limit: Duration, _ body: @Sendable @escaping () async throws -> T)
    async throws -> T
{
    let race = DeadlineRace<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            race.begin(
                continuation,
                work: Task {
                    do { race.end(.success(try await body())) } catch { race.end(.failure(error)) }
                },
                timer: Task {
                    try? await Task.sleep(for: limit)
                    race.end(.failure(DeadlineExceeded(limit: limit)))
                })
        }
    } onCancel: {
        race.end(.failure(CancellationError()))
    }
}

/// The first of a body's result, its deadline and its caller's cancellation, delivered once.
private final class DeadlineRace<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var tasks: [Task<Void, Never>] = []
        /// The outcome, once there is one (the caller's cancellation can come before ``begin``).
        var outcome: Result<T, any Error>?
    }
    private let state = Mutex(State())

    func begin(_ continuation: CheckedContinuation<T, any Error>, work: Task<Void, Never>, timer: Task<Void, Never>) {
        let outcome = state.withLock { state -> Result<T, any Error>? in
            if state.outcome == nil {
                state.continuation = continuation
                state.tasks = [work, timer]
            }
            return state.outcome
        }
        if let outcome {
            work.cancel()
            timer.cancel()
            continuation.resume(with: outcome)
        }
    }

    func end(_ result: Result<T, any Error>) {
        let taken = state.withLock { state -> (CheckedContinuation<T, any Error>?, [Task<Void, Never>])? in
            guard state.outcome == nil else { return nil }
            state.outcome = result
            defer {
                state.continuation = nil
                state.tasks = []
            }
            return (state.continuation, state.tasks)
        }
        guard let (continuation, tasks) = taken else { return }
        for task in tasks { task.cancel() }
        continuation?.resume(with: result)
    }
}

/// The server did not answer in time (``withDeadline(_:_:)``).
public struct DeadlineExceeded: Error, CustomStringConvertible {
    /// The time it had.
    public var limit: Duration
    /// Creates the error for a deadline of `limit`.
    public init(limit: Duration) { self.limit = limit }
    /// One line: no answer within so many seconds.
    public var description: String { "no answer within \(limit.components.seconds) s" }
}
