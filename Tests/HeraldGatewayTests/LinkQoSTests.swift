import Foundation
import HeraldCore
import NIOCore
import Testing

@testable import HeraldGateway

/// The QoS runs on the link's event-loop time; these tests write its instants as seconds after t0.
extension NIODeadline {
    fileprivate func addingTimeInterval(_ seconds: TimeInterval) -> NIODeadline {
        self + .nanoseconds(Int64((seconds * 1e9).rounded()))
    }
}

@Suite struct LinkQoSTests {
    let t0 = NIODeadline.uptimeNanoseconds(1_800_000_000_000_000_000)

    func ticket(_ id: Int, _ priority: PushPriority, topic: String = "com.example.a", background: Bool = false)
        -> LinkQoS.Ticket
    {
        LinkQoS.Ticket(id: id, priority: priority, topic: topic, background: background)
    }

    @Test func priorityTenGoesAtOnceAndTakesTheWaitingWithIt() {
        var qos = LinkQoS(configuration: .init(batchWindow: .seconds(5)))
        #expect(qos.submit(ticket(1, .low), now: t0).send == [])
        let batch = qos.submit(ticket(2, .normal), now: t0)
        #expect(batch.send == [])
        #expect(batch.wakeAt == t0.addingTimeInterval(5))
        let out = qos.submit(ticket(3, .immediate), now: t0.addingTimeInterval(1))
        #expect(out.send == [3, 2, 1])
        #expect(out.wakeAt == nil)
        #expect(qos.waiting == 0)
    }

    /// A push that goes at once and alone, the usual case, is told as `only` (no array is made for
    /// it); with others waiting, they all go in `send`.
    @Test func aPushThatGoesAloneIsHeldWithoutAnArray() {
        var qos = LinkQoS(configuration: .init(batchWindow: .seconds(5)))
        let alone = qos.submit(ticket(1, .immediate), now: t0)
        #expect(alone.only == 1)
        #expect(alone.send == [1])
        _ = qos.submit(ticket(2, .low), now: t0)
        let together = qos.submit(ticket(3, .immediate), now: t0)
        #expect(together.only == nil)
        #expect(together.send == [3, 2])
        var changed = alone
        changed.send.append(4)
        #expect(changed.only == nil && changed.send == [1, 4])
    }

    @Test func priorityFiveWaitsForTheWindowAndPriorityOneRidesAlong() {
        var qos = LinkQoS(configuration: .init(batchWindow: .seconds(2)))
        _ = qos.submit(ticket(1, .normal), now: t0)
        _ = qos.submit(ticket(2, .low), now: t0.addingTimeInterval(0.5))
        // A second priority-5 push joins the open window; it does not extend it.
        #expect(qos.submit(ticket(3, .normal), now: t0.addingTimeInterval(1.5)).wakeAt == t0.addingTimeInterval(2))
        #expect(qos.wake(now: t0.addingTimeInterval(1.9)).send == [])
        let out = qos.wake(now: t0.addingTimeInterval(2))
        #expect(out.send == [1, 3, 2])
        #expect(out.wakeAt == nil)
    }

    @Test func aZeroWindowSendsPriorityFiveAtOnce() {
        var qos = LinkQoS(configuration: .init(batchWindow: .seconds(0)))
        _ = qos.submit(ticket(1, .low), now: t0)
        #expect(qos.submit(ticket(2, .normal), now: t0).send == [2, 1])
    }

    @Test func priorityOneAloneNeverGoes() {
        var qos = LinkQoS(configuration: .init(batchWindow: .seconds(1)))
        let out = qos.submit(ticket(1, .low), now: t0)
        #expect(out.send == [])
        #expect(out.wakeAt == nil)
        #expect(qos.wake(now: t0.addingTimeInterval(86_400)).send == [])
        #expect(qos.waiting == 1)
    }

    @Test func backgroundPushesBeyondTheBudgetAreHeldUntilASlotFrees() {
        var qos = LinkQoS(
            configuration: .init(batchWindow: .seconds(0), backgroundBudget: 3, backgroundPeriod: .seconds(3600)))
        for i in 0..<3 {
            #expect(
                qos.submit(ticket(i, .normal, background: true), now: t0.addingTimeInterval(Double(i) * 60)).send
                    == [i])
        }
        // The fourth within the hour is held; another app has its own budget.
        let held = qos.submit(ticket(3, .normal, background: true), now: t0.addingTimeInterval(600))
        #expect(held.send == [])
        #expect(held.wakeAt == t0.addingTimeInterval(3600))
        #expect(qos.submit(ticket(4, .normal, topic: "com.example.b", background: true), now: t0).send == [4])
        // An alert push is not counted.
        #expect(qos.submit(ticket(5, .immediate), now: t0.addingTimeInterval(700)).send == [5])
        #expect(qos.wake(now: t0.addingTimeInterval(3599)).send == [])
        let released = qos.wake(now: t0.addingTimeInterval(3600))
        #expect(released.send == [3])
        // The next slot frees when the second one sent is an hour old.
        #expect(
            qos.submit(ticket(6, .normal, background: true), now: t0.addingTimeInterval(3601)).wakeAt
                == t0.addingTimeInterval(3660))
    }

    @Test func theBacklogGoesAsOneBatchExceptBackgroundOverBudget() {
        var qos = LinkQoS(configuration: .init(batchWindow: .seconds(10), backgroundBudget: 1))
        _ = qos.submit(ticket(1, .low), now: t0)
        let out = qos.submitBacklog(
            [
                ticket(2, .low), ticket(3, .normal), ticket(4, .normal, background: true),
                ticket(5, .normal, background: true),
            ], now: t0)
        #expect(out.send == [2, 3, 4, 1])
        #expect(out.wakeAt == t0.addingTimeInterval(3600))
        #expect(qos.waiting == 1)
    }

    @Test func removeAndDrain() {
        var qos = LinkQoS(configuration: .init(batchWindow: .seconds(10)))
        _ = qos.submit(ticket(1, .normal), now: t0)
        _ = qos.submit(ticket(2, .low), now: t0)
        qos.remove(1)
        #expect(qos.wake(now: t0.addingTimeInterval(10)).send == [])
        #expect(qos.drain() == [2])
        #expect(qos.waiting == 0)
    }
}
