import NIOCore

/// One flush per turn of an event loop, however many writes that turn made: what comes back one by
/// one as tasks on the loop (answers from a store or a peer, messages offered, forwarded requests)
/// is flushed once after the tasks queued now have run, not once per write. Used on its loop only.
public final class LoopTurnFlush {
    private var scheduled = false

    /// A flusher with no flush coming.
    public init() {}

    /// Runs `flush` once the tasks queued on `loop` now have run, unless a flush is already coming.
    public func request(on loop: any EventLoop, _ flush: @escaping () -> Void) {
        if scheduled { return }
        scheduled = true
        let bound = NIOLoopBound((self, flush), eventLoop: loop)
        loop.execute {
            let (turn, flush) = bound.value
            turn.scheduled = false
            flush()
        }
    }
}
