import Foundation
import HeraldCore
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOWebSocket
import Testing

@testable import HeraldDevice

/// The device's side of the link's opening handshake: the request it writes, the answers it takes
/// and the pipeline it leaves behind.
@Suite struct LinkClientHandshakeTests {
    /// A handshake on a test channel, its link handler's welcome and the failures it reported.
    fileprivate func channel() async throws -> (EmbeddedChannel, Failures) {
        let channel = EmbeddedChannel()
        let failures = Failures()
        let (_, continuation) = AsyncStream.makeStream(of: GatewayLinkEvent.self)
        let welcome = channel.eventLoop.makePromise(of: LinkClientHandler.Welcome.self)
        try LinkClientHandshake.configure(
            channel.pipeline.syncOperations, host: "127.0.0.2", port: 5223, path: DeviceLink.path,
            link: {
                LinkClientHandler(
                    identity: DeviceIdentity(deviceID: "d1"), autoAcknowledge: true, welcome: welcome,
                    events: continuation)
            },
            failed: { failures.all.append($0) })
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.2", port: 5223)).get()
        return (channel, failures)
    }

    func written(_ channel: EmbeddedChannel) throws -> String {
        var text = ""
        while let part = try channel.readOutbound(as: IOData.self) {
            guard case .byteBuffer(let buffer) = part else { continue }
            text += String(decoding: buffer.readableBytesView, as: UTF8.self)
        }
        return text
    }

    /// The request's `sec-websocket-key`.
    func key(_ request: String) throws -> String {
        let line = try #require(request.split(separator: "\r\n").first { $0.hasPrefix("sec-websocket-key: ") })
        return String(line.dropFirst("sec-websocket-key: ".count))
    }

    @Test func theRequestUpgradesThePathAndAnAcceptedSwitchHandsTheChallengeToTheLink() async throws {
        let (channel, failures) = try await channel()
        let request = try written(channel)
        #expect(request.hasPrefix("GET /device/v1 HTTP/1.1\r\n"))
        for line in ["host: 127.0.0.2:5223", "upgrade: websocket", "connection: upgrade", "sec-websocket-version: 13"] {
            #expect(request.contains(line + "\r\n"), "\(line)")
        }
        let key = try key(request)
        #expect(Data(base64Encoded: key)?.count == 16)
        // The 101 and the challenge in one read, as the gateway writes them.
        var answer = ByteBuffer(
            string: "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n"
                + "sec-websocket-accept: \(DeviceLink.webSocketAccept(key: key))\r\n\r\n")
        let challenge = LinkMessage.challenge(nonce: Data(repeating: 9, count: 32)).encoded()
        answer.writeBytes([0x81, UInt8(challenge.count)])
        answer.writeBytes(challenge)
        try channel.writeInbound(answer)
        // The decoder leaves (and hands on what it read past the 101) in a task on the loop.
        channel.embeddedEventLoop.run()
        #expect(failures.all.isEmpty)
        // The link answered the challenge: a masked frame (the first byte a text frame's, the
        // second with the mask bit).
        var hello = ByteBuffer()
        while let part = try channel.readOutbound(as: ByteBuffer.self) { hello.writeImmutableBuffer(part) }
        #expect(hello.readableBytesView.first == 0x81)
        #expect(hello.readableBytesView.dropFirst().first.map { $0 & 0x80 } == 0x80)
        let sync = channel.pipeline.syncOperations
        #expect(throws: (any Error).self) { try sync.handler(type: ByteToMessageHandler<HTTPResponseDecoder>.self) }
        #expect(throws: (any Error).self) { try sync.handler(type: HTTPRequestEncoder.self) }
        #expect(throws: (any Error).self) { try sync.handler(type: LinkClientHandshake.self) }
        #expect(throws: Never.self) { try sync.handler(type: LinkClientHandler.self) }
        _ = try? channel.finish()
    }

