import NIOCore

/// Reads a connection's first bytes (after TLS, if any) until ``FirstBytes/classify(_:)`` can tell
/// HTTP/2 from HTTP/1.1, hands the pipeline to the matching setup, replays what it read and leaves.
/// Bytes that are neither get a logged close, after `400 Bad Request` when a line was readable. A
/// listener that does not speak one of the two passes `nil` for it: a peer speaking it is refused.
public final class ProtocolSniffer: ChannelInboundHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    /// Adds the handlers of one protocol behind the sniffer.
    public typealias Setup = (ChannelPipeline.SynchronousOperations) throws -> Void

    let listener: String
    let log: ListenerLog
    let http1: Setup?
    let http2: Setup?
    var buffered: ByteBuffer?
    var decided = false

    /// A sniffer for `listener` that sets up `http1` or `http2`.
    public init(listener: String, log: ListenerLog, http1: Setup?, http2: Setup?) {
        self.listener = listener
        self.log = log
        self.http1 = http1
        self.http2 = http2
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !decided else { return }
        var bytes = unwrapInboundIn(data)
        if buffered == nil {
            buffered = bytes
        } else {
            buffered!.writeBuffer(&bytes)
        }
        guard let buffered else { return }
        let setup: Setup
        switch FirstBytes.classify(buffered.readableBytesView) {
        case .needMore:
            return
        case .http2:
            guard let http2 else {
                refuse(context, reason: "HTTP/2 is not spoken here (HTTP/1.1 only)", badRequest: false)
                return
            }
            setup = http2
        case .http1:
            guard let http1 else {
                refuse(context, reason: "HTTP/1.1 is not spoken here (HTTP/2 only)", badRequest: true)
                return
            }
            setup = http1
        case .refuse(let reason, let badRequest):
            refuse(context, reason: reason, badRequest: badRequest)
            return
        }
        decided = true
        do {
            try setup(context.pipeline.syncOperations)
        } catch {
            log.closed(listener: listener, peer: context.channel.remoteAddress, reason: "setup failed: \(error)")
            context.close(promise: nil)
            return
        }
        self.buffered = nil
        context.fireChannelRead(wrapInboundOut(buffered))
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    private func refuse(_ context: ChannelHandlerContext, reason: String, badRequest: Bool) {
        decided = true
        buffered = nil
        log.closed(listener: listener, peer: context.channel.remoteAddress, reason: reason)
        guard badRequest else {
            context.close(promise: nil)
            return
        }
        let body = reason + "\n"
        let text =
            "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
            + "content-length: \(body.utf8.count)\r\n\r\n" + body
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: text))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}
