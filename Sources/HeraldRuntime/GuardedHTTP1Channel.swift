import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes
import NIOSSL

/// A Hummingbird HTTP/1.1 server with Herald's listener guards (the admin API, the device API):
/// the first-bytes deadline, protocol detection (an HTTP/2 preface or bytes that are no request line
/// are refused with a logged reason, and a 400 where a line was readable), TLS when given a context,
/// the idle deadline between requests (Hummingbird's own, which only counts decoded requests as
/// activity, so a head sent a byte at a time does not keep a connection open), and the first-bytes
/// deadline again for each request's body (``RequestDeadline``: a body sent a byte at a time would
/// count as activity).
public struct GuardedHTTP1Channel<Base: ServerChildChannel>: ServerChildChannel {
    public typealias Value = Base.Value

    let base: Base
    let listener: String
    /// The connections' ``ListenerTimeouts/firstBytes`` deadlines, shared by the server's connections.
    let firstBytes: FirstBytesDeadlines
    let tls: NIOSSLContext?
    let log: ListenerLog

    /// Guards `base` (an ``HTTP1Channel``).
    public init(_ base: Base, listener: String, timeouts: ListenerTimeouts, tls: NIOSSLContext?, log: ListenerLog) {
        self.base = base
        self.listener = listener
        self.firstBytes = FirstBytesDeadlines(deadline: TimeAmount(timeouts.firstBytes))
        self.tls = tls
        self.log = log
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(FirstBytesDeadline(listener: listener, deadlines: firstBytes, log: log))
            if let tls { try sync.addHandler(NIOSSLServerHandler(context: tls)) }
            try sync.addHandler(ProtocolSniffer(listener: listener, log: log, http1: { _ in }, http2: nil))
        }.flatMap {
            base.setup(channel: channel, logger: logger)
        }
    }

    public func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// An HTTP/1.1 server guarded by ``GuardedHTTP1Channel``; with `tls`, over TLS.
    public static func guardedHTTP1(
        listener: String, timeouts: ListenerTimeouts, tls: NIOSSLContext? = nil, log: ListenerLog
    ) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            GuardedHTTP1Channel(
                HTTP1Channel(
                    responder: responder,
                    configuration: .init(
                        additionalChannelHandlers: [
                            FirstRequestSignal(),
                            RequestDeadline(listener: listener, deadline: TimeAmount(timeouts.firstBytes), log: log),
                        ],
                        idleTimeout: timeouts.idle.map { TimeAmount($0) })),
                listener: listener, timeouts: timeouts, tls: tls, log: log)
        }
    }
}

/// Sends ``ConnectionEstablished`` when the first request head has been read, then leaves.
final class FirstRequestSignal: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.triggerUserOutboundEvent(ConnectionEstablished(), promise: nil)
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}

/// Closes a connection whose request has not arrived whole within `deadline` of its head: a body sent
/// a byte at a time, each byte activity to the idle deadline, would hold the connection for as long
/// as its declared length lasts. Logged as a closed connection with the reason.
final class RequestDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    let listener: String
    let deadline: TimeAmount
    let log: ListenerLog
    private var timer: Scheduled<Void>?

    init(listener: String, deadline: TimeAmount, log: ListenerLog) {
        self.listener = listener
        self.deadline = deadline
        self.log = log
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            timer?.cancel()
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            timer = context.eventLoop.scheduleTask(in: deadline) {
                let (handler, context) = bound.value
                handler.timer = nil
                handler.log.closed(
                    listener: handler.listener, peer: context.channel.remoteAddress,
                    reason: "a request did not arrive whole within \(handler.deadline.secondsText) of its head")
                context.close(promise: nil)
            }
        case .end:
            timer?.cancel()
            timer = nil
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }
}
