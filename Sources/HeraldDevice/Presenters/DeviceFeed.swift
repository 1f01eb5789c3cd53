import Synchronization

/// Every log entry, as it happens, to whoever listens: the web device's live stream (`GET /events`).
/// A listener that falls behind keeps the newest 256 entries.
public final class DeviceFeed: Presenter {
    private struct State {
        var listeners: [Int: AsyncStream<DeviceLogEntry>.Continuation] = [:]
        var next = 0
    }

    private let state = Mutex(State())

    /// No listeners yet.
    public init() {}

    /// Hands the entry to every listener.
    public func show(_ entry: DeviceLogEntry) {
        for listener in state.withLock({ Array($0.listeners.values) }) { listener.yield(entry) }
    }

    /// The entries from now on, until the stream is dropped.
    public func listen() -> AsyncStream<DeviceLogEntry> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: DeviceLogEntry.self, bufferingPolicy: .bufferingNewest(256))
        let id = state.withLock { state -> Int in
            state.next += 1
            state.listeners[state.next] = continuation
            return state.next
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.listeners.removeValue(forKey: id) }
        }
        return stream
    }

    /// How many listen now.
    public var listenerCount: Int { state.withLock { $0.listeners.count } }
}
