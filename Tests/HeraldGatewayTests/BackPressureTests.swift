import Foundation
import HeraldRuntime
import NIOCore
import NIOEmbedded
import Testing

@testable import HeraldGateway

/// A peer that sends and never reads: the provider API's HTTP/1.1 connections and the device link
/// stop reading while their unsent answers are above the channel's high-water mark, and read again
/// once they have left, so the answers to what it sends cannot pile up in the gateway's memory.
@Suite struct BackPressureTests {
    /// Counts the reads that reach the socket (it sits where the socket would be).
    final class SocketReads: ChannelOutboundHandler {
        typealias OutboundIn = NIOAny
        var count = 0
        func read(context: ChannelHandlerContext) {
            count += 1
            context.read()
        }
    }

    /// A read asked for while `channel` cannot write waits, and reaches the socket when it can.
    static func expectReadsWaitForWritability(_ channel: EmbeddedChannel, _ reads: SocketReads) {
        let before = reads.count
        channel.read()
        #expect(reads.count == before + 1, "a writable channel reads")
        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        channel.read()
        channel.read()
        #expect(reads.count == before + 1, "no read while the answers wait")
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(reads.count == before + 2, "the read asked for meanwhile, once the answers left")
    }

    @Test func aProviderHTTP1ConnectionStopsReadingWhileItsAnswersWait() async throws {
        let f = try await Fixture()
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: OfflinePolicy()))
        let channel = EmbeddedChannel()
        let reads = SocketReads()
        try channel.pipeline.syncOperations.addHandler(reads)
        try ProviderPipeline(
            api: f.api, router: router, clock: ManualClock(now: Date(timeIntervalSince1970: 1_800_000_000))
        )
        .http1(channel.pipeline.syncOperations, ProviderConnectionState(defaultEnvironment: .development))
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        // Two pipelined requests, both answered.
        let request = "GET /3/device/00 HTTP/1.1\r\nhost: localhost\r\n\r\n"
        try channel.writeInbound(ByteBuffer(string: request + request))
        var answers = ""
        while let part = try channel.readOutbound(as: ByteBuffer.self) { answers += String(buffer: part) }
        #expect(answers.components(separatedBy: "HTTP/1.1 405").count == 3, "\(answers)")
        Self.expectReadsWaitForWritability(channel, reads)
        #expect(channel.isActive)
    }

    @Test func aDeviceLinkStopsReadingWhileItsAnswersWait() async throws {
        let h = try await LinkBench()
        let channel = EmbeddedChannel()
        let reads = SocketReads()
        try channel.pipeline.syncOperations.addHandler(reads)
        try DeviceLinkServer.configure(
            channel.pipeline.syncOperations, service: h.service, tls: nil,
            firstBytes: FirstBytesDeadlines(deadline: .seconds(10)))
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        Self.expectReadsWaitForWritability(channel, reads)
        // Before the first byte and after the upgrade alike: the handler stays at the socket's end.
        try channel.writeInbound(
            ByteBuffer(
                string: "GET /device/v1 HTTP/1.1\r\nhost: gateway\r\nupgrade: websocket\r\nconnection: upgrade\r\n"
                    + "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n\r\n"))
        let answer = String(buffer: try #require(try channel.readOutbound(as: ByteBuffer.self)))
        #expect(answer.hasPrefix("HTTP/1.1 101"), "\(answer)")
        Self.expectReadsWaitForWritability(channel, reads)
    }
}
