import Foundation
import HeraldCore
@testable import HeraldProvider
import Synchronization
import Testing

/// A clock that moves only when something sleeps on it: `sleep(until:)` jumps to the deadline at
/// once and records it, so pacing is tested without waiting.
final class JumpingClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
    }

    private let state = Mutex<(now: Instant, sleeps: [Duration])>((Instant(offset: .zero), []))

    var now: Instant { state.withLock { $0.now } }
    var minimumResolution: Duration { .zero }
    /// The deadlines slept until, as offsets from the start.
    var sleeps: [Duration] { state.withLock { $0.sleeps } }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        state.withLock {
            $0.sleeps.append(deadline.offset)
            $0.now = max($0.now, deadline)
        }
    }
}

@Suite struct APNsBulkSendTests {
    static let accepted = APNsDelivery(apnsID: "id", uniqueID: nil, attempts: 1)

    @Test func theTallyCountsAnswersAndKeepsTheTokensToDrop() {
        var tally = APNsBulkTally()
        #expect(tally.allAccepted && tally.done == 0)
        let gone = Date(timeIntervalSince1970: 1_700_000_000)
        tally.add(.init(token: "aa", result: .success(Self.accepted)))
        tally.add(
            .init(
                token: "bb",
                result: .failure(APNsError(status: 410, reason: .known(.unregistered), apnsID: nil, timestamp: gone))))
        tally.add(
            .init(token: "cc", result: .failure(APNsError(status: 400, reason: .known(.badDeviceToken), apnsID: nil))))
        tally.add(.init(token: "dd", result: .success(Self.accepted)))
        #expect(tally.done == 4)
        #expect(tally.answers == ["200": 2, "410 Unregistered": 1, "400 BadDeviceToken": 1])
        #expect(tally.drops == [.init(token: "bb", reason: "Unregistered", at: gone)])
        #expect(!tally.allAccepted)
    }

    @Test func anErrorWithoutAnAnswerIsCountedAsNoAnswer() {
        struct Refused: Error, CustomStringConvertible { var description: String { "connection refused" } }
        let outcome = APNsBulkTally.Outcome(token: "aa", result: .failure(Refused()))
        #expect(outcome == .init(answer: "no answer: connection refused"))
    }

    @Test func thePacerSpacesSendsAndDoesNotCatchUpAfterAPause() {
        var pacer = APNsPacer<JumpingClock.Instant>(perSecond: 4)
        #expect(pacer.interval == .milliseconds(250))
        let start = JumpingClock.Instant(offset: .seconds(10))
        #expect(pacer.due(now: start) == start)
        #expect(pacer.due(now: start) == start.advanced(by: .milliseconds(250)))
        #expect(pacer.due(now: start.advanced(by: .milliseconds(100))) == start.advanced(by: .milliseconds(500)))
        // Behind by far: the next send is due now, not a burst to make up for the gap.
        let late = start.advanced(by: .seconds(5))
        #expect(pacer.due(now: late) == late)
        #expect(pacer.due(now: late) == late.advanced(by: .milliseconds(250)))
    }

    @Test func aPacedSendWaitsOneIntervalBetweenSendsOnItsClock() async {
        let clock = JumpingClock()
        let sent = Mutex<[String]>([])
        let tokens = (0..<5).map { "token\($0)" }
        let tally = await APNsBulkSend(concurrency: 2, perSecond: 10, clock: clock).run(tokens) { token in
            sent.withLock { $0.append(token) }
            return Self.accepted
        }
        #expect(tally.answers == ["200": 5] && tally.done == 5)
        #expect(sent.withLock { $0.sorted() } == tokens)
        #expect(clock.sleeps == (0..<5).map { .milliseconds(100 * $0) })
    }

    @Test func anUnpacedSendKeepsAtMostConcurrencyInFlightAndReportsEveryAnswer() async {
        let clock = JumpingClock()
        let flight = Mutex<(now: Int, most: Int)>((0, 0))
        let reported = Mutex<[Int]>([])
        let tokens = (0..<20).map { String(format: "%064x", $0) }
        let tally = await APNsBulkSend(concurrency: 3, perSecond: 0, clock: clock).run(tokens) { token in
            flight.withLock {
                $0.now += 1
                $0.most = max($0.most, $0.now)
            }
            await Task.yield()
            flight.withLock { $0.now -= 1 }
            if token == tokens[7] {
                throw APNsError(status: 410, reason: .known(.unregistered), apnsID: nil)
            }
            return Self.accepted
        } progress: { tally in
            reported.withLock { $0.append(tally.done) }
        }
        #expect(flight.withLock { $0.most } <= 3)
        #expect(clock.sleeps.isEmpty)
        #expect(reported.withLock { $0 } == Array(1...20))
        #expect(tally.answers == ["200": 19, "410 Unregistered": 1])
        #expect(tally.drops.map { $0.token } == [tokens[7]])
    }
}
