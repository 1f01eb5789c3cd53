import NIOCore

/// The timers of many connections on one event loop, in a heap of their own with one NIO task for
/// the earliest.
///
/// NIO keeps a loop's scheduled tasks in a heap too, but cancels a task by searching that heap one
/// entry at a time. A device link holds a timer for as long as it is open (its liveness), so with a
/// task each every link that closed searched the timers of all the links on its loop, and a
/// gateway stopping with n links did n such searches. Here each timer knows its place in the heap:
/// scheduling and cancelling cost a logarithm of the timers on the loop, and NIO's own heap holds
/// one task per loop for all of them. A timer fires at its deadline exactly, as NIO's would.
///
/// Used only on its loop (make one per loop with ``PerLoop``).
public final class LoopTimers {
    /// A scheduled action; ``LoopTimers/cancel(_:)`` stops it.
    public final class Timer {
        fileprivate let deadline: NIODeadline
        /// Timers of one deadline fire in the order they were scheduled.
        fileprivate let sequence: UInt64
        /// Where the timer is in the heap; -1 once it fired or was cancelled.
        fileprivate var index: Int
        fileprivate var action: (() -> Void)?

        fileprivate init(deadline: NIODeadline, sequence: UInt64, index: Int, action: @escaping () -> Void) {
            self.deadline = deadline
            self.sequence = sequence
            self.index = index
            self.action = action
        }

        /// Whether the timer is still to fire.
        public var isScheduled: Bool { index >= 0 }

        fileprivate func fires(before other: Timer) -> Bool {
            deadline < other.deadline || (deadline == other.deadline && sequence < other.sequence)
        }
    }

    /// The loop the timers run on.
    public let loop: any EventLoop
    private var heap: [Timer] = []
    private var scheduled: UInt64 = 0
    /// The NIO task for the earliest timer, its deadline, and its number: a task replaced by an
    /// earlier one may already be running (NIO runs a tick's due tasks from a copy, which a cancel
    /// does not reach), and then it must neither fire nor forget its successor.
    private var task: Scheduled<Void>?
    private var taskDeadline: NIODeadline?
    private var armings: UInt64 = 0

    /// No timers yet, on `loop`.
    public init(loop: any EventLoop) {
        self.loop = loop
    }

    /// How many timers are still to fire.
    public var count: Int { heap.count }

    /// Runs `action` on the loop at `deadline` unless the timer is cancelled first.
    @discardableResult
    public func schedule(at deadline: NIODeadline, _ action: @escaping () -> Void) -> Timer {
        scheduled &+= 1
        let timer = Timer(deadline: deadline, sequence: scheduled, index: heap.count, action: action)
        heap.append(timer)
        siftUp(timer.index)
        if heap[0] === timer { arm() }
        return timer
    }

    /// Runs `action` on the loop `delay` from now unless the timer is cancelled first.
    @discardableResult
    public func schedule(in delay: TimeAmount, _ action: @escaping () -> Void) -> Timer {
        schedule(at: loop.now + delay, action)
    }

    /// Stops `timer` (one of these timers') if it has not fired; its action is released.
    public func cancel(_ timer: Timer) {
        timer.action = nil
        guard timer.index >= 0 else { return }
        precondition(timer.index < heap.count && heap[timer.index] === timer, "a timer of other LoopTimers")
        remove(at: timer.index)
        // The NIO task stays: if it was for this timer it fires early, finds nothing due and
        // re-arms for the next; cancelling it would be one of the searches this type avoids.
    }

    private func arm() {
        guard let first = heap.first else { return }
        if let taskDeadline, taskDeadline <= first.deadline { return }
        task?.cancel()
        armings &+= 1
        let arming = armings
        taskDeadline = first.deadline
        task = loop.assumeIsolated().scheduleTask(deadline: first.deadline) { [self] in fire(arming) }
    }

    private func fire(_ arming: UInt64) {
        guard arming == armings else { return }
        task = nil
        taskDeadline = nil
        let now = loop.now
        // Only timers scheduled before this firing: one an action schedules in the past waits for
        // the next turn of the loop, as a NIO task would, so an action that keeps rescheduling
        // itself cannot hold the loop.
        let last = scheduled
        while let first = heap.first, first.deadline <= now, first.sequence <= last {
            remove(at: 0)
            let action = first.action
            first.action = nil
            action?()
        }
        arm()
    }

    // MARK: The heap, ordered by deadline, each timer holding its index

    private func remove(at index: Int) {
        let removed = heap[index]
        let last = heap.removeLast()
        removed.index = -1
        guard index < heap.count else { return }
        heap[index] = last
        last.index = index
        if index > 0, last.fires(before: heap[(index - 1) / 2]) {
            siftUp(index)
        } else {
            siftDown(index)
        }
    }

    private func siftUp(_ start: Int) {
        var index = start
        let timer = heap[index]
        while index > 0 {
            let parent = (index - 1) / 2
            guard timer.fires(before: heap[parent]) else { break }
            heap[index] = heap[parent]
            heap[index].index = index
            index = parent
        }
        heap[index] = timer
        timer.index = index
    }

    private func siftDown(_ start: Int) {
        var index = start
        let timer = heap[index]
        while true {
            var child = 2 * index + 1
            guard child < heap.count else { break }
            if child + 1 < heap.count, heap[child + 1].fires(before: heap[child]) { child += 1 }
            guard heap[child].fires(before: timer) else { break }
            heap[index] = heap[child]
            heap[index].index = index
            index = child
        }
        heap[index] = timer
        timer.index = index
    }
}
