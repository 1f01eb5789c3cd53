import NIOCore

/// The first handler of every accepted connection: closes it, with a logged reason, if no complete
/// request arrives within the first-bytes deadline (``ListenerTimeouts/firstBytes``). A later
/// handler ends the watch by sending ``ConnectionEstablished`` toward the socket; the handler then
/// removes itself, so it costs nothing on an established connection. The listener's connections
/// share their timers (``FirstBytesDeadlines``).
public final class FirstBytesDeadline: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundIn = Any
    public typealias OutboundOut = Any

    let listener: String
    let deadlines: FirstBytesDeadlines
    let log: ListenerLog
    /// While watched: the connection, and the queue that holds this watch.
    private var context: ChannelHandlerContext?
    private var queue: FirstBytesDeadlines.Queue?
    var received = 0
    /// The watch is over (the connection sent its request, closed, or timed out); it never starts again.
    var done = false

    /// A watch of a connection of `listener` (named in the log line), with the listener's `deadlines`.
    public init(listener: String, deadlines: FirstBytesDeadlines, log: ListenerLog) {
        self.listener = listener
        self.deadlines = deadlines
        self.log = log
    }

    /// A watch of `deadline` with deadlines of its own (tests; a listener shares its ``FirstBytesDeadlines``).
    public convenience init(listener: String, deadline: TimeAmount, log: ListenerLog) {
        self.init(listener: listener, deadlines: FirstBytesDeadlines(deadline: deadline), log: log)
    }

    /// Whether the connection is in its queue and not yet done.
    var watching: Bool { context != nil }

    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    public func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        end()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        end()
        context.fireChannelInactive()
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received += unwrapInboundIn(data).readableBytes
        context.fireChannelRead(data)
    }

    public func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard event is ConnectionEstablished else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        promise?.succeed()
        guard !done else { return }
        end()
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    private func arm(_ context: ChannelHandlerContext) {
        guard !watching, !done else { return }
        let queue = deadlines.queue(on: context.eventLoop)
        self.context = context
        self.queue = queue
        queue.add(self, at: context.eventLoop.now + deadlines.deadline)
    }

    /// The watch is over; the queue learns it, if it holds the watch.
    private func end() {
        done = true
        guard watching else { return }
        context = nil
        queue?.ended(self)
        queue = nil
    }

    /// Called by the queue at the deadline, once the watch has left it.
    func expire() {
        guard let context, !done else { return }
        done = true
        self.context = nil
        queue = nil
        let what =
            received == 0
            ? "sent nothing" : "sent \(received) byte\(received == 1 ? "" : "s") but no complete request"
        log.closed(
            listener: listener, peer: context.channel.remoteAddress,
            reason: "\(what) within \(deadlines.deadline.secondsText) of connecting (first-bytes deadline)")
        context.close(promise: nil)
    }
}

/// The first-bytes deadlines of one listener (``FirstBytesDeadline``): on each event loop, one queue
/// of the connections being watched, in the order they were accepted, and one timer for the
/// earliest of them.
///
/// Every connection's deadline is the same time after it was accepted, so the order of acceptance
/// is the order of the deadlines, and a queue in that order needs no sorting. A connection that
/// sends its first request (nearly all, within milliseconds) is only marked as done: it leaves the
/// queue when the queue reaches it, or when done connections are most of the queue. A timer each
/// put every accepted connection's task into NIO's heap of its loop's scheduled tasks and took it
/// out again: each a walk through the heap's levels, each step a copy of a task with its closures'
/// reference counts, in a heap that on a device link listener held the timers of every connected
/// device as well.
public final class FirstBytesDeadlines: Sendable {
    /// How long after acceptance a connection is closed if it sent no complete request.
    public let deadline: TimeAmount
    private let queues = PerLoop { Queue(loop: $0) }

    /// The deadlines of a listener, each `deadline` after a connection was accepted.
    public init(deadline: TimeAmount) {
        self.deadline = deadline
    }

    /// The queue of `loop`'s connections, made on first use; call it on `loop`.
    func queue(on loop: any EventLoop) -> Queue { queues.value(on: loop) }

    /// One event loop's watched connections, used only on that loop.
    final class Queue {
        struct Entry {
            let at: NIODeadline
            let watch: FirstBytesDeadline
        }

        /// Done watches are dropped all at once when there are at least this many and they are at
        /// least half the queue, so the queue holds at most about twice the connections watched.
        static let compactionFloor = 1024

        let loop: any EventLoop
        private(set) var entries = CircularBuffer<Entry>()
        /// Entries whose watch is done but that are still in `entries`.
        private var ended = 0
        private var armed = false
        private var firing = false

        init(loop: any EventLoop) {
            self.loop = loop
        }

        /// Watches `watch` until `at`; at `at` the queue calls its `expire()` unless it is done.
        func add(_ watch: FirstBytesDeadline, at: NIODeadline) {
            entries.append(Entry(at: at, watch: watch))
            if !armed, !firing { arm(at) }
        }

        /// A watch in the queue is done (its connection sent a request, closed, or left).
        func ended(_ watch: FirstBytesDeadline) {
            ended += 1
            if ended >= Self.compactionFloor, ended * 2 >= entries.count {
                entries = CircularBuffer(entries.lazy.filter { $0.watch.watching })
                ended = 0
            }
        }

        private func arm(_ at: NIODeadline) {
            armed = true
            loop.assumeIsolated().scheduleTask(deadline: at) { [self] in fire() }
        }

        private func fire() {
            armed = false
            firing = true
            let now = loop.now
            while let first = entries.first {
                if !first.watch.watching {
                    entries.removeFirst()
                    ended -= 1
                } else if first.at <= now {
                    entries.removeFirst()
                    first.watch.expire()
                } else {
                    break
                }
            }
            firing = false
            if let first = entries.first { arm(first.at) }
        }
    }
}
