import NIOCore
import Synchronization

/// Objects handed to one event loop from other threads, many to one task: the first posted while
/// none wait schedules the task, which takes all that wait. What is posted arrives in the order
/// posted, and before anything the posting thread gives the loop to run after it.
public final class LoopMailbox<Item: Sendable>: Sendable {
    private struct State {
        var waiting: [Item] = []
        /// An empty array with the capacity a batch had, for the next batch.
        var spare: [Item] = []
        var scheduled = false
    }

    /// The loop the items go to.
    public let loop: any EventLoop
    private let deliver: @Sendable ([Item]) -> Void
    private let state = Mutex(State())

    /// A mailbox whose items `deliver` takes, in batches, on `loop`.
    public init(loop: any EventLoop, deliver: @escaping @Sendable ([Item]) -> Void) {
        self.loop = loop
        self.deliver = deliver
    }

    /// Posts an item; it arrives on the loop.
    public func post(_ item: consuming Item) {
        // Taken into the lock rather than captured: a captured item would be copied.
        var item = Optional(consume item)
        let schedule = state.withLock { state in
            state.waiting.append(item.take()!)
            if state.scheduled { return false }
            state.scheduled = true
            return true
        }
        if schedule { loop.execute { self.drain() } }
    }

    private func drain() {
        var batch = state.withLock { state in
            state.scheduled = false
            // The waiting items leave; the spare (empty) array takes their place.
            var batch: [Item] = []
            swap(&batch, &state.spare)
            swap(&batch, &state.waiting)
            return batch
        }
        deliver(batch)
        batch.removeAll(keepingCapacity: true)
        state.withLock { state in
            if state.spare.capacity < batch.capacity { state.spare = batch }
        }
    }
}
