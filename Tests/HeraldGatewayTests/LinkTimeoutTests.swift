import Foundation
import HeraldCore
import NIOCore
import Testing

@testable import HeraldGateway

/// Acknowledgement deadlines as a value, in plain instants.
@Suite struct AcknowledgementDeadlinesTests {
    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    @Test func deadlinesComeInTheOrderPushesWereWritten() {
        var deadlines = AcknowledgementDeadlines(timeout: .seconds(2))
        #expect(deadlines.next == nil)
        deadlines.written(apnsID: "a", ticket: 1, now: t0)
        deadlines.written(apnsID: "b", ticket: 2, now: t0 + .milliseconds(500))
        deadlines.written(apnsID: "a", ticket: 3, now: t0 + .seconds(1))  // an apns-id used again
        #expect(deadlines.next == t0 + .seconds(2))
        #expect(deadlines.expired(now: t0 + .milliseconds(1999)).isEmpty)
        #expect(deadlines.expired(now: t0 + .milliseconds(2500)).map(\.ticket) == [1, 2])
        #expect(deadlines.next == t0 + .seconds(3))
        #expect(deadlines.expired(now: t0 + .seconds(60)).map { "\($0.apnsID)\($0.ticket)" } == ["a3"])
        #expect(deadlines.next == nil && deadlines.count == 0)
    }

    @Test func aLongRunKeepsOnlyWhatIsStillToCome() {
        var deadlines = AcknowledgementDeadlines(timeout: .seconds(1))
        for i in 0..<5000 {
            deadlines.written(apnsID: "\(i)", ticket: i, now: t0 + .milliseconds(Int64(i)))
            if i % 100 == 99 {
                // Everything written more than a second ago has expired, exactly once.
                let due = deadlines.expired(now: t0 + .milliseconds(Int64(i)))
                #expect(due.allSatisfy { $0.at <= t0 + .milliseconds(Int64(i)) })
            }
        }
        #expect(deadlines.count == 1000)
        #expect(deadlines.expired(now: t0 + .seconds(10)).map(\.ticket) == Array(4000..<5000))
    }

    /// After the timer fires, it is armed again no sooner than the coalescing time (a twentieth of the
    /// timeout, at most 10 ms), however close the next deadline; one further away is kept exactly.
    @Test func afterFiringTheTimerWaitsForDeadlinesToGatherButNotForOnesFurtherAway() {
        var deadlines = AcknowledgementDeadlines(timeout: .seconds(2))
        #expect(deadlines.coalescing == .milliseconds(10))
        #expect(AcknowledgementDeadlines(timeout: .milliseconds(100)).coalescing == .milliseconds(5))
        #expect(deadlines.next(afterFiringAt: t0) == nil)
        deadlines.written(apnsID: "a", ticket: 1, now: t0)
        deadlines.written(apnsID: "b", ticket: 2, now: t0 + .microseconds(20))
        deadlines.written(apnsID: "c", ticket: 3, now: t0 + .milliseconds(500))
        let fired = t0 + .seconds(2)
        #expect(deadlines.expired(now: fired).map(\.ticket) == [1])
        // b is due 20 µs later: the timer waits 10 ms for it (and whatever else comes due by then).
        #expect(deadlines.next(afterFiringAt: fired) == fired + .milliseconds(10))
        #expect(deadlines.expired(now: fired + .milliseconds(10)).map(\.ticket) == [2])
        // c is due 490 ms later: exactly then.
        #expect(deadlines.next(afterFiringAt: fired + .milliseconds(10)) == t0 + .milliseconds(2500))
    }

