import HeraldCore
import NIOCore
import NIOEmbedded
import Testing

@testable import HeraldRuntime

struct LoopTimersTests {
    @Test func timersFireAtTheirDeadlinesInOrderAndNotBefore() {
        let loop = EmbeddedEventLoop()
        let timers = LoopTimers(loop: loop)
        var fired: [String] = []
        timers.schedule(in: .seconds(30)) { fired.append("c") }
        timers.schedule(in: .seconds(10)) { fired.append("a") }
        timers.schedule(in: .seconds(20)) { fired.append("b1") }
        timers.schedule(in: .seconds(20)) { fired.append("b2") }
        loop.advanceTime(by: .milliseconds(9_999))
        #expect(fired.isEmpty)
        loop.advanceTime(by: .milliseconds(1))
        #expect(fired == ["a"])
        loop.advanceTime(by: .seconds(10))
        #expect(fired == ["a", "b1", "b2"], "one deadline: in the order scheduled")
        loop.advanceTime(by: .seconds(10))
        #expect(fired == ["a", "b1", "b2", "c"])
        #expect(timers.count == 0)
    }

    @Test func anEarlierTimerScheduledLaterStillFiresOnTime() {
        let loop = EmbeddedEventLoop()
        let timers = LoopTimers(loop: loop)
        var fired: [String] = []
        timers.schedule(in: .seconds(300)) { fired.append("late") }
        timers.schedule(in: .seconds(5)) { fired.append("early") }
        loop.advanceTime(by: .seconds(5))
        #expect(fired == ["early"])
        loop.advanceTime(by: .seconds(295))
        #expect(fired == ["early", "late"])
    }

    @Test func aCancelledTimerNeverFiresAndTheNextOneKeepsItsTime() {
        let loop = EmbeddedEventLoop()
        let timers = LoopTimers(loop: loop)
        var fired: [String] = []
        let first = timers.schedule(in: .seconds(1)) { fired.append("first") }
        timers.schedule(in: .seconds(2)) { fired.append("second") }
        timers.cancel(first)
        #expect(!first.isScheduled)
        loop.advanceTime(by: .seconds(1))
        #expect(fired.isEmpty)
        loop.advanceTime(by: .seconds(1))
        #expect(fired == ["second"])
        timers.cancel(first)  // twice, and after the other fired: nothing happens
        #expect(timers.count == 0)
    }

    @Test func anActionMaySchedulePastAndFutureTimersAndCancelOthers() {
        let loop = EmbeddedEventLoop()
        let timers = LoopTimers(loop: loop)
        var fired: [String] = []
        var victim: LoopTimers.Timer?
        timers.schedule(in: .seconds(1)) {
            fired.append("a")
            timers.schedule(in: .seconds(0)) { fired.append("now") }
            timers.schedule(in: .seconds(1)) { fired.append("again") }
            if let victim { timers.cancel(victim) }
        }
        victim = timers.schedule(in: .seconds(1)) { fired.append("victim") }
        loop.advanceTime(by: .seconds(1))
        #expect(fired == ["a", "now"])
        loop.advanceTime(by: .seconds(1))
        #expect(fired == ["a", "now", "again"])
    }

    @Test func anActionReschedulingItselfInThePastLetsTheLoopRunOtherWork() {
        let loop = EmbeddedEventLoop()
        let timers = LoopTimers(loop: loop)
        var otherWorkRan = false
        var rounds = 0
        func again() {
            rounds += 1
            if !otherWorkRan, rounds < 10_000 { timers.schedule(in: .zero) { again() } }
        }
        timers.schedule(in: .seconds(1)) { again() }
        loop.scheduleTask(in: .seconds(1)) { otherWorkRan = true }
        loop.advanceTime(by: .seconds(1))
        #expect(otherWorkRan)
        #expect(rounds == 2, "the second round waited for the loop's other task")
    }

    @Test func aTimerInThePastScheduledByOtherWorkFiresAndTheLaterOnesKeepTheirTime() {
        let loop = EmbeddedEventLoop()
        let timers = LoopTimers(loop: loop)
        var fired: [String] = []
        // Other work due before the timers' task schedules an earlier timer: the task is replaced.
        loop.scheduleTask(in: .seconds(10)) {
            timers.schedule(at: NIODeadline.uptimeNanoseconds(0) + .seconds(5)) { fired.append("past") }
            timers.schedule(in: .seconds(20)) { fired.append("thirty") }
        }
        timers.schedule(in: .seconds(10)) { fired.append("ten") }
        loop.advanceTime(by: .seconds(10))
        #expect(fired == ["past", "ten"])
        loop.advanceTime(by: .seconds(20))
        #expect(fired == ["past", "ten", "thirty"])
        #expect(timers.count == 0)
    }

    /// Thousands of random schedules, cancellations and advances against a plain sorted list.
    @Test(arguments: [1, 2, 3, 4])
    func theHeapAgreesWithASortedList(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let loop = EmbeddedEventLoop()
        let timers = LoopTimers(loop: loop)
        var fired: [Int] = []
        // The model: (deadline, scheduling order, id) of each timer still to fire.
        var model: [(at: NIODeadline, order: Int, id: Int)] = []
        var live: [Int: LoopTimers.Timer] = [:]
        // The ids of `live` in an array, so that a seed picks the same ones in every process.
        var ids: [Int] = []
        var expected: [Int] = []
        for step in 0..<5_000 {
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<6:
                let delay = TimeAmount.milliseconds(Int64.random(in: 0...2_000, using: &random))
                live[step] = timers.schedule(in: delay) { fired.append(step) }
                ids.append(step)
                model.append((loop.now + delay, step, step))
            case 6..<8:
                guard !ids.isEmpty else { continue }
                ids.swapAt(Int.random(in: 0..<ids.count, using: &random), ids.count - 1)
                let id = ids.removeLast()
                timers.cancel(live.removeValue(forKey: id)!)
                model.removeAll { $0.id == id }
            default:
                let target = loop.now + .milliseconds(Int64.random(in: 0...500, using: &random))
                let due = model.filter { $0.at <= target }.sorted { ($0.at, $0.order) < ($1.at, $1.order) }
                expected += due.map(\.id)
                model.removeAll { $0.at <= target }
                for entry in due { live[entry.id] = nil }
                ids.removeAll { live[$0] == nil }
                loop.advanceTime(to: target)
            }
            #expect(timers.count == model.count)
        }
        #expect(fired == expected)
        #expect(fired.count > 1_000)
    }
}
