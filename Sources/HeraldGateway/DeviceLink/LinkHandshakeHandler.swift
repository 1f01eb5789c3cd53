import Foundation
import HeraldCore
import HeraldRuntime
import NIOCore
import NIOHTTP1

/// The device link's opening handshake (RFC 6455 §4.2) in one step. NIO's decoder reads the
/// HTTP/1.1 request; a WebSocket upgrade of the link's path is answered `101` and the WebSocket
/// handlers take the HTTP ones' place at once, so the `101` and the link's `challenge` leave in one
/// write. Anything else gets its answer (``LinkHandshake/answer(to:bodyBytes:)``) and is closed.
///
/// NIO's general upgrade (`configureHTTPServerPipeline(withServerUpgrade:)`) adds five HTTP
/// handlers and takes them out again through a chain of futures, and flushes the `101` on its own:
/// most of a reconnection's work on the gateway that was not the TCP connection itself.
final class LinkHandshakeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = ByteBuffer

    let service: DeviceLinkService
    /// The HTTP decoder in front of this handler, taken out with it.
    let decoder: ByteToMessageHandler<HTTPRequestDecoder>
    var head: HTTPRequestHead?
    var bodyBytes = 0
    var answered = false

    init(service: DeviceLinkService, decoder: ByteToMessageHandler<HTTPRequestDecoder>) {
        self.service = service
        self.decoder = decoder
    }

    /// Adds the HTTP/1.1 decoder and the handshake to a new connection's pipeline.
    static func configure(_ sync: ChannelPipeline.SynchronousOperations, service: DeviceLinkService) throws {
        let decoder = ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes))
        try sync.addHandler(decoder)
        try sync.addHandler(LinkHandshakeHandler(service: service, decoder: decoder))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answered else { return }
        switch unwrapInboundIn(data) {
        case .head(let request): head = request
        case .body(let bytes): bodyBytes += bytes.readableBytes
        case .end:
            guard let head else { return }
            answered = true
            switch LinkHandshake.answer(to: head, bodyBytes: bodyBytes) {
            case .upgrade(let accept, let resume): upgrade(context: context, accept: accept, resume: resume)
            case .refuse(let refusal): refuse(context: context, refusal)
            }
        }
    }

    /// Bytes that are no HTTP/1.1 request get `400`; any other error (TLS's, say) closes the
    /// connection with a logged reason.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !answered, error is HTTPParserError else {
            if !answered {
                service.log.closed(
                    listener: DeviceLinkService.listener, peer: context.channel.remoteAddress, reason: "\(error)")
            }
            answered = true
            context.close(promise: nil)
            return
        }
        answered = true
        refuse(
            context: context, LinkHandshake.Refusal(status: .badRequest, message: "malformed HTTP request: \(error)"))
    }

    /// Writes the `101`, takes this handler out and puts the WebSocket handlers and the link in its
    /// place (the link writes its challenge, or with an accepted resumption its `welcome`, as it
    /// is added, the last: both leave in its flush), then takes the HTTP decoder out; bytes it
    /// read past the request go on to the WebSocket decoder. A resumption is checked first: one
    /// that is refused gets the challenge, as a request without one.
    private func upgrade(context: ChannelHandlerContext, accept: String, resume: LinkHandshake.Resumption?) {
        var resumed: DeviceLinkService.Authenticated?
        if let resume {
            switch service.resume(resume.resume, webSocketKey: resume.webSocketKey) {
            case .success(let authenticated): resumed = authenticated
            case .failure(let refusal):
                service.logger.info(
                    "upgrade resumption refused; the device gets the challenge",
                    metadata: ["device": "\(resume.resume.device)", "reason": "\(refusal.message)"])
            }
        }
        context.write(wrapOutboundOut(LinkHandshake.switchingProtocols(accept: accept)), promise: nil)
        let sync = context.pipeline.syncOperations
        let channel = context.channel
        sync.removeHandler(context: context, promise: nil)
        do {
            try sync.addHandlers(
                DeviceLinkFraming.handlers(then: DeviceLinkHandler(service: service, resumed: resumed)))
        } catch {
            service.log.closed(listener: DeviceLinkService.listener, peer: channel.remoteAddress, reason: "\(error)")
            channel.close(promise: nil)
            return
        }
        sync.removeHandler(decoder, promise: nil)
    }

    private func refuse(context: ChannelHandlerContext, _ refusal: LinkHandshake.Refusal) {
        if refusal.status != .notFound && refusal.status != .upgradeRequired {
            service.log.closed(
                listener: DeviceLinkService.listener, peer: context.channel.remoteAddress, reason: refusal.message)
        }
        context.writeAndFlush(wrapOutboundOut(refusal.response())).whenComplete { [channel = context.channel] _ in
            channel.close(promise: nil)
        }
    }
}

