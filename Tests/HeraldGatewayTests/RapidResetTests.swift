import Foundation
import HeraldCore
import NIOCore
import NIOHPACK
import NIOHTTP2
import Testing

@testable import HeraldGateway

/// The rapid-reset defence as values: only a reset of a stream the gateway had not answered
/// counts, at most 200 within 30 s; a client that resets streams after their answers is never
/// cut off. (The attack itself, over a real connection, is in HTTP2AbuseTests.)
@Suite struct RapidResetTests {
    typealias T = ProviderConnectionStateMachineTests
    static let expectedGiveUp = Did.giveUp(
        Machine.GoAway(
            lastStreamID: 0, errorCode: .enhanceYourCalm, debugData: "too many streams reset before their answers"),
        reason: "more than 200 streams reset before their answers within 30 s", closeOutput: true)

    /// `expected` with the last stream the connection saw.
    static func giveUp(lastStreamID: HTTP2StreamID) -> Did {
        guard case .giveUp(var goAway, let reason, let close) = expectedGiveUp else { return expectedGiveUp }
        goAway.lastStreamID = lastStreamID
        return .giveUp(goAway, reason: reason, closeOutput: close)
    }

    /// A whole request on `id` that a fault rule's delay keeps in flight: decided and carried out.
    static func carryOut(
        on id: HTTP2StreamID, _ m: inout Machine, _ f: Fixture, _ headers: HPACKHeaders, at: NIODeadline
    ) throws {
        _ = m.headersReceived(headers, endStream: false, on: id, at: at)
        let request = try #require(T.request(m.dataReceived(ByteBuffer(string: "{}"), endStream: true, on: id)))
        guard case .carryOut = m.decide(request, on: id, with: f.api, now: T.date) else {
            throw TestFailure("the fault rule answers after a delay, so the request is carried out")
        }
    }

    @Test func theWindowCountsTheLastResetsOnly() {
        var window = UnansweredResets(limit: 3, window: .seconds(30))
        let t0 = T.t0
        let first = [0, 1, 2].map { window.record(at: t0 + .seconds(Int64($0))) }
        #expect(first == [false, false, false])
        // A fourth within 30 s of the first: too many.
        let fourth = window.record(at: t0 + .seconds(29))
        #expect(fourth)
        // Three every 30 s, for ever: never too many.
        var spaced = UnansweredResets(limit: 3, window: .seconds(30))
        let verdicts = (0..<100).map { spaced.record(at: t0 + .seconds(Int64($0 * 10))) }
        #expect(!verdicts.contains(true))
    }

    /// HEADERS then RST_STREAM, as the attack sends them: the 201st within 30 s gives the
    /// connection up with ENHANCE_YOUR_CALM, once.
    @Test func streamsResetWhileTheirRequestsArriveAreCounted() {
        var m = T.machine()
        let headers = T.headers(path: "/3/device/00", jwt: "x")
        var id = HTTP2StreamID(1)
        for i in 0..<200 {
            _ = m.headersReceived(headers, endStream: false, on: id, at: T.t0)
            #expect(Did(m.streamReset(id, at: T.t0 + .milliseconds(Int64(i)))) == .nothing)
            id = id.advanced(by: 2)
        }
        _ = m.headersReceived(headers, endStream: false, on: id, at: T.t0)
        #expect(Did(m.streamReset(id, at: T.t0 + .seconds(1))) == Self.giveUp(lastStreamID: id))
        // Given up already: nothing more to do for later resets.
        _ = m.headersReceived(headers, endStream: false, on: id.advanced(by: 2), at: T.t0)
        #expect(Did(m.streamReset(id.advanced(by: 2), at: T.t0 + .seconds(1))) == .nothing)
    }

    /// A request whole and being carried out (here a fault rule's delay) that the client resets
    /// threw work away: it counts too, until its answer is ready.
    @Test func streamsResetWhileTheirAnswersAreCarriedOutAreCounted() async throws {
        let f = try await Fixture()
        f.faults.add(FaultRule(topic: Fixture.bundle, reason: .internalServerError, delayMilliseconds: 1_000))
        var m = T.machine()
        let headers = T.headers(path: "/3/device/\(f.token.hex)", jwt: f.jwt())
        var id = HTTP2StreamID(1)
        for i in 0...200 {
            try Self.carryOut(on: id, &m, f, headers, at: T.t0)
            let action = Did(m.streamReset(id, at: T.t0 + .milliseconds(Int64(i))))
            #expect(action == (i < 200 ? .nothing : Self.giveUp(lastStreamID: id)), "reset \(i)")
            id = id.advanced(by: 2)
        }
    }

    /// Resets of streams already answered (what some clients send after every answer) cost the
    /// gateway nothing and never count: 10,000 in a second leave the connection as it was.
    @Test func resetsAfterTheAnswersNeverCount() async throws {
        let f = try await Fixture()
        f.faults.add(FaultRule(topic: Fixture.bundle, reason: .internalServerError, delayMilliseconds: 1))
        var m = T.machine()
        let headers = T.headers(path: "/3/device/\(f.token.hex)", jwt: f.jwt())
        var id = HTTP2StreamID(1)
        for i in 0..<10_000 {
            let at = T.t0 + .microseconds(Int64(i * 100))
            try Self.carryOut(on: id, &m, f, headers, at: at)
            m.answerReady(on: id, at: at)
            #expect(Did(m.streamReset(id, at: at)) == .nothing, "reset \(i)")
            // And a reset of a stream that never existed, or of one long gone.
            #expect(Did(m.streamReset(id.advanced(by: 10_001), at: at)) == .nothing)
            id = id.advanced(by: 2)
        }
        #expect(!m.closingAfterGoAway)
        #expect(m.inFlight == 0)
    }
}
