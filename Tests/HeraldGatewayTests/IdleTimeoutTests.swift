import Foundation
import HeraldCore
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

@testable import HeraldGateway

/// `--idle-timeout`: a provider connection that has been quiet for the whole timeout, with nothing
/// in flight, is closed (HTTP/2: GOAWAY `{"reason":"IdleTimeout"}`), in the loop's virtual time.
@Suite struct IdleTimeoutTests {
    static func configuration(seconds: Int64) -> ProviderAPI.Configuration {
        var configuration = ProviderAPI.Configuration()
        configuration.idleTimeout = .seconds(seconds)
        return configuration
    }

    static func goAways(_ pair: HTTP2Pair) -> [(code: HTTP2ErrorCode, data: String)] {
        pair.collector.frames.compactMap { frame in
            guard case .goAway(_, let code, let data) = frame.payload else { return nil }
            return (code, data.map { String(buffer: $0) } ?? "")
        }
    }

    @Test func aQuietConnectionGetsGoAwayIdleTimeoutAndAPingCountsAsActivity() async throws {
        let f = try await Fixture(configuration: Self.configuration(seconds: 60))
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: OfflinePolicy()))
        let pair = try HTTP2Pair(api: f.api, router: router)
        let loop = pair.server.embeddedEventLoop

        loop.advanceTime(by: .seconds(59))
        try pair.exchange()
        #expect(Self.goAways(pair).isEmpty)
        try pair.send(HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(withInteger: 1), ack: false)))

        // 59 s after the PING: still open.
        loop.advanceTime(by: .seconds(59))
        try pair.exchange()
        #expect(Self.goAways(pair).isEmpty)
        #expect(pair.server.isActive)

        // 60 s after it: GOAWAY with NO_ERROR and the reason, then the connection closes.
        loop.advanceTime(by: .seconds(1))
        try pair.exchange()
        let goAways = Self.goAways(pair)
        #expect(goAways.count == 1)
        #expect(goAways.first?.code == .noError)
        #expect(goAways.first?.data == #"{"reason":"IdleTimeout"}"#)
        #expect(!pair.server.isActive)
    }

    @Test func aRequestInFlightKeepsTheConnectionOpenAndItsAnswerCountsAsActivity() async throws {
        let f = try await Fixture(configuration: Self.configuration(seconds: 60))
        // Answered 500 after 90 s: the request stays in flight across a whole idle period.
        f.faults.add(FaultRule(topic: Fixture.bundle, reason: .internalServerError, delayMilliseconds: 90_000))
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: OfflinePolicy()))
        let pair = try HTTP2Pair(api: f.api, router: router)
        let loop = pair.server.embeddedEventLoop
        var headers = HPACKHeaders()
        for (name, value) in [
            (":method", "POST"), (":path", "/3/device/\(f.token.hex)"), (":scheme", "https"),
            (":authority", "localhost"), ("apns-topic", Fixture.bundle), ("authorization", "bearer \(f.jwt())"),
        ] { headers.add(name: name, value: value) }
        try pair.send(HTTP2Frame(streamID: 1, payload: .headers(.init(headers: headers))))
        try pair.send(
            HTTP2Frame(
                streamID: 1,
                payload: .data(.init(data: .byteBuffer(ByteBuffer(string: #"{"aps":{}}"#)), endStream: true))))

        loop.advanceTime(by: .seconds(89))
        try pair.exchange()
        #expect(Self.goAways(pair).isEmpty)
        // The answer at 90 s; the connection then has 60 s more.
        loop.advanceTime(by: .seconds(1))
        try pair.exchange()
        let statuses = pair.collector.frames.compactMap { frame -> String? in
            if case .headers(let h) = frame.payload { return h.headers.first(name: ":status") }
            return nil
        }
        #expect(statuses == ["500"])
        loop.advanceTime(by: .seconds(59))
        try pair.exchange()
        #expect(Self.goAways(pair).isEmpty)
        loop.advanceTime(by: .seconds(1))
        try pair.exchange()
        #expect(Self.goAways(pair).map(\.data) == [#"{"reason":"IdleTimeout"}"#])
    }

    @Test func withoutATimeoutAConnectionStaysOpen() async throws {
        let f = try await Fixture()
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: OfflinePolicy()))
        let pair = try HTTP2Pair(api: f.api, router: router)
        pair.server.embeddedEventLoop.advanceTime(by: .hours(48))
        try pair.exchange()
        #expect(Self.goAways(pair).isEmpty)
        #expect(pair.server.isActive)
    }

    @Test func anIdleHTTP1ConnectionIsClosed() async throws {
        let f = try await Fixture(configuration: Self.configuration(seconds: 60))
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: OfflinePolicy()))
        let channel = EmbeddedChannel()
        let loop = channel.embeddedEventLoop
        try configureHTTP1(
            channel.pipeline.syncOperations, f.api, router, ProviderConnectionState(defaultEnvironment: .development),
            { Date(timeIntervalSince1970: 1_800_000_000 + Double(loop.now.uptimeNanoseconds) / 1e9) })
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()

        loop.advanceTime(by: .seconds(30))
        try channel.writeInbound(ByteBuffer(string: "GET /3/device/00 HTTP/1.1\r\nhost: localhost\r\n\r\n"))
        let answer = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(String(buffer: answer).hasPrefix("HTTP/1.1 405"))
        loop.advanceTime(by: .seconds(59))
        #expect(channel.isActive)
        loop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive)
    }
}
