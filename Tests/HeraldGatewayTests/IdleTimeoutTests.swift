import Foundation
import HeraldCore
import HeraldRuntime
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

    @Test func byDefaultAConnectionQuietForAnHourGetsGoAway() async throws {
        let f = try await Fixture()
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: OfflinePolicy()))
        let pair = try HTTP2Pair(api: f.api, router: router)
        let loop = pair.server.embeddedEventLoop
        loop.advanceTime(by: .seconds(3599))
        try pair.exchange()
        #expect(Self.goAways(pair).isEmpty)
        loop.advanceTime(by: .seconds(1))
        try pair.exchange()
        #expect(Self.goAways(pair).map(\.data) == [#"{"reason":"IdleTimeout"}"#])
    }

    @Test func withoutATimeoutAConnectionStaysOpen() async throws {
        var configuration = ProviderAPI.Configuration()
        configuration.idleTimeout = nil
        let f = try await Fixture(configuration: configuration)
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
        try ProviderPipeline(
            api: f.api, router: router,
            clock: ManualClock(now: Date(timeIntervalSince1970: 1_800_000_000))
        ).http1(channel.pipeline.syncOperations, ProviderConnectionState(defaultEnvironment: .development))
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

    /// An HTTP/1.1 channel of the provider API with a 10 s request deadline, on virtual time.
    static func http1Channel(_ f: Fixture, idle seconds: Int64 = 60) throws -> (EmbeddedChannel, EmbeddedEventLoop) {
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: OfflinePolicy()))
        let channel = EmbeddedChannel()
        let loop = channel.embeddedEventLoop
        try ProviderPipeline(
            api: f.api, router: router,
            clock: ManualClock(now: Date(timeIntervalSince1970: 1_800_000_000)),
            requestDeadline: .seconds(10)
        ).http1(channel.pipeline.syncOperations, ProviderConnectionState(defaultEnvironment: .development))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, loop)
    }

    @Test func aHeadSentAByteAtATimeAfterAnAnsweredRequestIsClosedAtTheRequestDeadline() async throws {
        let f = try await Fixture(configuration: Self.configuration(seconds: 3600))
        let (channel, loop) = try Self.http1Channel(f)
        try channel.writeInbound(ByteBuffer(string: "GET /3/device/00 HTTP/1.1\r\nhost: localhost\r\n\r\n"))
        #expect(String(buffer: try #require(try channel.readOutbound(as: ByteBuffer.self))).hasPrefix("HTTP/1.1 405"))
        // Keep-alive: quiet for a minute is fine (the idle deadline is an hour).
        loop.advanceTime(by: .seconds(60))
        #expect(channel.isActive)
        // Then a head, one byte a second: every byte is activity, but the request never arrives whole.
        for byte in "POST /3/device/00 HTTP/1.1\r\nhost: l".utf8.prefix(10) {
            try channel.writeInbound(ByteBuffer(bytes: [byte]))
            loop.advanceTime(by: .seconds(1))
        }
        #expect(!channel.isActive)
    }

    @Test func aBodyThatNeverEndsIsClosedAtTheRequestDeadlineAndAWholeRequestIsNot() async throws {
        let f = try await Fixture(configuration: Self.configuration(seconds: 3600))
        let (channel, loop) = try Self.http1Channel(f)
        try channel.writeInbound(
            ByteBuffer(string: "POST /3/device/00 HTTP/1.1\r\nhost: localhost\r\ncontent-length: 100\r\n\r\n{"))
        loop.advanceTime(by: .milliseconds(9_999))
        #expect(channel.isActive)
        loop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)

        // The same body sent whole, slowly but within the deadline: answered, and the connection stays.
        let (whole, wholeLoop) = try Self.http1Channel(f)
        try whole.writeInbound(
            ByteBuffer(string: "POST /3/device/00 HTTP/1.1\r\nhost: localhost\r\ncontent-length: 2\r\n\r\n{"))
        wholeLoop.advanceTime(by: .seconds(9))
        try whole.writeInbound(ByteBuffer(string: "}"))
        #expect(String(buffer: try #require(try whole.readOutbound(as: ByteBuffer.self))).hasPrefix("HTTP/1.1 "))
        wholeLoop.advanceTime(by: .seconds(30))
        #expect(whole.isActive)
    }
}