    /// A deadline settled by its slot (the push was acknowledged) is not handed over when it comes;
    /// a slot already taken, compacted away or from before a removeAll settles nothing else.
    @Test func settledDeadlinesPassWithoutBeingHandedOver() {
        var deadlines = AcknowledgementDeadlines(timeout: .seconds(1))
        var slots: [Int] = []
        for i in 0..<3000 {
            slots.append(deadlines.written(apnsID: "\(i)", ticket: i, now: t0 + .milliseconds(Int64(i))))
        }
        #expect(slots == Array(0..<3000))
        for i in stride(from: 0, to: 3000, by: 2) { deadlines.settle(slots[i]) }
        // The first 2000 come (and the queue is compacted); only the odd ones are handed over.
        #expect(
            deadlines.expired(now: t0 + .milliseconds(2999)).map(\.ticket) == Array(stride(from: 1, to: 2000, by: 2)))
        // Taken and compacted slots settle nothing now.
        deadlines.settle(slots[1])
        deadlines.settle(slots[1999])
        #expect(deadlines.expired(now: t0 + .seconds(10)).map(\.ticket) == Array(stride(from: 2001, to: 3000, by: 2)))
        // Slots go on after a removeAll: an old one cannot settle a new deadline.
        deadlines.written(apnsID: "x", ticket: 9000, now: t0)
        deadlines.removeAll()
        let fresh = deadlines.written(apnsID: "y", ticket: 9001, now: t0)
        #expect(fresh == 3001)
        deadlines.settle(3000)
        deadlines.settle(5)
        #expect(deadlines.expired(now: t0 + .seconds(2)).map(\.ticket) == [9001])
    }

    @Test func removingAllLeavesNothing() {
        var deadlines = AcknowledgementDeadlines(timeout: .seconds(1))
        deadlines.written(apnsID: "a", ticket: 1, now: t0)
        deadlines.removeAll()
        #expect(deadlines.next == nil && deadlines.expired(now: t0 + .seconds(5)).isEmpty)
    }
}

/// The link's acknowledgement timeouts: value tests of its state machine, in time the test moves.
/// A push not acknowledged in time is answered `notAcknowledged` (the router then stores it, or
/// discards an expiration-0 one, and answers 200); a late acknowledgement of it is recorded (it
/// leaves the store). The store's side of both runs end to end in `LinkTimeoutEndToEndTests`.
@Suite struct LinkTimeoutTests {
    typealias Link = LinkMachineDriver

