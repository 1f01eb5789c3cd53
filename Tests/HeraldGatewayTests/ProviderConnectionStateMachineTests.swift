import Foundation
import HeraldCore
import NIOCore
import NIOHPACK
import NIOHTTP2
import Testing

@testable import HeraldGateway

typealias Machine = ProviderConnectionStateMachine

/// A machine's action with its request reduced to what these tests compare: the stream, and the
/// body put together.
enum Did: Equatable {
    case nothing
    case decide(HTTP2StreamID, body: String)
    case refuseTooLarge(HTTP2StreamID)
    case arm(Machine.Timer, in: TimeAmount)
    case reset(HTTP2StreamID, HTTP2ErrorCode)
    case goAway(Machine.GoAway, close: Bool)
    case giveUp(Machine.GoAway, reason: String, closeOutput: Bool)

    init(_ action: Machine.Action) {
        switch action {
        case .none: self = .nothing
        case .decide(let request, let id): self = .decide(id, body: String(buffer: request.body))
        case .refuseTooLarge(_, let id): self = .refuseTooLarge(id)
        case .arm(let timer, let delay): self = .arm(timer, in: delay)
        case .reset(let id, let code): self = .reset(id, code)
        case .goAway(let goAway, let close): self = .goAway(goAway, close: close)
        case .giveUp(let goAway, let reason, let closeOutput):
            self = .giveUp(goAway, reason: reason, closeOutput: closeOutput)
        }
    }

    /// The GOAWAY of a connection drained for `reason` (NO_ERROR, `{"reason":"…"}`), then closed.
    static func drained(_ reason: APNsReason, lastStreamID: HTTP2StreamID = 0, close: Bool = true) -> Did {
        .goAway(
            Machine.GoAway(
                lastStreamID: lastStreamID, errorCode: .noError, debugData: #"{"reason":"\#(reason.rawValue)"}"#),
            close: close)
    }
}

/// The provider HTTP/2 connection as a value: events in, actions out, time given with each event.
/// No channel, no loop, no waiting; what the handler does with the actions is in
/// `HTTP2HandlerTests`.
@Suite struct ProviderConnectionStateMachineTests {
    /// The loop's time when the connection starts.
    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
    /// The gateway's date meanwhile.
    static let date = Date(timeIntervalSince1970: 1_800_000_000)

    static func machine(idle: TimeAmount? = .seconds(60), stall: TimeAmount = .seconds(10)) -> Machine {
        Machine(
            connection: ProviderConnectionState(defaultEnvironment: .development), idleTimeout: idle,
            stallDeadline: stall)
    }

    static func headers(path: String, jwt: String) -> HPACKHeaders {
        var headers = HPACKHeaders()
        for (name, value) in [
            (":method", "POST"), (":path", path), (":scheme", "https"), (":authority", "localhost"),
            ("apns-topic", Fixture.bundle), ("authorization", "bearer \(jwt)"),
        ] { headers.add(name: name, value: value) }
        return headers
    }

    /// The request a `decide` action carries.
    static func request(_ action: Machine.Action) -> ProviderRequest? {
        if case .decide(let request, _) = action { return request }
        return nil
    }

    // MARK: The idle timeout (`--idle-timeout`)

    /// Sends a request whole on `id` at `now` and decides it: the answer, when it is answered at once.
    static func answer(
        _ m: inout Machine, _ headers: HPACKHeaders, body: String, on id: HTTP2StreamID, at now: NIODeadline,
        api: ProviderAPI
    ) -> ProviderResponse? {
        _ = m.headersReceived(headers, endStream: false, on: id, at: now)
        guard let request = Self.request(m.dataReceived(ByteBuffer(string: body), endStream: true, on: id)),
            case .answer(let response) = m.decide(request, on: id, with: api, now: Self.date)
        else { return nil }
        return response
    }

