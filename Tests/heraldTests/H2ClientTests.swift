import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Testing

/// A small HTTP/2 client on swift-nio-http2 (one connection, a stream per request), to drive the
/// gateway the way a Swift provider would: many requests in flight on one connection.
final class H2Client: Sendable {
    struct Response: Sendable {
        var status: Int
        var headers: [String: String]
        var body: String
        var reason: String? {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["reason"] as? String
        }
    }

    let channel: any Channel
    let multiplexer: NIOHTTP2Handler.AsyncStreamMultiplexer<Void>
    let authority: String
    let scheme: String

    private init(
        channel: any Channel, multiplexer: NIOHTTP2Handler.AsyncStreamMultiplexer<Void>, authority: String,
        scheme: String
    ) {
        self.channel = channel
        self.multiplexer = multiplexer
        self.authority = authority
        self.scheme = scheme
    }

    /// Connects with h2c prior knowledge (`caPEM` nil) or TLS with ALPN h2 trusting `caPEM`.
    static func connect(host: String, port: Int, caPEM: String? = nil) async throws -> H2Client {
        var tls: NIOSSLContext?
        if let caPEM {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(caPEM.utf8)))
            configuration.applicationProtocols = ["h2"]
            tls = try NIOSSLContext(configuration: configuration)
        }
        let context = tls
        let (channel, multiplexer) = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if let context { try sync.addHandler(NIOSSLClientHandler(context: context, serverHostname: host)) }
                    let multiplexer = try sync.configureAsyncHTTP2Pipeline(mode: .client) { stream in
                        stream.eventLoop.makeSucceededVoidFuture()
                    }
                    return (channel as any Channel, multiplexer)
                }
            }
        return H2Client(
            channel: channel, multiplexer: multiplexer, authority: "\(host):\(port)",
            scheme: caPEM == nil ? "http" : "https")
    }

    func send(
        path: String, method: String = "POST", headers: [(String, String)] = [], body: String = ""
    ) async throws -> Response {
        let stream = try await multiplexer.openStream { channel in
            channel.eventLoop.makeCompletedFuture {
                try NIOAsyncChannel<HTTP2Frame.FramePayload, HTTP2Frame.FramePayload>(
                    wrappingChannelSynchronously: channel)
            }
        }
        return try await stream.executeThenClose { inbound, outbound in
            let head = HPACKHeaders(
                [(":method", method), (":scheme", scheme), (":path", path), (":authority", authority)] + headers)
            try await outbound.write(.headers(.init(headers: head, endStream: body.isEmpty)))
            if !body.isEmpty {
                try await outbound.write(.data(.init(data: .byteBuffer(ByteBuffer(string: body)), endStream: true)))
            }
            var response = Response(status: 0, headers: [:], body: "")
            for try await frame in inbound {
                switch frame {
                case .headers(let h):
                    for (name, value, _) in h.headers {
                        if name == ":status" {
                            response.status = Int(value) ?? 0
                        } else {
                            response.headers[name] = value
                        }
                    }
                    if h.endStream { return response }
                case .data(let d):
                    if case .byteBuffer(let buffer) = d.data { response.body += String(buffer: buffer) }
                    if d.endStream { return response }
                case .rstStream:
                    return response
                default:
                    break
                }
            }
            return response
        }
    }

    func close() async { try? await channel.close() }
}

@Suite(.serialized, .ownThread) struct H2ClientTests {
    /// Many requests in flight on one connection, over TLS (ALPN h2) and h2c: each gets its own
    /// answer, and failures never close the connection.
    @Test(arguments: [true, false])
    func manyRequestsOnOneConnection(tls: Bool) async throws {
        let p = try Provisioned()
        let address = URL(string: tls ? p.gateway.tls : p.gateway.dev)!
        let client = try await H2Client.connect(
            host: tls ? "localhost" : "127.0.0.1", port: address.port!,
            caPEM: tls ? try String(contentsOfFile: p.gateway.ca, encoding: .utf8) : nil)
        let auth = ("authorization", "bearer \(p.jwt)")
        let topic = ("apns-topic", Provisioned.topic)
        let path = "/3/device/\(p.token)"
        let cases: [(String, [(String, String)], String, Int, String?)] = [
            (path, [auth, topic], #"{"aps":{"alert":"hi"}}"#, 200, nil),
            ("/3/device/zz", [auth, topic], "{}", 400, "BadDeviceToken"),
            (path, [auth], "{}", 400, "MissingTopic"),
            (path, [auth, topic, ("apns-priority", "7")], "{}", 400, "BadPriority"),
            (path, [auth, topic, ("apns-push-type", "fax")], "{}", 400, "InvalidPushType"),
            (path, [auth, topic], "", 400, "PayloadEmpty"),
            (path, [auth, topic], "{" + String(repeating: " ", count: 6000) + "}", 413, "PayloadTooLarge"),
            (path, [topic], "{}", 403, "MissingProviderToken"),
            (path, [auth, ("apns-topic", "com.example.other")], "{}", 400, "TopicDisallowed"),
            ("/3/other", [auth, topic], "{}", 404, "BadPath"),
        ]
        // Ten rounds of every case, all in flight at once.
        try await withThrowingTaskGroup(of: (Int, H2Client.Response).self) { group in
            for round in 0..<10 {
                for (i, c) in cases.enumerated() {
                    group.addTask {
                        (
                            i,
                            try await client.send(path: c.0, headers: c.1 + [("apns-id", Self.id(round, i))], body: c.2)
                        )
                    }
                }
            }
            var answered = 0
            for try await (i, response) in group {
                answered += 1
                let expected = cases[i]
                #expect(response.status == expected.3, "\(expected.4 ?? "200"): \(response.status) \(response.body)")
                #expect(response.reason == expected.4)
                #expect(response.headers["apns-id"]?.hasSuffix(String(format: "%012d", i)) == true)
            }
            #expect(answered == cases.count * 10)
        }
        // Answers no honest request produces, through fault rules, still on the same connection.
        for (reason, status) in [("InternalServerError", 500), ("ServiceUnavailable", 503), ("TooManyRequests", 429)] {
            let rule = try p.gateway.adminCall(
                "POST", "/faults", #"{"tokenPrefix":"\#(p.token.prefix(8))","reason":"\#(reason)","remaining":1}"#)
            #expect(rule.status == 201)
            let answer = try await client.send(path: path, headers: [auth, topic], body: "{}")
            #expect(answer.status == status && answer.reason == reason)
        }
        #expect(try await client.send(path: path, headers: [auth, topic], body: "{}").status == 200)
        await client.close()
        #expect(p.gateway.stop() == 0)
    }

    static func id(_ round: Int, _ i: Int) -> String {
        String(format: "00000000-0000-4000-8%03d-%012d", round, i)
    }
}
