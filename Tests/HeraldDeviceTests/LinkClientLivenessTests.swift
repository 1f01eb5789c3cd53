import Foundation
import HeraldCore
import HeraldRuntime
import Logging
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

@testable import HeraldDevice

/// A gateway that says nothing: the device's link gives up on it in bounded time, in the loop's
/// virtual time. Before the `welcome` the handshake's deadline closes the connection; after it the
/// link pings when it has read nothing for a while, and closes when not even a pong comes back.
@Suite(.timeLimit(.minutes(1))) struct LinkClientLivenessTests {
    /// A gateway's frame as it arrives: unmasked, final, with its opcode (`0x1` text, `0xA` pong).
    static func wire(_ opcode: UInt8, _ payload: [UInt8] = []) -> ByteBuffer {
        var buffer = ByteBuffer(bytes: [0x80 | opcode])
        if payload.count < 126 {
            buffer.writeInteger(UInt8(payload.count))
        } else {
            buffer.writeInteger(UInt8(126))
            buffer.writeInteger(UInt16(payload.count))
        }
        buffer.writeBytes(payload)
        return buffer
    }

    static func wire(_ message: LinkMessage) -> ByteBuffer { wire(0x1, Array(message.encoded())) }

    static let welcome = wire(.welcome(device: "d1", generation: 1, registrations: [], ticket: nil))

    /// The opcodes of the frames the link wrote.
    static func written(_ channel: EmbeddedChannel) throws -> [WebSocketOpcode] {
        var opcodes: [WebSocketOpcode] = []
        while let frame = try channel.readOutbound(as: WebSocketFrame.self) { opcodes.append(frame.opcode) }
        return opcodes
    }

    /// A link handler behind the handshake's deadline, on a connected test channel.
    static func link(handshake: TimeAmount = .seconds(30)) throws -> (
        EmbeddedChannel, EventLoopPromise<LinkClientHandler.Welcome>, AsyncStream<GatewayLinkEvent>
    ) {
        let channel = EmbeddedChannel()
        let welcome = channel.eventLoop.makePromise(of: LinkClientHandler.Welcome.self)
        let (events, continuation) = AsyncStream.makeStream(of: GatewayLinkEvent.self)
        let log = ListenerLog(logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        try channel.pipeline.syncOperations.addHandler(
            FirstBytesDeadline(listener: "device link", deadlines: FirstBytesDeadlines(deadline: handshake), log: log))
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(WebSocketFrameDecoder()))
        try channel.pipeline.syncOperations.addHandler(
            LinkClientHandler(
                identity: DeviceIdentity(deviceID: "d1"), autoAcknowledge: true, welcome: welcome,
                events: continuation))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 5223)).wait()
        return (channel, welcome, events)
    }

    @Test func aGatewayThatNeverWelcomesIsLeftAtTheHandshakesDeadline() throws {
        let channel = EmbeddedChannel()
        let welcome = channel.eventLoop.makePromise(of: LinkClientHandler.Welcome.self)
        let (_, continuation) = AsyncStream.makeStream(of: GatewayLinkEvent.self)
        let target = try GatewayLinkClient.Target(
            url: "ws://127.0.0.1:5223/device/v1", caCertificatePEM: nil, sourceAddress: nil)
        try GatewayLinkClient.configure(
            channel.pipeline.syncOperations, target: target, identity: DeviceIdentity(deviceID: "d1"),
            autoAcknowledge: true, welcome: welcome, events: continuation,
            handshake: FirstBytesDeadlines(deadline: .seconds(30)))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 5223)).wait()
        // The upgrade request went out; the gateway answers nothing.
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(29_999))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
        guard !channel.isActive else { return }  // the welcome would never come
        do {
            _ = try welcome.futureResult.wait()
            Issue.record("welcomed")
        } catch {
            #expect((error as? GatewayLinkFailure)?.message == "no welcome within 30 s of connecting", "\(error)")
        }
    }

    @Test func theWelcomeEndsTheHandshakesDeadline() throws {
        let (channel, welcome, _) = try Self.link()
        try channel.writeInbound(Self.welcome)
        #expect(throws: Never.self) { try welcome.futureResult.wait() }
        #expect(throws: (any Error).self) { try channel.pipeline.syncOperations.handler(type: FirstBytesDeadline.self) }
        channel.embeddedEventLoop.advanceTime(by: .seconds(31))
        #expect(channel.isActive)
    }

    @Test func aSilentGatewayIsPingedAndLeftWhenNotEvenAPongComes() async throws {
        let (channel, _, events) = try Self.link()
        try channel.writeInbound(Self.welcome)
        _ = try Self.written(channel)
        // Two minutes with nothing read: a ping.
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(119_999))
        #expect(try Self.written(channel) == [])
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(try Self.written(channel) == [.ping])
        // The pong: all is well, and the next check is two minutes on.
        try channel.writeInbound(Self.wire(0xA))
        channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        #expect(channel.isActive)
        #expect(try Self.written(channel) == [])
        // A push read in between counts as much as a pong: no ping at the check after it.
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        try channel.writeInbound(
            Self.wire(
                .push(
                    LinkPush(
                        apnsID: "6e1f2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b", uniqueID: nil, topic: "com.example.demo",
                        token: DeviceToken(bytes: Array(repeating: 7, count: 32)), environment: .development,
                        pushType: .alert, priority: .immediate, expiration: nil, collapseID: nil,
                        payload: Data(#"{"aps":{"alert":"hi"}}"#.utf8)))))
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(try Self.written(channel).filter { $0 == .ping } == [])
        // Then silence: a ping at the next check, and no answer within 30 s closes the link.
        channel.embeddedEventLoop.advanceTime(by: .seconds(120))
        #expect(try Self.written(channel) == [.ping])
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(29_999))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
        guard !channel.isActive else { return }  // the events would never end
        var last: GatewayLinkEvent?
        for await event in events { last = event }
        #expect(last == .closed(reason: "the gateway sent nothing for 120 s and answered no ping within 30 s"))
    }

    /// A gateway that keeps the link alive but answers no request: the request fails after 30 s
    /// and the link closes (the daemon connects again); an answered one stops its deadline.
    @Test func aRequestWithoutAnAnswerFailsAfterThirtySecondsAndClosesTheLink() throws {
        let (channel, _, _) = try Self.link()
        try channel.writeInbound(Self.welcome)
        _ = try Self.written(channel)
        let handler = try channel.pipeline.syncOperations.handler(type: LinkClientHandler.self)
        func register() -> EventLoopPromise<LinkMessage> {
            let promise = channel.eventLoop.makePromise(of: LinkMessage.self)
            handler.request(
                { .register(request: $0, topic: "com.example.demo", environment: .development, installation: nil) },
                promise: promise)
            return promise
        }
        // Answered within the time: its deadline goes.
        let first = register()
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        let registration = LinkRegistration(
            topic: "com.example.demo", environment: .development,
            token: DeviceToken(bytes: Array(repeating: 7, count: 32)))
        try channel.writeInbound(Self.wire(.token(request: 1, registration)))
        #expect(try first.futureResult.wait() == .token(request: 1, registration))
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(channel.isActive)

        // Not answered.
        let second = register()
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(29_999))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
        guard !channel.isActive else { return }  // the answer would never come
        do {
            _ = try second.futureResult.wait()
            Issue.record("answered")
        } catch {
            #expect(
                (error as? GatewayLinkFailure)?.message == "the gateway answered no request within 30 s", "\(error)")
        }
    }
}
