import Synchronization

/// A flag set once, read on every request (a server that is shutting down).
public final class ShutdownFlag: Sendable {
    private let flag = Atomic<Bool>(false)

    /// A flag not set.
    public init() {}

    /// Sets the flag.
    public func set() { flag.store(true, ordering: .releasing) }
    /// Whether the flag is set.
    public var isSet: Bool { flag.load(ordering: .acquiring) }
}
