import Foundation
import HeraldCore
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOWebSocket
import Testing

@testable import HeraldGateway

/// The device link's opening handshake: which requests are upgraded and what the others get, and
/// the pipeline it leaves behind.
@Suite struct LinkHandshakeTests {
    /// RFC 6455 §1.3's example key.
    static let key = "dGhlIHNhbXBsZSBub25jZQ=="

    func head(
        _ method: HTTPMethod = .GET, _ uri: String = DeviceLink.path, version: HTTPVersion = .http1_1,
        _ headers: [(String, String)]? = nil
    ) -> HTTPRequestHead {
        let fields =
            headers ?? [
                ("host", "gateway"), ("upgrade", "websocket"), ("connection", "keep-alive, Upgrade"),
                ("sec-websocket-key", Self.key), ("sec-websocket-version", "13"),
            ]
        return HTTPRequestHead(version: version, method: method, uri: uri, headers: HTTPHeaders(fields))
    }

    func replacing(_ name: String, with value: String?) -> [(String, String)] {
        var fields: [(String, String)] = [
            ("host", "gateway"), ("upgrade", "websocket"), ("connection", "Upgrade"),
            ("sec-websocket-key", Self.key), ("sec-websocket-version", "13"),
        ]
        fields.removeAll { $0.0 == name }
        if let value { fields.append((name, value)) }
        return fields
    }

