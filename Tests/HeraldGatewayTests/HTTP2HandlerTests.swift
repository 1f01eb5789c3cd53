import Foundation
import HeraldCore
import HeraldRuntime
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

@testable import HeraldGateway

/// Collects the frames the client side of a connection receives.
final class FrameCollector: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    var frames: [HTTP2Frame] = []
    func channelRead(context: ChannelHandlerContext, data: NIOAny) { frames.append(unwrapInboundIn(data)) }
}

/// A client and the gateway's HTTP/2 pipeline joined in memory, without sockets.
struct HTTP2Pair {
    let client = EmbeddedChannel()
    let server = EmbeddedChannel()
    let collector = FrameCollector()

    /// The gateway's dates stand at 1_800_000_000 (UNIX seconds); its timers run on the server loop's
    /// virtual time, which `server.embeddedEventLoop.advanceTime(by:)` moves. A client that does not
    /// `validate` its header blocks and content-lengths can send malformed ones.
    init(
        api: ProviderAPI, router: PushRouter, validate: Bool = true,
        first: (ChannelPipeline.SynchronousOperations) throws -> Void = { _ in }
    ) throws {
        try first(server.pipeline.syncOperations)
        try ProviderPipeline(
            api: api, router: router,
            clock: ManualClock(now: Date(timeIntervalSince1970: 1_800_000_000))
        ).http2(server.pipeline.syncOperations, ProviderConnectionState(defaultEnvironment: .development))
        try client.pipeline.syncOperations.addHandler(
            NIOHTTP2Handler(
                mode: .client, headerBlockValidation: validate ? .enabled : .disabled,
                contentLengthValidation: validate ? .enabled : .disabled))
        try client.pipeline.syncOperations.addHandler(collector)
        try client.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try server.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 2)).wait()
        try exchange()
    }

    /// Moves bytes both ways until neither side has anything to send. The gateway's side writes
    /// once per turn of its loop: the loop runs the tasks due now (its virtual time stands).
    func exchange() throws {
        try carryBytes(between: client, and: server, runningServerLoop: true)
    }

    /// A request the gateway answers 400 `BadDeviceToken` at once (a well-formed token that is too short).
    static func badTokenRequest(jwt: String) -> HPACKHeaders {
        var headers = HPACKHeaders()
        for (name, value) in [
            (":method", "POST"), (":path", "/3/device/00"), (":scheme", "https"), (":authority", "localhost"),
            ("apns-topic", Fixture.bundle), ("authorization", "bearer \(jwt)"),
        ] { headers.add(name: name, value: value) }
        return headers
    }

    func send(_ frame: HTTP2Frame) throws {
        try client.writeOutbound(frame)
        try exchange()
    }
}

/// Records the closes the gateway asks for, in front of the channel, and holds back a close of the
/// output only (an `EmbeddedChannel` would close whole for it): what a socket's half-close leaves
/// open stays open here.
final class CloseRecorder: ChannelOutboundHandler {
    typealias OutboundIn = NIOAny
    var modes: [CloseMode] = []
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        modes.append(mode)
        if mode == .output { promise?.succeed(()) } else { context.close(mode: mode, promise: promise) }
    }
}

/// Records how the gateway asks each answer header to be indexed, on its way to the HTTP/2 codec.
final class AnswerIndexingRecorder: ChannelOutboundHandler {
    typealias OutboundIn = HTTP2Frame
    var answers: [[(name: String, indexing: HPACKIndexing)]] = []
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .headers(let h) = unwrapOutboundIn(data).payload {
            answers.append(h.headers.map { (name: $0.name, indexing: $0.indexable) })
        }
        context.write(data, promise: promise)
    }
}

