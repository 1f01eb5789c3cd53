import Foundation
import HeraldCore
import NIOCore
import NIOHPACK
import NIOHTTP2
import Testing

@testable import HeraldGateway

/// The gateway checks a request's header block itself, in the pass that reads it (swift-nio-http2's
/// own check is off on the provider API): a malformed block resets its stream with PROTOCOL_ERROR, as
/// the codec did, and the connection goes on.
@Suite struct RequestHeaderCheckTests {
    typealias T = ProviderConnectionStateMachineTests
    static let good: [(String, String)] = [
        (":method", "POST"), (":scheme", "https"), (":path", "/3/device/00"), (":authority", "localhost"),
        ("apns-topic", Fixture.bundle), ("authorization", "bearer x"), ("te", "trailers"),
    ]

    static func block(_ fields: [(String, String)]) -> HPACKHeaders {
        var headers = HPACKHeaders()
        for (name, value) in fields { headers.add(name: name, value: value) }
        return headers
    }

    /// What the machine does with a whole request of these fields on stream 1.
    static func verdict(_ fields: [(String, String)]) -> Did {
        var m = T.machine()
        return Did(m.headersReceived(block(fields), endStream: true, on: 1, at: T.t0))
    }

    @Test func aWellFormedRequestIsDecided() {
        #expect(Self.verdict(Self.good) == .decide(1, body: ""))
        // :authority may be left out; other pseudo-header orders are fine.
        #expect(
            Self.verdict([(":path", "/3/device/00"), (":method", "POST"), (":scheme", "https")]) == .decide(1, body: "")
        )
        // Values may hold spaces, tabs and bytes beyond ASCII.
        #expect(Self.verdict(Self.good + [("x-note", "a b\tc é")]) == .decide(1, body: ""))
    }

    @Test(
        arguments: [
            ("uppercase name", good + [("Apns-Priority", "10")]),
            ("space in a name", good + [("apns priority", "10")]),
            ("empty name", good + [("", "x")]),
            ("connection", good + [("connection", "keep-alive")]),
            ("keep-alive", good + [("keep-alive", "timeout=5")]),
            ("proxy-connection", good + [("proxy-connection", "keep-alive")]),
            ("transfer-encoding", good + [("transfer-encoding", "chunked")]),
            ("upgrade", good + [("upgrade", "h2c")]),
            ("te other than trailers", good + [("te", "gzip")]),
            ("CR in a value", good + [("x-note", "a\rb")]),
            ("LF in a value", good + [("x-note", "a\nb")]),
            ("NUL in a value", good + [("x-note", "a\u{0}b")]),
            ("pseudo-header after a regular field", [("apns-topic", "x")] + good),
            ("unknown pseudo-header", good.prefix(4) + [(":protocol", "websocket")]),
            ("response pseudo-header", good.prefix(4) + [(":status", "200")]),
            ("duplicate :path", good.prefix(4) + [(":path", "/3/device/01")]),
            ("empty :path", [(":method", "POST"), (":scheme", "https"), (":path", "")]),
            ("space in :path", [(":method", "POST"), (":scheme", "https"), (":path", "/3/device/00 HTTP/1.1")]),
            ("no :method", [(":scheme", "https"), (":path", "/3/device/00")]),
            ("no :scheme", [(":method", "POST"), (":path", "/3/device/00")]),
            ("no :path", [(":method", "POST"), (":scheme", "https")]),
        ] as [(String, [(String, String)])])
    func aMalformedRequestResetsItsStream(_ what: String, _ fields: [(String, String)]) {
        #expect(Self.verdict(fields) == .reset(1, .protocolError), "\(what)")
    }

    /// Trailers: regular fields only, checked the same way; the request itself goes on when they are fine.
    @Test func trailersAreCheckedToo() {
        for (trailers, expected) in [
            ([("x-checksum", "abc")], Did.decide(1, body: "")),
            ([(":path", "/other")], .reset(1, .protocolError)),
            ([("X-Checksum", "abc")], .reset(1, .protocolError)),
        ] {
            var m = T.machine()
            _ = m.headersReceived(Self.block(Self.good), endStream: false, on: 1, at: T.t0)
            #expect(Did(m.headersReceived(Self.block(trailers), endStream: true, on: 1, at: T.t0)) == expected)
        }
    }

    /// On the wire: the malformed stream gets RST_STREAM(PROTOCOL_ERROR), the next request its answer.
    @Test func onTheWireTheStreamIsResetAndTheConnectionGoesOn() async throws {
        let f = try await Fixture()
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: OfflinePolicy()))
        let pair = try HTTP2Pair(api: f.api, router: router, validate: false)
        var bad = HTTP2Pair.badTokenRequest(jwt: f.jwt())
        bad.add(name: "Apns-Priority", value: "10")
        try pair.send(HTTP2Frame(streamID: 1, payload: .headers(.init(headers: bad, endStream: true))))
        let good = HTTP2Pair.badTokenRequest(jwt: f.jwt())
        try pair.send(HTTP2Frame(streamID: 3, payload: .headers(.init(headers: good, endStream: true))))
        let onOne = pair.collector.frames.filter { $0.streamID == 1 }.map { "\($0.payload)" }
        #expect(onOne == ["\(HTTP2Frame.FramePayload.rstStream(.protocolError))"])
        let status = pair.collector.frames.compactMap { frame -> String? in
            if frame.streamID == 3, case .headers(let h) = frame.payload { return h.headers.first(name: ":status") }
            return nil
        }
        #expect(status == ["400"])
        #expect(pair.server.isActive)
    }
}
