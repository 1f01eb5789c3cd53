import Foundation
import HeraldRuntime
import NIOCore
import NIOPosix

// What a device link's timer costs its event loop when n links are connected there: a link that
// closes cancels its liveness timer and the link that takes its place schedules one. NIO's
// scheduled tasks (`scheduleTask` and `Scheduled.cancel`, the reference) against ``LoopTimers``,
// on one real event loop, the same random links for both; best of 3 rounds. Prints the ratio per n.
// (scripts/bench-timers, BENCHMARKS.md "Timers of many links".)

let sizes =
    CommandLine.arguments.dropFirst().compactMap { Int($0) }.isEmpty
    ? [1_000, 10_000, 50_000, 100_000] : CommandLine.arguments.dropFirst().compactMap { Int($0) }
let churn = 10_000
let rounds = 3

func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

/// The seconds `churn` links take to close and be replaced on a loop holding `n`, with NIO's tasks.
func nio(_ loop: any EventLoop, n: Int, order: [Int]) throws -> Double {
    try loop.submit {
        var held: [Scheduled<Void>?] = (0..<n).map { i in
            loop.scheduleTask(in: .seconds(300) + .milliseconds(Int64(i % 1000))) {}
        }
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            for i in order {
                held[i]?.cancel()
                held[i] = loop.scheduleTask(in: .seconds(300)) {}
            }
        }
        // Not timed: what is left goes when the loop's group shuts down.
        return seconds(elapsed)
    }.wait()
}

/// The same with ``LoopTimers``.
func heraldTimers(_ loop: any EventLoop, n: Int, order: [Int]) throws -> Double {
    try loop.submit {
        let timers = LoopTimers(loop: loop)
        var held: [LoopTimers.Timer] = (0..<n).map { i in
            timers.schedule(in: .seconds(300) + .milliseconds(Int64(i % 1000))) {}
        }
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            for i in order {
                timers.cancel(held[i])
                held[i] = timers.schedule(in: .seconds(300)) {}
            }
        }
        for timer in held { timers.cancel(timer) }
        return seconds(elapsed)
    }.wait()
}

print("timers: \(churn) links closing and replaced on one event loop holding n, best of \(rounds) rounds")
var generator = SystemRandomNumberGenerator()
for n in sizes {
    let order = (0..<churn).map { _ in Int.random(in: 0..<n, using: &generator) }
    var best = (nio: Double.infinity, herald: Double.infinity)
    for _ in 0..<rounds {
        // A fresh loop for each: NIO's heap is left holding the round's tasks.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        best.nio = min(best.nio, try nio(loop, n: n, order: order))
        best.herald = min(best.herald, try heraldTimers(loop, n: n, order: order))
        try group.syncShutdownGracefully()
    }
    let perNIO = best.nio / Double(churn) * 1e6
    let perHerald = best.herald / Double(churn) * 1e6
    print(
        String(
            format: "  n = %7d: NIO %8.2f µs, LoopTimers %6.2f µs per link closed and replaced; LoopTimers %.3f of NIO",
            n, perNIO, perHerald, perHerald / perNIO))
}
