import Foundation
import HeraldRuntime
import Logging
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

@testable import HeraldGateway

/// The device link's idle deadline: an authenticated link quiet for half of it gets a ping, quiet
/// for all of it is closed; anything from the device (a pong) counts. In the loop's virtual time.
@Suite struct LinkLivenessTests {
    func link(idle: TimeAmount?) async throws -> (EmbeddedChannel, DeviceLinkHandler) {
        let f = try await Fixture(now: Date())
        var configuration = DeviceLinkServer.Configuration()
        configuration.idleTimeout = idle
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: .init()))
        let service = DeviceLinkService(
            directory: f.directory, links: router.links, offline: router.offline,
            configuration: configuration, logger: Logger(label: "test"),
            log: ListenerLog(logger: Logger(label: "test")),
            clock: SystemClock())
        let channel = EmbeddedChannel()
        let handler = DeviceLinkHandler(service: service)
        try channel.pipeline.syncOperations.addHandler(handler)
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        _ = try channel.readOutbound(as: WebSocketFrame.self)  // the challenge
        // As if the device had just been authenticated.
        handler.machine.phase = .online(device: "phone")
        handler.run(handler.machine.startLiveness(now: channel.embeddedEventLoop.now))
        return (channel, handler)
    }

    func outbound(_ channel: EmbeddedChannel) throws -> [WebSocketOpcode] {
        var opcodes: [WebSocketOpcode] = []
        while let frame = try channel.readOutbound(as: WebSocketFrame.self) { opcodes.append(frame.opcode) }
        return opcodes
    }

    @Test func aQuietDeviceIsPingedAtHalfTheDeadlineAndClosedAtAllOfIt() async throws {
        let (channel, _) = try await link(idle: .minutes(10))
        let loop = channel.embeddedEventLoop
        loop.advanceTime(by: .seconds(299))
        #expect(try outbound(channel).isEmpty)
        loop.advanceTime(by: .seconds(1))
        #expect(try outbound(channel) == [.ping])
        // No answer: closed (going away) at ten minutes, not before, and pinged only once.
        loop.advanceTime(by: .seconds(299))
        #expect(try outbound(channel).isEmpty)
        #expect(channel.isActive)
        loop.advanceTime(by: .seconds(1))
        #expect(try outbound(channel) == [.connectionClose])
        #expect(!channel.isActive)
    }

    @Test func aPongKeepsTheLinkAndTheCountStartsAgain() async throws {
        let (channel, _) = try await link(idle: .minutes(10))
        let loop = channel.embeddedEventLoop
        loop.advanceTime(by: .seconds(300))
        #expect(try outbound(channel) == [.ping])
        loop.advanceTime(by: .seconds(100))
        try channel.writeInbound(
            WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: ByteBuffer()))
        // Quiet since 400 s: the next ping comes at 700 s, the close at 1000 s.
        loop.advanceTime(by: .seconds(299))
        #expect(try outbound(channel).isEmpty)
        loop.advanceTime(by: .seconds(1))
        #expect(try outbound(channel) == [.ping])
        loop.advanceTime(by: .seconds(299))
        #expect(channel.isActive)
        loop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive)
    }

    @Test func withoutADeadlineALinkIsNeverPinged() async throws {
        let (channel, _) = try await link(idle: nil)
        channel.embeddedEventLoop.advanceTime(by: .hours(48))
        #expect(try outbound(channel).isEmpty)
        #expect(channel.isActive)
    }
}
