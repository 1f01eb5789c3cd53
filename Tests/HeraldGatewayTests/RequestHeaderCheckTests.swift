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
        try await Self.expectResetThenAnswer { pair, request in
            var bad = request
            bad.add(name: "Apns-Priority", value: "10")
            try pair.send(HTTP2Frame(streamID: 1, payload: .headers(.init(headers: bad, endStream: true))))
        }
    }

    /// Sends what `malformed` sends on stream 1 (given a well-formed request's headers), then a
    /// well-formed request on stream 3: stream 1 gets RST_STREAM(PROTOCOL_ERROR) and nothing else,
    /// stream 3 its answer (400: the fixture's device token), and the connection stays.
    static func expectResetThenAnswer(_ malformed: (HTTP2Pair, HPACKHeaders) throws -> Void) async throws {
        let f = try await Fixture()
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: OfflinePolicy()))
        let pair = try HTTP2Pair(api: f.api, router: router, validate: false)
        try malformed(pair, HTTP2Pair.badTokenRequest(jwt: f.jwt()))
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

    /// `content-length` as RFC 9110 has it: digits, or a list of the same digits; every field the same.
    @Test func contentLengthIsDigitsOrAListOfTheSameDigits() {
        for (values, expected) in [
            (["0"], 0), (["5"], 5), (["5, 5"], 5), ([" 5 ,5\t"], 5), (["5", "5"], 5), (["007"], 7),
            (["123456789012345678"], 123_456_789_012_345_678),
        ] as [([String], Int)] {
            var check = RequestHeaderCheck()
            for value in values {
                let accepted = check.accept(name: "content-length", value: value)
                #expect(accepted, "\(values)")
            }
            #expect(check.contentLength == expected, "\(values)")
        }
        for values in [
            ["5,6"], ["abc"], ["-1"], ["+5"], [""], [","], ["5,"], ["1234567890123456789"], ["5", "6"], ["5 5"],
        ] {
            var check = RequestHeaderCheck()
            let accepted = values.allSatisfy { check.accept(name: "content-length", value: $0) }
            #expect(!accepted, "\(values)")
        }
        // In trailers it is a field like any other.
        var trailers = RequestHeaderCheck(trailers: true)
        let accepted = trailers.accept(name: "content-length", value: "x")
        #expect(accepted)
        #expect(trailers.contentLength == nil)
    }

    /// A body that does not add up to the request's content-length is malformed (RFC 9113, section
    /// 8.1.1): the stream is reset with PROTOCOL_ERROR at the frame that shows it, and forgotten.
    @Test func theBodyMustAddUpToTheContentLength() {
        func run(_ length: String?, _ frames: [(String, Bool)], trailers: Bool = false) -> [Did] {
            var m = T.machine()
            let fields = Self.good + (length.map { [("content-length", $0)] } ?? [])
            var did = [
                Did(m.headersReceived(Self.block(fields), endStream: frames.isEmpty && !trailers, on: 1, at: T.t0))
            ]
            for (data, end) in frames {
                did.append(Did(m.dataReceived(ByteBuffer(string: data), endStream: end && !trailers, on: 1)))
            }
            if trailers {
                did.append(Did(m.headersReceived(Self.block([("x-t", "1")]), endStream: true, on: 1, at: T.t0)))
            }
            return did
        }
        let opened = Did.arm(.incomplete, in: .seconds(10))
        #expect(run("5", [("abc", false), ("de", true)]) == [opened, .nothing, .decide(1, body: "abcde")])
        #expect(
            run("5", [("abc", false), ("def", false), ("g", true)]) == [
                opened, .nothing, .reset(1, .protocolError), .nothing,
            ])
        #expect(run("5", [("abc", true)]) == [opened, .reset(1, .protocolError)])
        #expect(run("5", [("abc", false)], trailers: true) == [opened, .nothing, .reset(1, .protocolError)])
        #expect(run("5", []) == [.reset(1, .protocolError)])
        #expect(run("0", []) == [.decide(1, body: "")])
        #expect(run(nil, [("abc", true)]) == [opened, .decide(1, body: "abc")])
    }

    /// On the wire (the codec's own count is off): the stream whose body falls short of its
    /// content-length gets RST_STREAM(PROTOCOL_ERROR), the next request its answer.
    @Test func onTheWireABodyShortOfItsContentLengthResetsItsStream() async throws {
        try await Self.expectResetThenAnswer { pair, request in
            var short = request
            short.add(name: "content-length", value: "10")
            try pair.send(HTTP2Frame(streamID: 1, payload: .headers(.init(headers: short, endStream: false))))
            let body = HTTP2Frame.FramePayload.Data(data: .byteBuffer(ByteBuffer(string: "{}")), endStream: true)
            try pair.send(HTTP2Frame(streamID: 1, payload: .data(body)))
        }
    }
}
