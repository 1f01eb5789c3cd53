import NIOCore

/// The two deadlines every Herald listener puts on a connection, so that none waits forever on a
/// silent peer, a half-sent preface or a header sent a byte at a time.
public struct ListenerTimeouts: Sendable, Equatable {
    /// From accepting the connection until its first complete request: the TLS handshake, the
    /// protocol, and the first request's head (HTTP/1.1), the client's SETTINGS after the preface
    /// (HTTP/2), or the signed `hello` (device link). Also the time a started HTTP/1.1 request
    /// has to arrive whole. Ten seconds by default: real clients need milliseconds.
    public var firstBytes: Duration
    /// How long a connection may stay quiet (nothing from the peer, nothing in flight) before it is
    /// closed; `nil` never closes it.
    public var idle: Duration?

    /// Deadlines with the given idle time (`nil`: never) and a first-bytes deadline of 10 s.
    public init(firstBytes: Duration = .seconds(10), idle: Duration?) {
        self.firstBytes = firstBytes
        self.idle = idle
    }
}

/// Sent toward the socket (`triggerUserOutboundEvent`) by whatever handler sees a connection's first
/// complete request: ``FirstBytesDeadline`` stops its timer and leaves the pipeline.
public struct ConnectionEstablished: Sendable {
    /// The event.
    public init() {}
}

/// The first handler of every accepted connection: closes it, with a logged reason, if no complete
/// request arrives within the first-bytes deadline (``ListenerTimeouts/firstBytes``). A later
/// handler ends the watch by sending ``ConnectionEstablished`` toward the socket; the handler then
/// removes itself, so it costs nothing on an established connection.
public final class FirstBytesDeadline: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundIn = Any
    public typealias OutboundOut = Any

    let listener: String
    let deadline: TimeAmount
    let log: ListenerLog
    var timer: Scheduled<Void>?
    var received = 0
    var done = false

    /// A watch of `deadline` for a connection of `listener` (named in the log line).
    public init(listener: String, deadline: TimeAmount, log: ListenerLog) {
        self.listener = listener
        self.deadline = deadline
        self.log = log
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    public func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    public func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
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
        done = true
        timer?.cancel()
        timer = nil
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    private func arm(_ context: ChannelHandlerContext) {
        guard timer == nil, !done else { return }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: deadline) {
            let (handler, context) = bound.value
            handler.expired(context)
        }
    }

    private func expired(_ context: ChannelHandlerContext) {
        timer = nil
        guard !done else { return }
        done = true
        let what =
            received == 0
            ? "sent nothing" : "sent \(received) byte\(received == 1 ? "" : "s") but no complete request"
        log.closed(
            listener: listener, peer: context.channel.remoteAddress,
            reason: "\(what) within \(deadline.secondsText) of connecting (first-bytes deadline)")
        context.close(promise: nil)
    }
}

extension TimeAmount {
    /// `10 s`, `0.5 s`: the amount in seconds as a person writes it.
    public var secondsText: String {
        let seconds = Double(nanoseconds) / 1e9
        return (seconds == seconds.rounded() ? String(nanoseconds / 1_000_000_000) : String(seconds)) + " s"
    }
}
