import Foundation
import HeraldCore
import HeraldRuntime
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

@testable import HeraldGateway

/// `--idle-timeout` and the request deadline over HTTP/1.1: a provider connection that has been quiet
/// for the whole timeout, with nothing in flight, is closed, in the loop's virtual time. HTTP/2's
/// (GOAWAY `{"reason":"IdleTimeout"}`) are value tests of its connection's state machine, in
/// `ProviderConnectionStateMachineTests`.
@Suite struct IdleTimeoutTests {
    static func configuration(seconds: Int64) -> ProviderAPI.Configuration {
        var configuration = ProviderAPI.Configuration()
        configuration.idleTimeout = .seconds(seconds)
        return configuration
    }

    /// Quiet for the idle timeout after its last request, a connection is closed. A request counts
    /// once the provider has authenticated (its token accepted, whatever the answer); before, the
    /// timeout runs from the connection's start, whatever the client sends.
    @Test(arguments: [true, false])
    func anIdleHTTP1ConnectionIsClosed(authenticated: Bool) async throws {
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
        if authenticated {
            // The token is accepted; the empty body is refused after that.
            try channel.writeInbound(
                ByteBuffer(
                    string:
                        "POST /3/device/\(f.token.hex) HTTP/1.1\r\nhost: localhost\r\napns-topic: \(Fixture.bundle)\r\n"
                        + "authorization: bearer \(f.jwt())\r\ncontent-length: 0\r\n\r\n"))
            var answer = ""
            while let part = try channel.readOutbound(as: ByteBuffer.self) { answer += String(buffer: part) }
            #expect(answer.hasPrefix("HTTP/1.1 400") && answer.contains(#""reason":"PayloadEmpty""#), "\(answer)")
        } else {
            try channel.writeInbound(ByteBuffer(string: "GET /3/device/00 HTTP/1.1\r\nhost: localhost\r\n\r\n"))
            let answer = try #require(try channel.readOutbound(as: ByteBuffer.self))
            #expect(String(buffer: answer).hasPrefix("HTTP/1.1 405"))
            // 60 s from the start, although a request came 30 s ago.
            loop.advanceTime(by: .seconds(29))
            #expect(channel.isActive)
            loop.advanceTime(by: .seconds(1))
            #expect(!channel.isActive)
            return
        }
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

    /// Before authentication a request under way does not keep an HTTP/1.1 connection either: one
    /// whose body is still arriving when the idle deadline comes is closed then, not at the
    /// request's own deadline 5 s later.
    @Test func anUnauthenticatedHTTP1ConnectionIsClosedWithARequestUnderWay() async throws {
        let f = try await Fixture(configuration: Self.configuration(seconds: 60))
        let (channel, loop) = try Self.http1Channel(f)
        loop.advanceTime(by: .seconds(55))
        try channel.writeInbound(
            ByteBuffer(string: "POST /3/device/00 HTTP/1.1\r\nhost: localhost\r\ncontent-length: 10\r\n\r\n{\"aps\""))
        loop.advanceTime(by: .seconds(4))
        #expect(channel.isActive)
        loop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive)
    }

    /// A fault rule's answer counts before authentication over HTTP/1.1 too (as over HTTP/2, in
    /// `ProviderConnectionStateMachineTests`): the connection is closed an idle timeout after the
    /// answer, not after its start.
    @Test func aFaultAnswerBeforeAuthenticationCountsAsActivityOverHTTP1() async throws {
        let f = try await Fixture(configuration: Self.configuration(seconds: 60))
        f.faults.add(FaultRule(topic: Fixture.bundle, reason: .internalServerError))
        let (channel, loop) = try Self.http1Channel(f)
        loop.advanceTime(by: .seconds(30))
        try channel.writeInbound(
            ByteBuffer(
                string:
                    "POST /3/device/\(f.token.hex) HTTP/1.1\r\nhost: localhost\r\napns-topic: \(Fixture.bundle)\r\n"
                    + "authorization: bearer eyJhbGciOiJFUzI1NiJ9.e30.c2ln\r\ncontent-length: 10\r\n\r\n{\"aps\":{}}"))
        var answer = ""
        while let part = try channel.readOutbound(as: ByteBuffer.self) { answer += String(buffer: part) }
        #expect(answer.hasPrefix("HTTP/1.1 500") && answer.contains(#""reason":"InternalServerError""#), "\(answer)")
        // Not at 60 s from the start: 60 s from the answer.
        loop.advanceTime(by: .seconds(59))
        #expect(channel.isActive)
        loop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive)
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
