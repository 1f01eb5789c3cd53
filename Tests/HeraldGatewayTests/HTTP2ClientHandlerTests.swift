import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import NIOTLS
import Synchronization
import Testing

@testable import HeraldNIO

/// The shared HTTP/2 client's connection handler (HeraldNIO's ``HTTP2ClientHandler``, under
/// the provider client and forwarding) against a real swift-nio-http2 server handler, both on embedded
/// channels whose bytes the test carries across: every request's completion is called once, with the
/// answer or with why there is none; what the server did not take is handed back, not failed.
@Suite struct HTTP2ClientHandlerTests {
    /// A client and a server connection, and what the server's side has read.
    final class Pair {
        let client = EmbeddedChannel()
        let server = EmbeddedChannel()
        let handler: HTTP2ClientHandler
        let received = Received()
        let answers = Answers()
        /// How the handler asked each request's fields to be indexed.
        let indexing = AnswerIndexingRecorder()
        /// The paths of the requests the handler handed back unprocessed.
        let refused = Refused()

        final class Answers: Sendable {
            let value = Mutex<[Int: Result<HTTP2ClientResponse, HTTP2ClientFailure>]>([:])
            func withLock<T>(_ body: (inout [Int: Result<HTTP2ClientResponse, HTTP2ClientFailure>]) -> T) -> T {
                value.withLock { body(&$0) }
            }
        }

        final class Refused: @unchecked Sendable {
            var paths: [String] = []
        }

        /// What the server read, by stream.
        final class Received: ChannelInboundHandler, @unchecked Sendable {
            typealias InboundIn = HTTP2Frame
            var frames: [HTTP2Frame] = []
            func channelRead(context: ChannelHandlerContext, data: NIOAny) {
                frames.append(unwrapInboundIn(data))
            }
        }