    @Test func theRFCsExampleKeyGetsTheRFCsAcceptAndAQueryIsIgnored() {
        #expect(DeviceLink.webSocketAccept(key: Self.key) == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(LinkHandshake.answer(to: head(), bodyBytes: 0) == .upgrade(accept: "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="))
        #expect(
            LinkHandshake.answer(to: head(.GET, DeviceLink.path + "?v=1"), bodyBytes: 0)
                == .upgrade(accept: "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="))
    }

    /// `Upgrade` and `Connection` are comma-separated lists of case-insensitive tokens, possibly over
    /// several header lines, with whitespace around each element (RFC 9110 §5.6.1).
    @Test func aHeaderListsATokenInAnyCaseAmongOthers() {
        #expect(DeviceLink.header(["websocket"], lists: "websocket"))
        #expect(DeviceLink.header(["WebSocket"], lists: "websocket"))
        #expect(DeviceLink.header(["keep-alive, Upgrade"], lists: "upgrade"))
        #expect(DeviceLink.header(["keep-alive,\tUPGRADE \t"], lists: "upgrade"))
        #expect(DeviceLink.header(["keep-alive", " upgrade"], lists: "upgrade"))
        #expect(DeviceLink.header([",, upgrade,"], lists: "upgrade"))
        #expect(!DeviceLink.header([], lists: "upgrade"))
        #expect(!DeviceLink.header([""], lists: "upgrade"))
        #expect(!DeviceLink.header(["keep-alive"], lists: "upgrade"))
        #expect(!DeviceLink.header(["upgraded", "up grade", "upgrad"], lists: "upgrade"))
        #expect(!DeviceLink.header(["websocket/13"], lists: "websocket"))
        #expect(!DeviceLink.header(["h2c, upgrade-insecure"], lists: "upgrade"))
    }

    @Test func everyOtherRequestGetsItsStatusAndAReason() {
        func status(_ head: HTTPRequestHead, body: Int = 0) -> (UInt, String, [String: String])? {
            guard case .refuse(let refusal) = LinkHandshake.answer(to: head, bodyBytes: body) else { return nil }
            return (refusal.status.code, refusal.message, refusal.headers)
        }
        #expect(status(head(.GET, "/other"))?.0 == 404)
        let plain = status(head(.GET, DeviceLink.path, [("host", "gateway")]))
        #expect(plain?.0 == 426)
        #expect(plain?.2["upgrade"] == "websocket")
        #expect(status(head(.POST))?.0 == 405)
        #expect(status(head(.POST))?.2["allow"] == "GET")
        #expect(status(head(version: .http1_0))?.1.contains("HTTP/1.1") == true)
        #expect(
            status(head(.GET, DeviceLink.path, replacing("connection", with: "keep-alive")))?.1.contains("Connection")
                == true)
        let version = status(head(.GET, DeviceLink.path, replacing("sec-websocket-version", with: "8")))
        #expect(version?.0 == 426)
        #expect(version?.2["sec-websocket-version"] == "13")
        for key in [nil, "short", "AAAA"] {
            let refused = status(head(.GET, DeviceLink.path, replacing("sec-websocket-key", with: key)))
            #expect(refused?.0 == 400)
            #expect(refused?.1.contains("Sec-WebSocket-Key") == true)
        }
        #expect(status(head(), body: 3)?.1.contains("no body") == true)
    }

    /// A resumption in the request is read with it; a malformed one gets `400` naming the header.
    @Test func aResumptionInTheRequestIsReadAndAMalformedOneRefused() {
        let ticket = LinkTicket(ticket: Data([1, 2, 3]), secret: Data(repeating: 5, count: 32), expires: 1)
        let resume = DeviceLink.UpgradeResume(
            device: "phone", ticket: ticket, webSocketKey: Self.key, time: 1_800_000_000)
        let answer = LinkHandshake.answer(
            to: head(.GET, DeviceLink.path, replacing("herald-resume", with: resume.headerValue)), bodyBytes: 0)
        #expect(
            answer
                == .upgrade(
                    accept: "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
                    resume: LinkHandshake.Resumption(resume: resume, webSocketKey: Self.key)))
        guard
            case .refuse(let refusal) = LinkHandshake.answer(
                to: head(.GET, DeviceLink.path, replacing("herald-resume", with: "phone 12")), bodyBytes: 0)
        else { return #expect(Bool(false), "a malformed resumption is refused") }
        #expect(refusal.status == .badRequest)
        #expect(refusal.message.contains("Herald-Resume"))
        var twice = replacing("herald-resume", with: resume.headerValue)
        twice.append(("herald-resume", resume.headerValue))
        guard case .refuse(let two) = LinkHandshake.answer(to: head(.GET, DeviceLink.path, twice), bodyBytes: 0) else {
            return #expect(Bool(false), "two resumptions are refused")
        }
        #expect(two.message == "Herald-Resume must be one value")
    }

    /// A link's pipeline from its first bytes: the handshake after the HTTP decoder, and a counter
    /// of what reaches the socket.
    fileprivate func channel() async throws -> (EmbeddedChannel, Writes) {
        let f = try await Fixture(now: Date())
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: .init()))
        let service = DeviceLinkService.quiet(f, router: router, configuration: DeviceLinkServer.Configuration())
        let channel = EmbeddedChannel()
        let writes = Writes()
        try channel.pipeline.syncOperations.addHandler(writes)
        try LinkHandshakeHandler.configure(channel.pipeline.syncOperations, service: service)
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        return (channel, writes)
    }

    func request(_ headers: String = "") -> String {
        "GET /device/v1 HTTP/1.1\r\nhost: gateway\r\nupgrade: websocket\r\nconnection: upgrade\r\n"
            + "sec-websocket-key: \(Self.key)\r\nsec-websocket-version: 13\r\n\(headers)\r\n"
    }

    @Test func theSwitchAndTheChallengeLeaveInOneFlushAndTheHTTPHandlersAreGone() async throws {
        let (channel, writes) = try await channel()
        // A ping right behind the request, in the same read: the decoder hands it on to the link.
        var bytes = ByteBuffer(string: request())
        bytes.writeBytes([0x89, 0x80, 1, 2, 3, 4])  // a masked ping, no payload
        try channel.writeInbound(bytes)
        // The decoder leaves (and hands on what it read past the request) in a task on the loop.
        channel.embeddedEventLoop.run()
        let out = writes.bytes
        let text = String(decoding: out.readableBytesView, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
        #expect(text.contains("sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"))
        #expect(text.contains("\"challenge\""))
        // The 101 and the challenge in one flush; then the pong on its own.
        let flushes = writes.log.indices.filter { writes.log[$0] == "flush" }
        #expect(flushes.count == 2, "\(writes.log)")
        #expect(writes.log.prefix(through: flushes[0]).filter { $0 == "write" }.count >= 2, "\(writes.log)")
        let afterChallenge = try #require(out.readableBytesView.lastIndex(of: 0x8A), "a pong frame")
        #expect(afterChallenge > out.readableBytesView.firstIndex(of: 0x81)!)
        let sync = channel.pipeline.syncOperations
        #expect(throws: (any Error).self) { try sync.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self) }
        #expect(throws: (any Error).self) { try sync.handler(type: LinkHandshakeHandler.self) }
        #expect(throws: Never.self) { try sync.handler(type: DeviceLinkHandler.self) }
        #expect(channel.isActive)
        _ = try? channel.finish()
    }

    @Test func aRefusedRequestIsAnsweredAndClosed() async throws {
        let cases: [(String, String)] = [
            ("GET /other HTTP/1.1\r\nhost: gateway\r\n\r\n", "HTTP/1.1 404 Not Found\r\n"),
            ("GET /device/v1 HTTP/1.1\r\nhost: gateway\r\n\r\n", "HTTP/1.1 426 Upgrade Required\r\n"),
            (
                request().replacingOccurrences(of: "version: 13", with: "version: 7"),
                "HTTP/1.1 426 Upgrade Required\r\n"
            ),
            ("GET /device/v1 HTTP/1.1\r\nhost gateway\r\n\r\n", "HTTP/1.1 400 Bad Request\r\n"),
        ]
        for (sent, answer) in cases {
            let (channel, writes) = try await channel()
            try channel.writeInbound(ByteBuffer(string: sent))
            let text = String(decoding: writes.bytes.readableBytesView, as: UTF8.self)
            #expect(text.hasPrefix(answer), "\(sent): \(text)")
            #expect(text.contains("connection: close\r\n"))
            #expect(!channel.isActive, "\(sent)")
        }
    }
}

/// Keeps what is written towards the socket, and notes the writes and flushes in order.
private final class Writes: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    var log: [String] = []
    var bytes = ByteBuffer()

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        log.append("write")
        var buffer = unwrapOutboundIn(data)
        bytes.writeBuffer(&buffer)
        promise?.succeed()
    }

    func flush(context: ChannelHandlerContext) {
        log.append("flush")
        context.flush()
    }
}
