import Foundation
import HeraldCore
import HeraldRuntime
import NIOCore
import NIOHTTP1

/// The device's side of the link's opening handshake (RFC 6455 §4.1) in one step: writes the
/// upgrade request as the connection opens (through NIO's HTTP/1.1 encoder, which the decoder
/// watches for the request it answers), reads the answer with NIO's decoder, checks
/// the `101` and its `Sec-WebSocket-Accept`, and puts the WebSocket handlers and the link's handler
/// in the HTTP ones' place at once. Bytes read past the `101` (the gateway's challenge, usually in
/// the same read) go on to the WebSocket decoder.
///
/// NIO's general client upgrade adds an encoder, a decoder and an upgrade handler, and takes them
/// out again through a chain of futures: much of a reconnection's work on the device.
final class LinkClientHandshake: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    let request: HTTPRequestHead
    let expectedAccept: String
    /// The HTTP encoder and decoder in front of this handler, taken out with it.
    let encoder: HTTPRequestEncoder
    let decoder: ByteToMessageHandler<HTTPResponseDecoder>
    /// Makes the link's handler once the gateway has switched protocols.
    let link: () -> LinkClientHandler
    /// Called when the gateway does not switch protocols.
    let failed: (GatewayLinkFailure) -> Void
    /// Called when a request that carried the device's ticket was answered `400`: a gateway (or
    /// something before it) that cannot take the header, which the next attempt then goes without.
    let refusedResume: () -> Void
    var head: HTTPResponseHead?
    var sent = false
    var done = false
    /// What the decoder hands on while it is taken out (bytes it read past the `101`), replayed to
    /// the WebSocket decoder.
    var leftOver: [NIOAny] = []

    /// `resume` gives the ``DeviceLink/upgradeResumeHeader`` for the request's key, when the
    /// device holds a ticket (docs/device-link.md, "Resuming in the upgrade request").
    init(
        host: String, port: Int, path: String, encoder: HTTPRequestEncoder,
        decoder: ByteToMessageHandler<HTTPResponseDecoder>,
        resume: (String) -> DeviceLink.UpgradeResume? = { _ in nil },
        link: @escaping () -> LinkClientHandler, failed: @escaping (GatewayLinkFailure) -> Void,
        refusedResume: @escaping () -> Void = {}
    ) {
        // From the pooled generator: a byte each from `SystemRandomNumberGenerator` was a system
        // call each, sixteen per connection.
        let keyText = RandomUUID.bytes(16).base64EncodedString()
        self.expectedAccept = DeviceLink.webSocketAccept(key: keyText)
        self.request = Self.request(host: host, port: port, path: path, key: keyText, resume: resume(keyText))
        self.encoder = encoder
        self.decoder = decoder
        self.link = link
        self.failed = failed
        self.refusedResume = refusedResume
    }

    /// Adds the HTTP/1.1 encoder and decoder and the handshake to a new connection's pipeline.
    static func configure(
        _ sync: ChannelPipeline.SynchronousOperations, host: String, port: Int, path: String,
        resume: (String) -> DeviceLink.UpgradeResume? = { _ in nil },
        link: @escaping () -> LinkClientHandler, failed: @escaping (GatewayLinkFailure) -> Void,
        refusedResume: @escaping () -> Void = {}
    ) throws {
        let encoder = HTTPRequestEncoder()
        let decoder = ByteToMessageHandler(HTTPResponseDecoder(leftOverBytesStrategy: .forwardBytes))
        try sync.addHandlers(encoder, decoder)
        try sync.addHandler(
            LinkClientHandshake(
                host: host, port: port, path: path, encoder: encoder, decoder: decoder, resume: resume, link: link,
                failed: failed, refusedResume: refusedResume))
    }

    /// The upgrade request for `path` on `host:port` with `key`, and the resumption if there is one.
    static func request(
        host: String, port: Int, path: String, key: String, resume: DeviceLink.UpgradeResume? = nil
    ) -> HTTPRequestHead {
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var headers = HTTPHeaders([
            ("host", authority), ("upgrade", "websocket"), ("connection", "upgrade"), ("sec-websocket-key", key),
            ("sec-websocket-version", "13"), ("content-length", "0"),
        ])
        if let resume { headers.add(name: DeviceLink.upgradeResumeHeader, value: resume.headerValue) }
        return HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { send(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        send(context)
        context.fireChannelActive()
    }

    private func send(_ context: ChannelHandlerContext) {
        guard !sent else { return }
        sent = true
        context.write(wrapOutboundOut(.head(request)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else {
            leftOver.append(data)
            return
        }
        switch unwrapInboundIn(data) {
        case .head(let response): head = response
        case .body: break
        case .end:
            guard let head else { return }
            done = true
            if let refusal = check(head) {
                if head.status == .badRequest, request.headers.contains(name: DeviceLink.upgradeResumeHeader) {
                    refusedResume()
                }
                fail(context, refusal)
            } else {
                upgrade(context: context)
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !done else {
            context.fireErrorCaught(error)
            return
        }
        done = true
        fail(context, "the gateway's answer to the WebSocket upgrade is not HTTP/1.1: \(error)")
    }

    /// Why `head` is no acceptance of this request's upgrade, or nil.
    func check(_ head: HTTPResponseHead) -> String? {
        guard head.status == .switchingProtocols else {
            return "the server did not accept the WebSocket upgrade (\(head.status.code) \(head.status.reasonPhrase))"
        }
        guard DeviceLink.header(head.headers["upgrade"], lists: "websocket"),
            DeviceLink.header(head.headers["connection"], lists: "upgrade")
        else {
            return "the server's 101 does not switch to WebSocket"
        }
        guard head.headers["sec-websocket-accept"] == [expectedAccept] else {
            return "the server's Sec-WebSocket-Accept does not answer this request's key"
        }
        return nil
    }

    private func fail(_ context: ChannelHandlerContext, _ message: String) {
        failed(GatewayLinkFailure(code: .notUpgraded, message: message))
        context.close(promise: nil)
    }

    /// Takes the HTTP encoder and decoder out; once the decoder is out (it hands on what it read
    /// past the `101` as it leaves), adds the WebSocket handlers and the link, replays those bytes
    /// to them and leaves. The decoder watches writes for requests: nothing may be written through
    /// it once the link runs.
    private func upgrade(context: ChannelHandlerContext) {
        let sync = context.pipeline.syncOperations
        sync.removeHandler(encoder, promise: nil)
        sync.removeHandler(decoder).assumeIsolated().whenComplete { [self] result in
            do {
                try result.get()
                try sync.addHandlers(DeviceLinkFraming.handlers(then: link()))
            } catch {
                failed(GatewayLinkFailure(code: .closed, message: "could not set up the link: \(error)"))
                context.close(promise: nil)
                return
            }
            let replay = leftOver
            leftOver = []
            for data in replay { context.fireChannelRead(data) }
            if !replay.isEmpty { context.fireChannelReadComplete() }
            sync.removeHandler(context: context, promise: nil)
        }
    }
}