/// The rules of the link's opening handshake, apart from the channel.
enum LinkHandshake {
    /// What a request gets.
    enum Answer: Equatable {
        /// `101 Switching Protocols` with this `Sec-WebSocket-Accept`; `resume`: the request carried
        /// a resumption (``DeviceLink/upgradeResumeHeader``), checked before the answer is written.
        case upgrade(accept: String, resume: Resumption? = nil)
        /// An answer that closes the connection.
        case refuse(Refusal)
    }

    /// A resumption in an upgrade request, with the request's key its proof covers.
    struct Resumption: Equatable {
        var resume: DeviceLink.UpgradeResume
        var webSocketKey: String
    }

    /// A request turned away: its status, a line of text saying why, and headers the status needs.
    struct Refusal: Equatable {
        var status: HTTPResponseStatus
        var message: String
        var headers: [String: String] = [:]

        /// The whole answer, `connection: close`.
        func response() -> ByteBuffer {
            let body = message + "\n"
            var text = "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\n"
            text += "content-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
            text += "content-length: \(body.utf8.count)\r\n"
            for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
            text += "\r\n" + body
            return ByteBuffer(string: text)
        }
    }

    /// The `101` for an accepted upgrade.
    static func switchingProtocols(accept: String) -> ByteBuffer {
        ByteBuffer(
            string:
                "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\nsec-websocket-accept: \(accept)\r\n\r\n"
        )
    }

    /// What a request for the link gets (RFC 6455 §4.2.1 and §4.4): anything but the link's path,
    /// `404`; the path without `Upgrade: websocket`, `426`; a WebSocket version other than 13,
    /// `426` naming 13; a method other than GET, `405`; any other missing piece, `400` naming it.
    static func answer(to head: HTTPRequestHead, bodyBytes: Int) -> Answer {
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        guard path == DeviceLink.path else { return .refuse(Refusal(status: .notFound, message: "not found")) }
        guard DeviceLink.header(head.headers["upgrade"], lists: "websocket") else {
            return .refuse(
                Refusal(
                    status: .upgradeRequired, message: "the device link speaks WebSocket: send Upgrade: websocket",
                    headers: ["upgrade": "websocket", "connection": "upgrade"]))
        }
        guard head.method == .GET else {
            return .refuse(
                Refusal(
                    status: .methodNotAllowed, message: "a WebSocket upgrade is a GET, not \(head.method.rawValue)",
                    headers: ["allow": "GET"]))
        }
        guard head.version.major == 1, head.version.minor >= 1 else {
            return .refuse(Refusal(status: .badRequest, message: "a WebSocket upgrade needs HTTP/1.1"))
        }
        guard DeviceLink.header(head.headers["connection"], lists: "upgrade") else {
            return .refuse(Refusal(status: .badRequest, message: "a WebSocket upgrade needs Connection: upgrade"))
        }
        let versions = head.headers["sec-websocket-version"]
        guard versions == ["13"] else {
            return .refuse(
                Refusal(
                    status: .upgradeRequired,
                    message: "Sec-WebSocket-Version must be 13, not \(versions.joined(separator: ", "))",
                    headers: ["sec-websocket-version": "13"]))
        }
        let keys = head.headers["sec-websocket-key"]
        guard keys.count == 1, let key = keys.first, Data(base64Encoded: key)?.count == 16 else {
            return .refuse(
                Refusal(status: .badRequest, message: "Sec-WebSocket-Key must be one value of 16 bytes in base64"))
        }
        guard bodyBytes == 0 else {
            return .refuse(Refusal(status: .badRequest, message: "a WebSocket upgrade carries no body"))
        }
        let resumes = head.headers[DeviceLink.upgradeResumeHeader]
        guard let value = resumes.first else { return .upgrade(accept: DeviceLink.webSocketAccept(key: key)) }
        guard resumes.count == 1 else {
            return .refuse(Refusal(status: .badRequest, message: "Herald-Resume must be one value"))
        }
        do {
            let resume = try DeviceLink.UpgradeResume(headerValue: value)
            return .upgrade(
                accept: DeviceLink.webSocketAccept(key: key), resume: Resumption(resume: resume, webSocketKey: key))
        } catch {
            return .refuse(Refusal(status: .badRequest, message: error.description))
        }
    }
}