        init(active: Bool = true) throws {
            let refused = self.refused
            handler = HTTP2ClientHandler(endpoint: HTTP2Endpoint(tls: true, host: "node-b", port: 2197)) {
                refused.paths.append($0.request.path)
            }
            try client.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .client))
            try client.pipeline.syncOperations.addHandler(indexing)
            try client.pipeline.syncOperations.addHandler(handler)
            try server.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .server))
            try server.pipeline.syncOperations.addHandler(received)
            if active { try connect() }
        }

        func connect() throws {
            try client.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            try server.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 2)).wait()
            try carry()
        }

        /// Moves bytes between the two until neither has more to send.
        func carry() throws {
            // The handler flushes once per turn of its loop: each round lets the turn run.
            try carryBytes(between: client, and: server, runningClientLoop: true)
        }

        func send(_ n: Int, timeout: TimeAmount = .seconds(7), method: String = "POST", bodyLimit: Int = 512) {
            let answers = self.answers
            let request = HTTP2ClientRequest(
                method: method, path: "/herald/forward/\(n)", headers: [("apns-id", "id-\(n)")],
                body: method == "POST" ? ByteBuffer(string: #"{"n":\#(n)}"#) : nil,
                deadline: client.embeddedEventLoop.now + timeout, bodyLimit: bodyLimit)
            handler.send(
                PendingRequest(request: request) { result in
                    answers.withLock { answers in
                        #expect(answers[n] == nil, "request \(n) completed twice")
                        answers[n] = result
                    }
                })
        }

        func answer(
            _ stream: HTTP2StreamID, status: String, body: String? = nil, headers extra: [(String, String)] = []
        ) throws {
            let headers = HPACKHeaders([(":status", status)] + extra)
            try server.writeOutbound(
                HTTP2Frame(streamID: stream, payload: .headers(.init(headers: headers, endStream: body == nil))))
            if let body {
                try server.writeOutbound(
                    HTTP2Frame(
                        streamID: stream,
                        payload: .data(.init(data: .byteBuffer(ByteBuffer(string: body)), endStream: true))))
            }
            try carry()
        }

        func answer(_ n: Int) -> Result<HTTP2ClientResponse, HTTP2ClientFailure>? { answers.withLock { $0[n] } }

        /// The streams the server saw a request on, with its path.
        var requests: [HTTP2StreamID: String] {
            var paths: [HTTP2StreamID: String] = [:]
            for frame in received.frames {
                if case .headers(let h) = frame.payload, let path = h.headers.first(name: ":path") {
                    paths[frame.streamID] = path
                }
            }
            return paths
        }
    }

    @Test func aRequestIsAnsweredOnItsStream() throws {
        let pair = try Pair()
        pair.send(1)
        pair.send(2)
        try pair.carry()
        #expect(pair.requests == [1: "/herald/forward/1", 3: "/herald/forward/2"])
        let body = pair.received.frames.compactMap { frame -> String? in
            guard frame.streamID == 1, case .data(let d) = frame.payload, case .byteBuffer(let b) = d.data else {
                return nil
            }
            return String(buffer: b)
        }
        #expect(body == [#"{"n":1}"#])
        try pair.answer(3, status: "503", body: #"{"reason":"Shutdown"}"#)
        try pair.answer(1, status: "200")
        guard case .success(let first) = pair.answer(1), case .success(let second) = pair.answer(2) else {
            Issue.record("not answered: \(String(describing: pair.answer(1))) \(String(describing: pair.answer(2)))")
            return
        }
        #expect(first.status == 200 && first.body.readableBytes == 0)
        #expect(second.status == 503 && String(buffer: second.body) == #"{"reason":"Shutdown"}"#)
    }

    @Test func requestsMadeBeforeTheConnectionIsUpWaitForIt() throws {
        let pair = try Pair(active: false)
        pair.send(1)
        #expect(try pair.client.readOutbound(as: ByteBuffer.self) == nil, "nothing before the preface")
        try pair.connect()
        #expect(pair.requests == [1: "/herald/forward/1"])
        try pair.answer(1, status: "200")
        #expect(try pair.answer(1)?.get().status == 200)
    }

    @Test func aRequestWithoutAnAnswerInTimeFailsAndItsStreamIsReset() throws {
        let pair = try Pair()
        pair.send(1, timeout: .seconds(7))
        pair.send(2, timeout: .seconds(20))
        try pair.carry()
        pair.client.embeddedEventLoop.advanceTime(by: .seconds(6))
        #expect(pair.answer(1) == nil)
        pair.client.embeddedEventLoop.advanceTime(by: .seconds(2))
        try pair.carry()
        guard case .failure(let failure) = pair.answer(1) else {
            Issue.record("request 1 did not fail: \(String(describing: pair.answer(1)))")
            return
        }
        #expect(failure.kind == .timedOut)
        #expect(failure.description == "no answer from https://node-b:2197 in time")
        #expect(pair.received.frames.contains { $0.streamID == 1 && $0.payload.isCancel })
        #expect(pair.answer(2) == nil, "the other request still waits")
        // The server saw the reset (it can no longer answer stream 1); the other stream goes on.
        try pair.answer(3, status: "200")
        #expect(try pair.answer(2)?.get().status == 200)
        #expect(pair.answers.withLock { $0.count } == 2)
    }

    /// Streams a GOAWAY leaves out, and requests after it, were not processed: they are handed back
    /// (to go to a new connection), not failed.
    @Test func aGoAwayHandsBackTheStreamsItLeavesOutAndWhatComesNext() throws {
        let pair = try Pair()
        pair.send(1)
        pair.send(2)
        try pair.carry()
        try pair.server.writeOutbound(
            HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: 1, errorCode: .noError, opaqueData: nil)))
        try pair.carry()
        #expect(pair.answer(2) == nil)
        #expect(pair.handler.isClosed)
        pair.send(3)
        #expect(pair.refused.paths == ["/herald/forward/2", "/herald/forward/3"])
        // The stream the server kept is still answered.
        try pair.answer(1, status: "200")
        #expect(try pair.answer(1)?.get().status == 200)
        #expect(pair.answers.withLock { $0.count } == 1)
    }

    /// The answer's fields come back; its body is kept up to the request's limit; a request without a
    /// body is one HEADERS frame that ends the stream.
    @Test func answerFieldsAndABodyCutAtItsLimit() throws {
        let pair = try Pair()
        pair.send(1, method: "GET", bodyLimit: 4)
        try pair.carry()
        let ended = pair.received.frames.contains { frame in
            if frame.streamID == 1, case .headers(let h) = frame.payload { return h.endStream }
            return false
        }
        #expect(ended)
        #expect(!pair.received.frames.contains { if case .data = $0.payload { true } else { false } })
        try pair.answer(1, status: "200", body: "0123456789", headers: [("apns-unique-id", "u-1")])
        let response = try #require(try pair.answer(1)?.get())
        #expect(response.headers.first(name: "apns-unique-id") == "u-1")
        #expect(String(buffer: response.body) == "0123")
    }

    /// Fields that repeat from request to request are entered into the HPACK table (then sent as an
    /// index); identifiers, new every time, never are; a path only when it repeats the last one
    /// (pushes to one device), not on a send to many devices.
    @Test func repeatingFieldsAreIndexedAndIdentifiersAreNot() throws {
        let pair = try Pair()
        for (n, path) in ["/3/device/00", "/3/device/00", "/3/device/00", "/3/device/01"].enumerated() {
            pair.handler.send(
                PendingRequest(
                    request: HTTP2ClientRequest(
                        path: path,
                        headers: [("authorization", "bearer t"), ("apns-topic", "a"), ("apns-id", "i\(n)")],
                        body: ByteBuffer(string: "{}"), deadline: pair.client.embeddedEventLoop.now + .seconds(5))
                ) { _ in })
        }
        try pair.carry()
        let sent = pair.indexing.answers.map { fields in
            Dictionary(fields.map { ($0.name, $0.indexing) }, uniquingKeysWith: { a, _ in a })
        }
        #expect(sent.count == 4)
        let indexed = try #require(sent.first)
        #expect(indexed["authorization"] == .indexable)
        #expect(indexed["apns-topic"] == .indexable)
        #expect(indexed["content-length"] == .indexable)
        #expect(sent.map { $0["apns-id"] } == [.nonIndexable, .nonIndexable, .nonIndexable, .nonIndexable])
        #expect(sent.map { $0[":path"] } == [.nonIndexable, .indexable, .indexable, .nonIndexable])
    }

    /// A server that allows one stream at a time gets one request at a time; the next starts when
    /// the first is answered.
    @Test func theServersStreamLimitIsKept() throws {
        let pair = try Pair()
        try pair.server.writeOutbound(
            HTTP2Frame(
                streamID: .rootStream,
                payload: .settings(.settings([.init(parameter: .maxConcurrentStreams, value: 1)]))))
        try pair.carry()
        #expect(pair.handler.streamLimit == 1)
        pair.send(1)
        pair.send(2)
        try pair.carry()
        #expect(pair.requests == [1: "/herald/forward/1"])
        try pair.answer(1, status: "200")
        try pair.carry()
        #expect(pair.requests == [1: "/herald/forward/1", 3: "/herald/forward/2"])
    }

    /// Answers' bodies past the connection's first 65,535 bytes, and one body past a stream's, still
    /// arrive: the handler gives the window back (swift-nio-http2 does not without stream channels).
    @Test func bodiesBeyondTheFlowControlWindowsArrive() throws {
        let pair = try Pair()
        for n in 1...4 { pair.send(n, method: "GET", bodyLimit: 100_000) }
        try pair.carry()
        // Three answers of 30,000 bytes (90,000 on the connection), and one of 90,000 on its stream.
        // Written without waiting: what the windows hold back waits in the server's codec.
        for (stream, size) in [(1, 30_000), (3, 30_000), (5, 30_000), (7, 90_000)] {
            let id = HTTP2StreamID(stream)
            pair.server.write(
                HTTP2Frame(streamID: id, payload: .headers(.init(headers: HPACKHeaders([(":status", "200")])))),
                promise: nil)
            let body = ByteBuffer(repeating: UInt8(ascii: "x"), count: size)
            pair.server.writeAndFlush(
                HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(body), endStream: true))), promise: nil)
        }
        try pair.carry()
        let lengths = (1...4).map { (try? pair.answer($0)?.get())?.body.readableBytes }
        #expect(lengths == [30_000, 30_000, 30_000, 90_000])
    }

    /// REFUSED_STREAM: the server did not process it, so it is handed back.
    @Test func aRefusedStreamIsHandedBack() throws {
        let pair = try Pair()
        pair.send(1)
        try pair.carry()
        try pair.server.writeOutbound(HTTP2Frame(streamID: 1, payload: .rstStream(.refusedStream)))
        try pair.carry()
        #expect(pair.refused.paths == ["/herald/forward/1"])
        #expect(pair.answer(1) == nil)
    }

    /// nio-http2 holds DATA frames back until a flush, then sends those of all the streams written
    /// since in the order of a `Set`. Each request is flushed alone, so the server has whole requests
    /// in the order they were made (and answers them in that order: no stream is taken from the
    /// middle of either side's stream list).
    @Test func requestsMadeTogetherEndOnTheServerInTheOrderTheyWereMade() throws {
        let pair = try Pair()
        for n in 1...60 { pair.send(n) }
        try pair.carry()
        let ends = pair.received.frames.compactMap { frame -> Int? in
            guard case .data(let data) = frame.payload, data.endStream else { return nil }
            return Int(frame.streamID)
        }
        #expect(ends == Array(stride(from: 1, through: 119, by: 2)))
    }

    @Test func aServerThatChoseAnotherProtocolThanHTTP2FailsTheRequests() throws {
        let agreed = try Pair()
        agreed.client.pipeline.fireUserInboundEventTriggered(TLSUserEvent.handshakeCompleted(negotiatedProtocol: "h2"))
        agreed.send(1)
        try agreed.carry()
        try agreed.answer(1, status: "200")
        #expect(try agreed.answer(1)?.get().status == 200)

        let pair = try Pair()
        pair.send(1)
        pair.client.pipeline.fireUserInboundEventTriggered(
            TLSUserEvent.handshakeCompleted(negotiatedProtocol: "http/1.1"))
        guard case .failure(let failure) = pair.answer(1) else {
            Issue.record("request 1 did not fail: \(String(describing: pair.answer(1)))")
            return
        }
        #expect(failure.kind == .connect)
        #expect(failure.description == "https://node-b:2197 did not agree to HTTP/2 (ALPN chose http/1.1)")
        #expect(!pair.client.isActive)
    }

    @Test func aConnectionThatClosesFailsWhatIsInFlight() throws {
        let pair = try Pair()
        pair.send(1)
        pair.send(2)
        try pair.carry()
        try pair.answer(1, status: "200")
        pair.client.pipeline.fireChannelInactive()
        #expect(try pair.answer(1)?.get().status == 200)
        guard case .failure(let failure) = pair.answer(2) else {
            Issue.record("request 2 did not fail: \(String(describing: pair.answer(2)))")
            return
        }
        #expect(failure.kind == .closed)
        #expect(pair.answers.withLock { $0.count } == 2)
    }
}

extension HTTP2Frame.FramePayload {
    fileprivate var isCancel: Bool {
        if case .rstStream(.cancel) = self { return true }
        return false
    }
}
