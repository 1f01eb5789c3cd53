import HeraldNIO
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import Synchronization
import Testing

/// HeraldNIO's `HTTP2Client` against real sockets: a cleartext HTTP/2 server in this process that
/// answers 200 and, when told to, sends GOAWAY after its first request, and a port nothing listens on.
@Suite(.timeLimit(.minutes(3))) struct HTTP2ClientTests {
    /// Answers every request 200 with its stream id in `x-stream`; the first connection's handler
    /// sends GOAWAY (last stream 1) after answering stream 1, then closes once its streams are done.
    final class Answering: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTP2Frame
        typealias OutboundOut = HTTP2Frame
        let goAwayAfterFirst: Bool
        init(goAwayAfterFirst: Bool) { self.goAwayAfterFirst = goAwayAfterFirst }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            let ends: Bool
            switch frame.payload {
            case .headers(let h): ends = h.endStream
            case .data(let d): ends = d.endStream
            default: ends = false
            }
            guard ends else { return }
            if goAwayAfterFirst && frame.streamID > 1 { return }  // left out by the GOAWAY below
            let headers = HPACKHeaders([(":status", "200"), ("x-stream", "\(frame.streamID)")])
            context.write(
                wrapOutboundOut(
                    HTTP2Frame(streamID: frame.streamID, payload: .headers(.init(headers: headers, endStream: true)))),
                promise: nil)
            if goAwayAfterFirst && frame.streamID == 1 {
                context.write(
                    wrapOutboundOut(
                        HTTP2Frame(
                            streamID: .rootStream,
                            payload: .goAway(lastStreamID: 1, errorCode: .noError, opaqueData: nil))),
                    promise: nil)
            }
            context.flush()
        }
    }

    /// How many connections the server accepted.
    final class Accepted: Sendable {
        let count = Atomic<Int>(0)
    }

    /// A server whose first connection goes away after one request; later ones answer everything.
    /// Returns its port and the count of connections it accepted.
    static func server(goAwayOnFirst: Bool = true) async throws -> (any Channel, Int, Accepted) {
        let accepted = Accepted()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { [accepted] channel in
                let n = accepted.count.wrappingAdd(1, ordering: .relaxed).newValue
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .server))
                    try channel.pipeline.syncOperations.addHandler(Answering(goAwayAfterFirst: goAwayOnFirst && n == 1))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return (channel, channel.localAddress!.port!, accepted)
    }

    @Test func requestsAGoAwayLeftOutAreAnsweredOnANewConnection() async throws {
        let (server, port, accepted) = try await Self.server()
        defer { server.close(promise: nil) }
        let client = HTTP2Client(configuration: .init(tls: nil), group: MultiThreadedEventLoopGroup.singleton)
        let endpoint = try #require(HTTP2Endpoint(url: "http://127.0.0.1:\(port)"))
        let results = await withTaskGroup(of: Result<HTTP2ClientResponse, HTTP2ClientFailure>.self) { group in
            for i in 0..<3 {
                group.addTask {
                    await client.execute(
                        HTTP2ClientRequest(
                            path: "/\(i)", body: ByteBuffer(string: "{}"), deadline: .now() + .seconds(20)),
                        to: endpoint)
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        await client.shutdown()
        let statuses = results.map { (try? $0.get())?.status }
        #expect(statuses == [200, 200, 200], "\(results)")
        #expect(accepted.count.load(ordering: .relaxed) == 2, "the two left out went to a second connection")
    }

    /// Several connections when asked: requests take them in turn.
    @Test func requestsTakeTheConnectionsAskedForInTurn() async throws {
        let (server, port, accepted) = try await Self.server(goAwayOnFirst: false)
        defer { server.close(promise: nil) }
        let client = HTTP2Client(
            configuration: .init(tls: nil, spread: .connections(3)), group: MultiThreadedEventLoopGroup.singleton)
        let endpoint = HTTP2Endpoint(tls: false, host: "127.0.0.1", port: port)
        var statuses: [Int?] = []
        for i in 0..<9 {
            let result = await client.execute(
                HTTP2ClientRequest(path: "/\(i)", deadline: .now() + .seconds(20)), to: endpoint)
            statuses.append((try? result.get())?.status)
        }
        await client.shutdown()
        #expect(statuses == Array(repeating: 200, count: 9))
        #expect(accepted.count.load(ordering: .relaxed) == 3)
    }

    @Test func aPortNothingListensOnFailsAsAConnectFailure() async throws {
        // A port just freed: nothing listens on it.
        let (server, port, _) = try await Self.server()
        try await server.close()
        let client = HTTP2Client(configuration: .init(tls: nil), group: MultiThreadedEventLoopGroup.singleton)
        let result = await client.execute(
            HTTP2ClientRequest(path: "/", deadline: .now() + .seconds(20)),
            to: HTTP2Endpoint(tls: false, host: "127.0.0.1", port: port))
        await client.shutdown()
        guard case .failure(let failure) = result else {
            Issue.record("answered: \(result)")
            return
        }
        #expect(failure.kind == .connect)
        // Why, as a person reads it; not swift-nio's description of its attempts.
        #expect(failure.description.hasSuffix("could not connect to http://127.0.0.1:\(port): connection refused"))
    }

    @Test func afterShutdownRequestsFailAsStopped() async throws {
        let client = HTTP2Client(configuration: .init(tls: nil), group: MultiThreadedEventLoopGroup.singleton)
        await client.shutdown()
        let result = await client.execute(
            HTTP2ClientRequest(path: "/", deadline: .now() + .seconds(5)),
            to: HTTP2Endpoint(tls: false, host: "127.0.0.1", port: 9))
        guard case .failure(let failure) = result else {
            Issue.record("answered: \(result)")
            return
        }
        #expect(failure.kind == .stopped)
    }

    @Test func endpointsParse() {
        #expect(
            HTTP2Endpoint(url: "https://api.push.apple.com")
                == HTTP2Endpoint(tls: true, host: "api.push.apple.com", port: 443))
        #expect(
            HTTP2Endpoint(url: "http://127.0.0.1:2198/x") == HTTP2Endpoint(tls: false, host: "127.0.0.1", port: 2198))
        #expect(HTTP2Endpoint(url: "https://[::1]:2197")?.authority == "[::1]:2197")
        for bad in ["ftp://x", "https://", "https://host:0", "https://host:x", "https://[::1"] {
            #expect(HTTP2Endpoint(url: bad) == nil, "\(bad)")
        }
    }
}