    /// A device holding a ticket puts its resumption in the request, its proof over the request's
    /// own key; one without sends no such header.
    @Test func theRequestCarriesTheResumptionForItsOwnKey() throws {
        let ticket = LinkTicket(ticket: Data([1, 2, 3]), secret: Data(repeating: 5, count: 32), expires: 1)
        let key = "dGhlIHNhbXBsZSBub25jZQ=="
        let resume = DeviceLink.UpgradeResume(device: "d1", ticket: ticket, webSocketKey: key, time: 1_800_000_000)
        let head = LinkClientHandshake.request(
            host: "127.0.0.2", port: 5223, path: DeviceLink.path, key: key, resume: resume)
        #expect(head.headers["herald-resume"] == [resume.headerValue])
        #expect(
            LinkClientHandshake.request(host: "127.0.0.2", port: 5223, path: DeviceLink.path, key: key)
                .headers["herald-resume"].isEmpty)
        // The handshake asks for the resumption with the key it chose.
        let seen = Failures()
        let handshake = LinkClientHandshake(
            host: "127.0.0.2", port: 5223, path: DeviceLink.path, encoder: HTTPRequestEncoder(),
            decoder: ByteToMessageHandler(HTTPResponseDecoder()),
            resume: { key in
                seen.keys.append(key)
                return DeviceLink.UpgradeResume(device: "d1", ticket: ticket, webSocketKey: key, time: 1_800_000_000)
            },
            link: { fatalError("not reached") }, failed: { _ in })
        let sent = try #require(seen.keys.first)
        #expect(handshake.request.headers["sec-websocket-key"] == [sent])
        #expect(
            handshake.request.headers["herald-resume"]
                == [
                    DeviceLink.UpgradeResume(device: "d1", ticket: ticket, webSocketKey: sent, time: 1_800_000_000)
                        .headerValue
                ])
    }

    /// A `400` to a request that carried the ticket (a gateway or proxy that cannot take the
    /// header) makes the device let the ticket go, so that its next attempt goes without it; any
    /// other refusal, or a `400` to a request without one, keeps it.
    @Test func aBadRequestToARequestWithTheTicketLetsTheTicketGo() throws {
        let ticket = LinkTicket(ticket: Data([1, 2, 3]), secret: Data(repeating: 5, count: 32), expires: 1)
        for (status, carried, forgets) in [
            ("400 Bad Request", true, true), ("404 Not Found", true, false), ("400 Bad Request", false, false),
        ] {
            let channel = EmbeddedChannel()
            let forgot = Failures()
            try LinkClientHandshake.configure(
                channel.pipeline.syncOperations, host: "127.0.0.2", port: 5223, path: DeviceLink.path,
                resume: { key in
                    carried
                        ? DeviceLink.UpgradeResume(device: "d1", ticket: ticket, webSocketKey: key, time: 1_800_000_000)
                        : nil
                },
                link: { fatalError("not reached") }, failed: { forgot.all.append($0) },
                refusedResume: { forgot.keys.append("forgot") })
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.2", port: 5223)).wait()
            _ = try written(channel)
            try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 \(status)\r\ncontent-length: 0\r\n\r\n"))
            #expect(forgot.all.first?.code == .notUpgraded, "\(status)")
            #expect(forgot.keys == (forgets ? ["forgot"] : []), "\(status), ticket carried: \(carried)")
            _ = try? channel.finish()
        }
    }

    @Test func anAnswerThatIsNoAcceptedSwitchFailsTheLink() async throws {
        let answers: [(String, String)] = [
            ("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n", "404 Not Found"),
            (
                "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n"
                    + "sec-websocket-accept: s3pPLMBiTxaQ9kYGJzo5+C5xlYo=\r\n\r\n", "Sec-WebSocket-Accept"
            ),
            ("HTTP/1.1 101 Switching Protocols\r\nupgrade: h2c\r\nconnection: upgrade\r\n\r\n", "WebSocket"),
        ]
        for (text, reason) in answers {
            let (channel, failures) = try await channel()
            _ = try written(channel)
            try channel.writeInbound(ByteBuffer(string: text))
            let failure = try #require(failures.all.first, "\(text)")
            #expect(failure.code == .notUpgraded)
            #expect(failure.message.contains(reason), "\(failure.message)")
            #expect(!channel.isActive)
        }
    }
}

/// The failures a handshake reported.
fileprivate final class Failures: @unchecked Sendable {
    var all: [GatewayLinkFailure] = []
    /// The keys a handshake asked a resumption for.
    var keys: [String] = []
}