    @Test func anAcknowledgementThatComesTooLateStillRemovesTheStoredCopy() {
        var link = Link.online(acknowledgementTimeout: .seconds(2))
        let id = "22222222-2222-2222-2222-222222222222"
        link.offer(Link.push(id))
        #expect(link.written().map(\.apnsID) == [id])
        link.advance(by: .milliseconds(1999))
        #expect(Link.answers(link.take()).isEmpty)
        link.advance(by: .milliseconds(1))
        // Not acknowledged: the router stores it and answers 200.
        #expect(link.take() == [Link.answer(1, .notAcknowledged(deliveredAt: Link.startDate))])
        link.acknowledge([id])
        // Late, the acknowledgement still removes the stored copy.
        #expect(
            link.take() == [
                .recordAcknowledged(
                    Link.push(id), device: Link.device, deliveredAt: Link.startDate, acknowledgedAt: link.at)
            ])
    }

    @Test func anExpirationZeroPushIsDiscardedWhenNotAcknowledged() {
        var link = Link.online(acknowledgementTimeout: .seconds(2))
        let id = "33333333-3333-3333-3333-333333333333"
        // Expiration 0, and priority 5: written at once all the same (one attempt, now).
        link.offer(Link.push(id, priority: .normal), expiresIn: nil)
        #expect(link.written().map(\.apnsID) == [id])
        link.advance(by: .seconds(2))
        // Delivered, not acknowledged: the router logs it discarded (never stored) and answers 200.
        #expect(link.take() == [Link.answer(1, .notAcknowledged(deliveredAt: Link.startDate))])
        // Nothing of it is left to answer when the link closes.
        #expect(Link.answers(link.machine.closed(at: link.at)).isEmpty)
    }

    /// Pushes written a millisecond apart are not each given a timer of their own once the first
    /// deadline has come: the others are answered together, none before its deadline and none more
    /// than 10 ms after it.
    @Test func deadlinesCloseTogetherAreAnsweredTogetherAtMostTenMillisecondsLate() {
        var link = Link.online(acknowledgementTimeout: .seconds(2))
        for i in 1...5 {
            link.offer(Link.push("push-\(i)"))
            link.advance(by: .milliseconds(1))
        }
        #expect(link.written().count == 5)
        link.advance(by: .milliseconds(1995))
        #expect(Link.answers(link.take()).map(\.ticket) == [1])
        #expect(link.deadline == Link.start + .milliseconds(2010))
        link.advance(by: .milliseconds(9))
        #expect(Link.answers(link.take()).isEmpty)
        link.advance(by: .milliseconds(1))
        #expect(Link.answers(link.take()).map(\.ticket) == [2, 3, 4, 5])
        #expect(link.deadline == nil)
    }

    /// A provider may send two pushes under one `apns-id`: each waits for the acknowledgement on its
    /// own, each is stored when it does not come in time, and the late acknowledgement settles both.
    @Test func twoPushesUnderOneAPNsIDAreEachTimedOutAndSettledTogether() {
        var link = Link.online(acknowledgementTimeout: .seconds(2))
        let id = "55555555-5555-5555-5555-555555555555"
        link.offer(Link.push(id))
        #expect(link.written().map(\.apnsID) == [id])
        link.advance(by: .seconds(1))
        let again = Link.push(id, body: #"{"aps":{"alert":"again"}}"#)
        link.offer(again)
        #expect(link.written().map(\.apnsID) == [id])
        link.advance(by: .seconds(2))
        // Both were written and neither acknowledged: both answered, to be stored.
        let secondAt = Link.startDate.addingTimeInterval(1)
        #expect(
            link.answered() == [
                Link.answer(1, .notAcknowledged(deliveredAt: Link.startDate)),
                Link.answer(2, .notAcknowledged(deliveredAt: secondAt)),
            ])
        link.acknowledge([id])
        #expect(
            link.take() == [
                .recordAcknowledged(
                    Link.push(id), device: Link.device, deliveredAt: Link.startDate, acknowledgedAt: link.at),
                .recordAcknowledged(again, device: Link.device, deliveredAt: secondAt, acknowledgedAt: link.at),
            ])
    }

    /// A push left unacknowledged among acknowledged ones still times out (its answer comes
    /// without an acknowledgement) and is stored, and the acknowledged ones are not, also after
    /// more than a thousand deadlines have passed.
    @Test func anUnacknowledgedPushAmongAcknowledgedOnesStillTimesOut() throws {
        var link = Link.online(acknowledgementTimeout: .seconds(2))
        var sent = 0
        /// What the providers were told, by `apns-id`, of every push not acknowledged so far.
        var notAcknowledged: [String] = []

        /// Sends `count` pushes and acknowledges all but the `skip`th written, then lets the
        /// acknowledgement time pass; returns the answers and the skipped push's `apns-id`.
        func round(_ count: Int, skip: Int?) -> (answers: [LinkOutcome], skipped: String?) {
            for _ in 0..<count {
                sent += 1
                link.offer(Link.push("push-\(sent)"))
            }
            let written = link.written().map(\.apnsID)
            #expect(written.count == count)
            link.acknowledge(written.enumerated().filter { $0.offset != skip }.map(\.element))
            link.advance(by: .seconds(2))
            let answers = Link.answers(link.take())
            for (ticket, outcome) in answers {
                if case .notAcknowledged = outcome { notAcknowledged.append("push-\(ticket)") }
            }
            return (answers.map(\.outcome), skip.map { written[$0] })
        }

        let first = round(3, skip: 1)
        #expect(first.answers.count == 3)
        let skipped = try #require(first.skipped)
        #expect(notAcknowledged == [skipped])

        // Over a thousand more, all acknowledged, in between.
        for _ in 0..<9 { #expect(round(120, skip: nil).answers.count == 120) }
        let last = round(3, skip: 2)
        #expect(last.answers.count == 3)
        let third = try #require(last.skipped)
        #expect(Set(notAcknowledged) == [skipped, third])
        link.acknowledge([skipped, third])
        #expect(link.take().count { if case .recordAcknowledged = $0 { true } else { false } } == 2)
    }
}
