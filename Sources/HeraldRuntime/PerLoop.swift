import NIOCore
import Synchronization

/// One value for each event loop, made on first use and used only on its loop: what the
/// connections of one loop share (a queue of their deadlines, their timers) without a lock
/// after they found it.
public final class PerLoop<Value>: Sendable {
    private let make: @Sendable (any EventLoop) -> Value
    private let values = Mutex<[ObjectIdentifier: Entry]>([:])

    /// The loop is kept with its value, so its identifier cannot be reused by another loop while
    /// the value is in the map.
    private struct Entry: Sendable {
        let loop: any EventLoop
        let value: NIOLoopBound<Value>
    }

    /// Values made by `make`, on the loop they are for.
    public init(_ make: @escaping @Sendable (any EventLoop) -> Value) {
        self.make = make
    }

    /// `loop`'s value; call it on `loop`.
    public func value(on loop: any EventLoop) -> Value {
        let key = ObjectIdentifier(loop)
        if let entry = values.withLock({ $0[key] }) { return entry.value.value }
        let value = make(loop)
        values.withLock { $0[key] = Entry(loop: loop, value: NIOLoopBound(value, eventLoop: loop)) }
        return value
    }
}