    /// As ``answer(_:_:body:on:at:api:)``, for an answer carried out after a delay (a fault rule's):
    /// the answer and its delay.
    static func delayedAnswer(
        _ m: inout Machine, _ headers: HPACKHeaders, body: String, on id: HTTP2StreamID, at now: NIODeadline,
        api: ProviderAPI
    ) -> (response: ProviderResponse, delay: TimeAmount)? {
        _ = m.headersReceived(headers, endStream: false, on: id, at: now)
        guard let request = Self.request(m.dataReceived(ByteBuffer(string: body), endStream: true, on: id)),
            case .carryOut(.respond(let response, let delay?)) = m.decide(request, on: id, with: api, now: Self.date)
        else { return nil }
        return (response, delay)
    }

    @Test func aQuietConnectionGetsGoAwayIdleTimeoutAndAPingCountsAsActivity() async throws {
        let f = try await Fixture()
        var m = Self.machine(idle: .seconds(60))
        let t0 = Self.t0
        // The timer is armed for 60 s: nothing happens at 59 s.
        #expect(Did(m.started(at: t0)) == .arm(.idle, in: .seconds(60)))
        // The client's SETTINGS, the first frame, is read at once, with a request whose token is
        // accepted (its empty body is refused after that).
        #expect(m.frameReceived() == true)
        let headers = Self.headers(path: "/3/device/\(f.token.hex)", jwt: f.jwt())
        let answer = Self.answer(&m, headers, body: "", on: 1, at: t0, api: f.api)
        #expect(answer?.reason == .payloadEmpty)
        #expect(m.connection.hasAuthenticated)
        #expect(m.readComplete(at: t0) == false)
        // A PING at 59 s (NIOHTTP2Handler answers it; the read counts as activity).
        #expect(m.frameReceived() == false)
        #expect(m.readComplete(at: t0 + .seconds(59)) == false)

        // At 60 s the timer looks again 59 s later: still open 59 s after the PING, no GOAWAY.
        #expect(Did(m.idleTimerFired(at: t0 + .seconds(60))) == .arm(.idle, in: .seconds(59)))

        // 60 s after the PING: GOAWAY with NO_ERROR and the reason, then the connection closes.
        let goAway = Did(m.idleTimerFired(at: t0 + .seconds(119)))
        #expect(goAway == .drained(.idleTimeout, lastStreamID: 1))
        #expect(
            goAway
                == .goAway(
                    .init(lastStreamID: 1, errorCode: .noError, debugData: #"{"reason":"IdleTimeout"}"#), close: true))
        // Only one GOAWAY.
        #expect(Did(m.idleTimerFired(at: t0 + .seconds(180))) == .nothing)
        #expect(Did(m.shutdownRequested()) == .nothing)
    }

    /// A connection whose provider never shows who it is cannot keep itself open: its PINGs, and
    /// requests refused for their token, are not activity, and it is closed when the idle deadline
    /// has run from its start. (Before, one that pinged was never closed.)
    @Test func anUnauthenticatedConnectionIsClosedAtItsIdleDeadlineWhateverItSends() async throws {
        let f = try await Fixture()
        var m = Self.machine(idle: .seconds(60))
        let t0 = Self.t0
        #expect(Did(m.started(at: t0)) == .arm(.idle, in: .seconds(60)))
        #expect(m.frameReceived() == true)
        #expect(m.readComplete(at: t0) == false)
        // PINGs at 20 s and 40 s, and at 50 s a request with a token no key signed.
        for second in [20, 40] {
            #expect(m.frameReceived() == false)
            #expect(m.readComplete(at: t0 + .seconds(Int64(second))) == false)
        }
        let forged = Self.headers(path: "/3/device/\(f.token.hex)", jwt: "eyJhbGciOiJFUzI1NiJ9.e30.c2ln")
        let refused = Self.answer(&m, forged, body: #"{"aps":{}}"#, on: 1, at: t0 + .seconds(50), api: f.api)
        #expect(refused?.reason == .invalidProviderToken)
        #expect(m.readComplete(at: t0 + .seconds(50)) == false)
        #expect(!m.connection.hasAuthenticated)
        // And at 55 s a stream opened and not finished (reset at the request deadline, 10 s on): a
        // client that always kept one open would otherwise be busy for ever.
        _ = m.headersReceived(forged, endStream: false, on: 3, at: t0 + .seconds(55))
        #expect(m.readComplete(at: t0 + .seconds(55)) == false)
        // At 60 s from its start: GOAWAY IdleTimeout. The open stream may still finish (until its
        // request deadline), so the connection closes after it, not with the GOAWAY.
        #expect(Did(m.idleTimerFired(at: t0 + .seconds(60))) == .drained(.idleTimeout, lastStreamID: 3, close: false))
    }

    /// A fault rule's answer is activity even before authentication (only the operator sets fault
    /// rules, and they answer before authentication: a test bench's connection whose pushes they
    /// answer is busy). Each answer counts once; it does not make the connection's PINGs count.
    @Test func eachAnswerOfAFaultRuleCountsAsActivity() async throws {
        let f = try await Fixture(configuration: IdleTimeoutTests.configuration(seconds: 60))
        f.faults.add(FaultRule(topic: Fixture.bundle, reason: .internalServerError))
        var m = Self.machine(idle: f.api.idleTimeout)
        let t0 = Self.t0
        #expect(Did(m.started(at: t0)) == .arm(.idle, in: .seconds(60)))
        #expect(m.frameReceived() == true)
        let forged = Self.headers(path: "/3/device/\(f.token.hex)", jwt: "eyJhbGciOiJFUzI1NiJ9.e30.c2ln")
        let answer = Self.answer(&m, forged, body: #"{"aps":{}}"#, on: 1, at: t0 + .seconds(50), api: f.api)
        #expect(answer?.reason == .internalServerError)
        #expect(!m.connection.hasAuthenticated)
        #expect(m.readComplete(at: t0 + .seconds(50)) == false)
        #expect(Did(m.idleTimerFired(at: t0 + .seconds(60))) == .arm(.idle, in: .seconds(50)))
        // A PING at 100 s does not count: 60 s after the answer, GOAWAY.
        #expect(m.frameReceived() == false)
        #expect(m.readComplete(at: t0 + .seconds(100)) == false)
        #expect(Did(m.idleTimerFired(at: t0 + .seconds(110))) == .drained(.idleTimeout, lastStreamID: 1))
    }

    /// Before authentication a request under way does not count (docs/listeners.md: only each
    /// answer of a fault rule does), even one a fault rule will answer after a delay: the
    /// connection gets its GOAWAY an idle timeout after it opened, the stream in flight still gets
    /// its answer, and the connection is drained once that is written.
    @Test func aDelayedFaultAnswerBeforeAuthenticationIsStillWrittenAfterTheGoAway() async throws {
        let f = try await Fixture(configuration: IdleTimeoutTests.configuration(seconds: 60))
        f.faults.add(FaultRule(topic: Fixture.bundle, reason: .internalServerError, delayMilliseconds: 90_000))
        var m = Self.machine(idle: f.api.idleTimeout)
        let t0 = Self.t0
        #expect(Did(m.started(at: t0)) == .arm(.idle, in: .seconds(60)))
        let forged = Self.headers(path: "/3/device/\(f.token.hex)", jwt: "eyJhbGciOiJFUzI1NiJ9.e30.c2ln")
        let (response, delay) = try #require(
            Self.delayedAnswer(&m, forged, body: #"{"aps":{}}"#, on: 1, at: t0 + .seconds(10), api: f.api),
            "the fault rule answers after a delay")
        #expect(delay == .seconds(90) && response.reason == .internalServerError && response.injected)
        #expect(!m.connection.hasAuthenticated && m.inFlight == 1)
        // At 60 s: GOAWAY, the connection left open for the stream in flight.
        #expect(Did(m.idleTimerFired(at: t0 + .seconds(60))) == .drained(.idleTimeout, lastStreamID: 1, close: false))
        #expect(!m.isDrained)
        // The answer at 100 s is written; then nothing is left and the connection closes.
        m.answerReady(on: 1, at: t0 + .seconds(100), injected: response.injected)
        #expect(m.answerHeaders(for: response, body: response.body).first(name: ":status") == "500")
        #expect(m.isDrained)
    }

    /// A usable client certificate is authentication: such a connection's PINGs count from the
    /// start. One the gateway cannot use (every request answers `BadCertificate`) is not.
    @Test(arguments: [nil, "expired"])
    func aConnectionWithAClientCertificateCountsItsPingsFromTheStart(problem: String?) {
        let grant = CertificateGrant(
            bundleID: Fixture.bundle, topics: [], environments: [.development], problem: problem)
        var m = Machine(
            connection: ProviderConnectionState(defaultEnvironment: .development, certificate: grant),
            idleTimeout: .seconds(60), stallDeadline: .seconds(10))
        let t0 = Self.t0
        #expect(Did(m.started(at: t0)) == .arm(.idle, in: .seconds(60)))
        #expect(m.frameReceived() == true)
        #expect(m.readComplete(at: t0 + .seconds(59)) == false)
        let fired = Did(m.idleTimerFired(at: t0 + .seconds(60)))
        #expect(fired == (problem == nil ? .arm(.idle, in: .seconds(59)) : .drained(.idleTimeout)))
    }

    @Test func aRequestInFlightKeepsTheConnectionOpenAndItsAnswerCountsAsActivity() async throws {
        let f = try await Fixture(configuration: IdleTimeoutTests.configuration(seconds: 60))
        // Answered 500 after 90 s: the request stays in flight across a whole idle period.
        f.faults.add(FaultRule(topic: Fixture.bundle, reason: .internalServerError, delayMilliseconds: 90_000))
        var m = Self.machine(idle: f.api.idleTimeout)
        let t0 = Self.t0
        #expect(Did(m.started(at: t0)) == .arm(.idle, in: .seconds(60)))
        // The provider authenticates first, with a request for a topic the rule does not cover (its
        // token is accepted; the topic is then refused).
        var other = Self.headers(path: "/3/device/\(f.token.hex)", jwt: f.jwt())
        other.replaceOrAdd(name: "apns-topic", value: "com.example.other")
        _ = Self.answer(&m, other, body: #"{"aps":{}}"#, on: 1, at: t0, api: f.api)
        #expect(m.connection.hasAuthenticated)
        let headers = Self.headers(path: "/3/device/\(f.token.hex)", jwt: f.jwt())
        // (The request deadline's timer is armed already, from stream 1.)
        #expect(Did(m.headersReceived(headers, endStream: false, on: 3, at: t0)) == .nothing)
        let data = m.dataReceived(ByteBuffer(string: #"{"aps":{}}"#), endStream: true, on: 3)
        let request = try #require(Self.request(data))
        guard case .carryOut(.respond(let response, let delay)) = m.decide(request, on: 3, with: f.api, now: Self.date)
        else {
            Issue.record("the fault rule answers after a delay")
            return
        }
        #expect(delay == .seconds(90))
        #expect(m.inFlight == 1)
        // The request arrived whole: nothing to reset at the request deadline.
        #expect(m.incompleteTimerFired(at: t0 + .seconds(10)) == .init())

        // At 60 s the request is in flight: busy, look again in 60 s (no GOAWAY at 89 s).
        #expect(Did(m.idleTimerFired(at: t0 + .seconds(60))) == .arm(.idle, in: .seconds(60)))
        // The answer at 90 s; the connection then has 60 s more.
        m.answerReady(on: 3, at: t0 + .seconds(90))
        let statuses = [m.answerHeaders(for: response, body: response.body).first(name: ":status")]
        #expect(statuses == ["500"])
        #expect(Did(m.idleTimerFired(at: t0 + .seconds(120))) == .arm(.idle, in: .seconds(30)))
        // No GOAWAY at 149 s; at 150 s, GOAWAY.
        #expect(Did(m.idleTimerFired(at: t0 + .seconds(150))) == .drained(.idleTimeout, lastStreamID: 3))
    }

    @Test func byDefaultAConnectionQuietForAnHourGetsGoAway() async throws {
        let f = try await Fixture()
        var m = Self.machine(idle: f.api.idleTimeout)
        // Armed for an hour: nothing at 3599 s.
        #expect(Did(m.started(at: Self.t0)) == .arm(.idle, in: .seconds(3600)))
        #expect(Did(m.idleTimerFired(at: Self.t0 + .seconds(3600))) == .drained(.idleTimeout))
    }

    @Test func withoutATimeoutAConnectionStaysOpen() async throws {
        var configuration = ProviderAPI.Configuration()
        configuration.idleTimeout = nil
        let f = try await Fixture(configuration: configuration)
        var m = Self.machine(idle: f.api.idleTimeout)
        // No timer, and nothing to do should one fire 48 hours later.
        #expect(Did(m.started(at: Self.t0)) == .nothing)
        #expect(Did(m.idleTimerFired(at: Self.t0 + .hours(48))) == .nothing)
        #expect(!m.draining)
    }

    // MARK: Requests

    /// A body in several DATA frames is put together, and trailers end the request: the split
    /// JSON reads as one document (the unknown token is the first problem found, and it is checked
    /// after the body), while a body of empty frames answers `PayloadEmpty`.
    @Test func aBodyInSeveralFramesAndTrailersMakeOneRequest() async throws {
        let f = try await Fixture()
        var m = Self.machine()
        let headers = Self.headers(path: "/3/device/" + String(repeating: "0", count: 64), jwt: f.jwt())
        let trailers = HPACKHeaders([("x-trailer", "1")])
        var bodies: [String] = []
        for (stream, parts) in [
            (HTTP2StreamID(1), [#"{"aps":"#, #"{"alert":"#, #""hi"}}"#]), (HTTP2StreamID(3), [""]),
        ] {
            _ = m.headersReceived(headers, endStream: false, on: stream, at: Self.t0)
            for part in parts {
                #expect(Did(m.dataReceived(ByteBuffer(string: part), endStream: false, on: stream)) == .nothing)
            }
            let action = m.headersReceived(trailers, endStream: true, on: stream, at: Self.t0)
            #expect(Did(action) == .decide(stream, body: parts.joined()))
            let request = try #require(Self.request(action))
            guard case .answer(let response) = m.decide(request, on: stream, with: f.api, now: Self.date) else {
                Issue.record("answered at once")
                continue
            }
            bodies.append("\(stream) \(response.body ?? "")")
        }
        #expect(
            bodies == [
                #"HTTP2StreamID(1) {"reason":"BadDeviceToken"}"#, #"HTTP2StreamID(3) {"reason":"PayloadEmpty"}"#,
            ])
        #expect(m.streams.isEmpty && m.inFlight == 0)
    }

    /// A body past 5120 bytes is refused (413) by the DATA frame that passes the cap, once; the
    /// rest of the stream changes nothing.
    @Test func aBodyPastTheCapIsRefusedOnceAtTheFrameThatPassesIt() {
        var m = Self.machine()
        _ = m.headersReceived(Self.headers(path: "/3/device/00", jwt: "x"), endStream: false, on: 1, at: Self.t0)
        let almost = ByteBuffer(repeating: UInt8(ascii: "a"), count: Machine.bodyCap - 10)
        #expect(Did(m.dataReceived(almost, endStream: false, on: 1)) == .nothing)
        let past = ByteBuffer(repeating: UInt8(ascii: "a"), count: 11)
        #expect(Did(m.dataReceived(past, endStream: false, on: 1)) == .refuseTooLarge(1))
        #expect(Did(m.dataReceived(past, endStream: false, on: 1)) == .nothing)
        #expect(Did(m.dataReceived(past, endStream: true, on: 1)) == .nothing)
        #expect(m.streams.isEmpty)
        // DATA on a stream that is not open (reset, or never opened) is only counted.
        #expect(Did(m.dataReceived(past, endStream: true, on: 5)) == .nothing)
    }

    /// The connection's window is refilled in 32 KiB steps, flushed at the end of the read.
    @Test func theConnectionWindowIsRefilledIn32KiBSteps() {
        var m = Self.machine()
        #expect(m.bytesReceived(32 * 1024 - 1) == nil)
        #expect(m.readComplete(at: Self.t0) == false)
        #expect(m.bytesReceived(2) == 32 * 1024 + 1)
        #expect(m.readComplete(at: Self.t0) == true)
        #expect(m.readComplete(at: Self.t0) == false)
        #expect(m.bytesReceived(1) == nil)
    }

    /// Streams opened and never finished are reset (CANCEL) at the request deadline, each at its
    /// own; a stream the client reset is forgotten; a drain waits for them and then closes.
    @Test func requestsThatNeverFinishAreResetAtTheirDeadline() {
        var m = Self.machine(stall: .seconds(10))
        let t0 = Self.t0
        let headers = Self.headers(path: "/3/device/00", jwt: "x")
        #expect(Did(m.headersReceived(headers, endStream: false, on: 1, at: t0)) == .arm(.incomplete, in: .seconds(10)))
        // The timer is armed already.
        #expect(Did(m.headersReceived(headers, endStream: false, on: 3, at: t0 + .seconds(4))) == .nothing)
        #expect(Did(m.headersReceived(headers, endStream: false, on: 5, at: t0 + .seconds(5))) == .nothing)
        #expect(Did(m.streamReset(5, at: t0 + .seconds(6))) == .nothing)
        #expect(Did(m.shutdownRequested()) == .drained(.shutdown, lastStreamID: 5, close: false))
        #expect(
            m.incompleteTimerFired(at: t0 + .seconds(10)) == .init(reset: [1], close: false, lookAgainIn: .seconds(4)))
        #expect(m.incompleteTimerFired(at: t0 + .seconds(14)) == .init(reset: [3], close: true, lookAgainIn: nil))
        // Nothing open: a new request arms the timer again.
        #expect(
            Did(m.headersReceived(headers, endStream: false, on: 7, at: t0 + .seconds(20)))
                == .arm(.incomplete, in: .seconds(10)))
    }

    // MARK: Answers

    /// The first answer on a connection enters `apns-id` (and `apns-unique-id`) into the HPACK
    /// dynamic table, so later answers refer to the name by index; values that change from answer
    /// to answer are never indexed.
    @Test func answerHeaderNamesAreIndexedOnceThenReferredTo() {
        var m = Self.machine()
        var response = ProviderResponse.error(.badDeviceToken, apnsID: "A")
        response.uniqueID = "U"
        var names: [[String: HPACKIndexing]] = []
        for _ in 0..<2 {
            let headers = m.answerHeaders(for: response, body: response.body)
            names.append(Dictionary(headers.map { ($0.name, $0.indexable) }, uniquingKeysWith: { a, _ in a }))
        }
        #expect(names.map { $0["apns-id"] } == [.indexable, .nonIndexable])
        #expect(names.map { $0["apns-unique-id"] } == [.indexable, .nonIndexable])
        #expect(names.map { $0["content-length"] } == [.nonIndexable, .nonIndexable])
        response.identifiesRequest = true
        let request = m.answerHeaders(for: response, body: nil)
        #expect(request.first { $0.name == "apns-request-id" }?.indexable == .nonIndexable)
        #expect(request.first(name: "content-type") == nil)
        // Writing an answer makes a flush due at the end of the read.
        #expect(m.readComplete(at: Self.t0) == true)
    }

    /// An answer whose body the client's window holds back for the whole deadline ends the
    /// connection: GOAWAY ENHANCE_YOUR_CALM, then our side closes, once.
    @Test func anAnswerHeldBackByTheWindowForTheDeadlineGivesTheConnectionUp() {
        var m = Self.machine(stall: .seconds(2))
        let t0 = Self.t0
        _ = m.headersReceived(Self.headers(path: "/3/device/00", jwt: "x"), endStream: true, on: 3, at: t0)
        #expect(Did(m.bodyWritten(on: 1, at: t0)) == .arm(.stall, in: .seconds(2)))
        #expect(Did(m.bodyWritten(on: 3, at: t0 + .seconds(1))) == .nothing)
        // The first body leaves: the timer looks again at the second's deadline.
        m.bodySent(on: 1)
        #expect(Did(m.stallTimerFired(at: t0 + .seconds(2))) == .arm(.stall, in: .seconds(1)))
        #expect(Did(m.bodyWritten(on: 5, at: t0 + .seconds(2))) == .nothing)
        let goAway = Machine.GoAway(
            lastStreamID: 3, errorCode: .enhanceYourCalm,
            debugData: "answers waited for a flow-control window that never opened")
        #expect(
            Did(m.stallTimerFired(at: t0 + .seconds(3)))
                == .giveUp(goAway, reason: "2 answers waited 2 s for a flow-control window", closeOutput: true))
        // The codec's own error on the way out is neither logged nor closed again.
        #expect(m.protocolErrorCaught() == false)
    }

    /// A protocol error is logged and our side closed after the codec's GOAWAY, once.
    @Test func aProtocolErrorClosesOnce() {
        var m = Self.machine()
        #expect(m.protocolErrorCaught() == true)
        #expect(m.protocolErrorCaught() == false)
    }

    // MARK: Draining

    /// A graceful stop: GOAWAY `{"reason":"Shutdown"}` naming the last stream, the answer in flight
    /// is still written, then the connection closes; the idle timer no longer matters.
    @Test func aShutdownFinishesTheAnswersInFlightThenCloses() async throws {
        let f = try await Fixture()
        f.faults.add(FaultRule(topic: Fixture.bundle, reason: .internalServerError, delayMilliseconds: 1_000))
        var m = Self.machine()
        _ = m.started(at: Self.t0)
        let headers = Self.headers(path: "/3/device/\(f.token.hex)", jwt: f.jwt())
        _ = m.headersReceived(headers, endStream: false, on: 9, at: Self.t0)
        let action = m.dataReceived(ByteBuffer(string: #"{"aps":{}}"#), endStream: true, on: 9)
        let request = try #require(Self.request(action))
        guard case .carryOut = m.decide(request, on: 9, with: f.api, now: Self.date) else {
            Issue.record("the fault rule answers after a delay")
            return
        }
        #expect(Did(m.shutdownRequested()) == .drained(.shutdown, lastStreamID: 9, close: false))
        #expect(!m.isDrained)
        #expect(Did(m.idleTimerFired(at: Self.t0 + .hours(2))) == .nothing)
        m.answerReady(on: 9, at: Self.t0 + .seconds(1))
        #expect(m.isDrained)
        #expect(Did(m.shutdownRequested()) == .nothing)
    }

    /// A connection with nothing open closes right after its GOAWAY.
    @Test func anEmptyConnectionClosesWithItsGoAway() {
        var m = Self.machine()
        #expect(Did(m.shutdownRequested()) == .drained(.shutdown))
        #expect(m.isDrained)
    }
}