@Suite struct HTTP2HandlerTests {
    @Test func settingsPingAndAnAnswerOnTheStream() async throws {
        let f = try await Fixture()
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: OfflinePolicy()))
        let pair = try HTTP2Pair(api: f.api, router: router)
        // The server's SETTINGS advertise 1000 concurrent streams.
        let settings = pair.collector.frames.compactMap { frame -> HTTP2Settings? in
            if case .settings(.settings(let s)) = frame.payload { return s }
            return nil
        }
        #expect(settings.first?.contains(HTTP2Setting(parameter: .maxConcurrentStreams, value: 1000)) == true)

        // PING is answered with the same data.
        let data = HTTP2PingData(withInteger: 0x4845_5241_4C44)
        try pair.send(HTTP2Frame(streamID: .rootStream, payload: .ping(data, ack: false)))
        #expect(
            pair.collector.frames.contains { frame in
                if case .ping(let echoed, ack: true) = frame.payload { return echoed == data }
                return false
            })

        // A request with a bad token is answered on its stream; the connection stays open.
        let headers = HTTP2Pair.badTokenRequest(jwt: f.jwt())
        let stream = HTTP2StreamID(1)
        try pair.send(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: headers))))
        try pair.send(
            HTTP2Frame(
                streamID: stream, payload: .data(.init(data: .byteBuffer(ByteBuffer(string: "{}")), endStream: true))))
        let answer = pair.collector.frames.compactMap { frame -> HPACKHeaders? in
            if frame.streamID == stream, case .headers(let h) = frame.payload { return h.headers }
            return nil
        }
        #expect(answer.first?.first(name: ":status") == "400")
        let body = pair.collector.frames.compactMap { frame -> String? in
            if frame.streamID == stream, case .data(let d) = frame.payload, case .byteBuffer(let b) = d.data {
                return String(buffer: b)
            }
            return nil
        }
        #expect(body == [#"{"reason":"BadDeviceToken"}"#])
        #expect(pair.server.isActive)
    }

    /// The first answer on a connection enters `apns-id` into the HPACK dynamic table, so later
    /// answers refer to the name by index; the values themselves are never indexed after that.
    @Test func answerHeaderNamesAreIndexedOnceThenReferredTo() async throws {
        let f = try await Fixture()
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: OfflinePolicy()))
        let pair = try HTTP2Pair(api: f.api, router: router)
        let recorder = AnswerIndexingRecorder()
        let codec = try pair.server.pipeline.syncOperations.handler(type: NIOHTTP2Handler.self)
        try pair.server.pipeline.syncOperations.addHandler(recorder, position: .after(codec))
        var ids: [String] = []
        let jwt = f.jwt()  // one token for the connection: a new one per request would be refused
        for n in 0..<3 {
            let headers = HTTP2Pair.badTokenRequest(jwt: jwt)
            let stream = HTTP2StreamID(2 * n + 1)
            try pair.send(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: headers))))
            try pair.send(
                HTTP2Frame(
                    streamID: stream,
                    payload: .data(.init(data: .byteBuffer(ByteBuffer(string: "{}")), endStream: true))))
            let answer = pair.collector.frames.compactMap { frame -> HPACKHeaders? in
                if frame.streamID == stream, case .headers(let h) = frame.payload { return h.headers }
                return nil
            }
            #expect(answer.first?.first(name: ":status") == "400")
            ids += answer.first?.first(name: "apns-id").map { [$0] } ?? []
        }
        // Each answer carries its own identifier, decoded intact by the client.
        #expect(ids.count == 3 && Set(ids).count == 3)
        #expect(ids.allSatisfy { ProviderAPI.isCanonicalUUID($0) })
        let idIndexing = recorder.answers.map { answer in answer.first { $0.name == "apns-id" }?.indexing }
        #expect(idIndexing == [.indexable, .nonIndexable, .nonIndexable])
        // Nothing that changes from answer to answer is indexed.
        let lengthIndexing = recorder.answers.map { answer in answer.first { $0.name == "content-length" }?.indexing }
        #expect(lengthIndexing == [.nonIndexable, .nonIndexable, .nonIndexable])
        #expect(pair.server.isActive)
    }

    static func goAways(_ pair: HTTP2Pair) -> [(code: HTTP2ErrorCode, data: String)] {
        pair.collector.frames.compactMap { frame in
            guard case .goAway(_, let code, let data) = frame.payload else { return nil }
            return (code, data.map { String(buffer: $0) } ?? "")
        }
    }

    /// A gateway with a 60 s idle timeout, a client joined to it, and the server's loop.
    static func idlePair() async throws -> (Fixture, HTTP2Pair, EmbeddedEventLoop) {
        let f = try await Fixture(configuration: IdleTimeoutTests.configuration(seconds: 60))
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: OfflinePolicy()))
        let pair = try HTTP2Pair(api: f.api, router: router)
        return (f, pair, pair.server.embeddedEventLoop)
    }

    /// The handler arms the machine's idle timer on the loop and writes its GOAWAY: NO_ERROR with
    /// the reason, then the connection closes (the timing itself is in
    /// `ProviderConnectionStateMachineTests`).
    @Test func anIdleConnectionGetsGoAwayIdleTimeoutOnTheWireAndCloses() async throws {
        let (_, pair, loop) = try await Self.idlePair()
        loop.advanceTime(by: .seconds(59))
        try pair.exchange()
        #expect(Self.goAways(pair).isEmpty)
        #expect(pair.server.isActive)
        loop.advanceTime(by: .seconds(1))
        try pair.exchange()
        let goAways = Self.goAways(pair)
        #expect(goAways.count == 1)
        #expect(goAways.first?.code == .noError)
        #expect(goAways.first?.data == #"{"reason":"IdleTimeout"}"#)
        #expect(!pair.server.isActive)
    }

    /// On the wire, PINGs keep a connection from its idle deadline only once its provider has
    /// authenticated: every PING is answered, but a connection that only pings gets its GOAWAY
    /// `IdleTimeout` 60 s after it opened, and one that first sent a request with an accepted token
    /// is still open then.
    @Test(arguments: [false, true])
    func pingsKeepAConnectionOpenOnlyOnceItHasAuthenticated(authenticate: Bool) async throws {
        let (f, pair, loop) = try await Self.idlePair()
        if authenticate {
            // The token is accepted; the request itself is refused for its empty body.
            let headers = ProviderConnectionStateMachineTests.headers(path: "/3/device/\(f.token.hex)", jwt: f.jwt())
            try pair.send(HTTP2Frame(streamID: 1, payload: .headers(.init(headers: headers, endStream: true))))
            let reasons = pair.collector.frames.compactMap { frame -> String? in
                if frame.streamID == 1, case .data(let d) = frame.payload, case .byteBuffer(let b) = d.data {
                    return String(buffer: b)
                }
                return nil
            }
            #expect(reasons == [#"{"reason":"PayloadEmpty"}"#])
        }
        // PINGs at 15, 30 and 45 s, each answered.
        for _ in 0..<3 {
            loop.advanceTime(by: .seconds(15))
            try pair.send(HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(withInteger: 7), ack: false)))
            try pair.exchange()
        }
        let answered = pair.collector.frames.filter { frame in
            if case .ping(_, ack: true) = frame.payload { return true }
            return false
        }
        #expect(answered.count == 3)
        // 60 s after the connection opened.
        loop.advanceTime(by: .seconds(15))
        try pair.exchange()
        if authenticate {
            #expect(Self.goAways(pair).isEmpty)
            #expect(pair.server.isActive)
            // 60 s after the last PING, it is idle.
            loop.advanceTime(by: .seconds(45))
            try pair.exchange()
        }
        #expect(Self.goAways(pair).map(\.data) == [#"{"reason":"IdleTimeout"}"#])
        #expect(!pair.server.isActive)
    }

    /// An unauthenticated connection with a stream open when its idle deadline comes gets its
    /// GOAWAY and stays open for that stream only: once the client resets it, or it is answered at
    /// once, the connection closes.
    @Test(arguments: [false, true])
    func aDrainedConnectionClosesWhenItsLastStreamEnds(answered: Bool) async throws {
        let (_, pair, loop) = try await Self.idlePair()
        loop.advanceTime(by: .seconds(55))
        try pair.send(HTTP2Frame(streamID: 1, payload: .headers(.init(headers: HTTP2Pair.badTokenRequest(jwt: "x")))))
        loop.advanceTime(by: .seconds(5))
        try pair.exchange()
        #expect(Self.goAways(pair).map(\.data) == [#"{"reason":"IdleTimeout"}"#])
        #expect(pair.server.isActive)
        if answered {
            try pair.send(
                HTTP2Frame(
                    streamID: 1, payload: .data(.init(data: .byteBuffer(ByteBuffer(string: "{}")), endStream: true))))
            let statuses = pair.collector.frames.compactMap { frame -> String? in
                if frame.streamID == 1, case .headers(let h) = frame.payload { return h.headers.first(name: ":status") }
                return nil
            }
            // Answered at once (its token is refused).
            #expect(statuses == ["403"])
        } else {
            try pair.send(HTTP2Frame(streamID: 1, payload: .rstStream(.cancel)))
        }
        try pair.exchange()
        #expect(!pair.server.isActive)
    }

    /// A fault rule's GOAWAY answered at once half-closes the connection and reads what the client
    /// still sends for a second before it closes, so that no reset overtakes the GOAWAY: a draining
    /// connection with nothing left, which the end of a read closes, does not cut that second short.
    @Test func aFaultRulesGoAwayKeepsItsSecondOfReading() async throws {
        let f = try await Fixture()
        var rule = FaultRule(reason: .internalServerError)
        rule.connection = .goaway
        f.faults.add(rule)
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: OfflinePolicy()))
        let closes = CloseRecorder()
        let pair = try HTTP2Pair(api: f.api, router: router) { try $0.addHandler(closes) }
        let loop = pair.server.embeddedEventLoop
        let headers = ProviderConnectionStateMachineTests.headers(path: "/3/device/\(f.token.hex)", jwt: f.jwt())
        try pair.send(HTTP2Frame(streamID: 1, payload: .headers(.init(headers: headers, endStream: true))))
        #expect(Self.goAways(pair).map(\.data) == [#"{"reason":"InternalServerError"}"#])
        // The client sends more (a PING): read and dropped, the connection still there.
        try pair.send(HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(withInteger: 1), ack: false)))
        #expect(closes.modes == [.output])
        #expect(pair.server.isActive)
        loop.advanceTime(by: .seconds(1))
        #expect(closes.modes == [.output, .all])
        #expect(!pair.server.isActive)
    }

    /// A graceful stop reaches the wire as GOAWAY `{"reason":"Shutdown"}`; with nothing in flight
    /// the connection closes.
    @Test func aShutdownGetsGoAwayShutdownOnTheWireAndCloses() async throws {
        let f = try await Fixture()
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: OfflinePolicy()))
        let pair = try HTTP2Pair(api: f.api, router: router)
        pair.server.pipeline.fireUserInboundEventTriggered(ProviderShutdownEvent())
        try pair.exchange()
        #expect(Self.goAways(pair).map(\.data) == [#"{"reason":"Shutdown"}"#])
        #expect(Self.goAways(pair).map(\.code) == [.noError])
        #expect(!pair.server.isActive)
    }

    /// The handler arms the machine's request deadline: a stream opened and never finished is reset
    /// (CANCEL) on the wire; the connection stays.
    @Test func aRequestThatNeverFinishesIsResetOnTheWire() async throws {
        let f = try await Fixture()
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: OfflinePolicy()))
        let pair = try HTTP2Pair(api: f.api, router: router)
        let headers = HTTP2Pair.badTokenRequest(jwt: f.jwt())
        try pair.send(HTTP2Frame(streamID: 1, payload: .headers(.init(headers: headers))))
        func resets() -> [HTTP2ErrorCode] {
            pair.collector.frames.compactMap { frame in
                if frame.streamID == 1, case .rstStream(let code) = frame.payload { return code }
                return nil
            }
        }
        pair.server.embeddedEventLoop.advanceTime(by: .milliseconds(9_999))
        try pair.exchange()
        #expect(resets().isEmpty)
        pair.server.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        try pair.exchange()
        #expect(resets() == [.cancel])
        #expect(pair.server.isActive)
    }
}
