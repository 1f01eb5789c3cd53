import Benchmark
import Foundation
import HeraldCore
import HeraldDevice
import HeraldTesting

// A scheduler holding 1,000,000 pending requests across 10,000 apps.
let base: Scheduler = {
    var rng = SeededGenerator(seed: 1)
    var s = Scheduler()
    for i in 0..<1_000_000 {
        s.schedule(
            .init(app: "com.example.app\(i % 10_000)", id: "request-\(i)"),
            at: Date(timeIntervalSince1970: Double.random(in: 1.7e9..<1.8e9, using: &rng)))
    }
    return s
}()
let newKeys = (0..<1000).map { Scheduler.Key(app: "com.example.app\($0 % 10_000)", id: "new-\($0)") }
let existingKeys = (0..<1000).map { Scheduler.Key(app: "com.example.app\($0 % 10_000)", id: "request-\($0)") }

/// A private copy of the base scheduler (copy-on-write forced outside the measurement).
func copyOfBase() -> Scheduler {
    var s = base
    s.schedule(.init(app: "x", id: "x"), at: Date(timeIntervalSince1970: 0))
    s.remove(.init(app: "x", id: "x"))
    return s
}

let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal], scalingFactor: .kilo, maxDuration: .seconds(20), maxIterations: 20)

    Benchmark("scheduler add, 1M pending (per 1000 adds)", configuration: configuration) { benchmark in
        var s = copyOfBase()
        benchmark.startMeasurement()
        for i in benchmark.scaledIterations {
            s.schedule(newKeys[i], at: Date(timeIntervalSince1970: 1.75e9 + Double(i)))
        }
        benchmark.stopMeasurement()
        blackHole(s.count)
    }

    Benchmark("scheduler remove, 1M pending (per 1000 removes)", configuration: configuration) { benchmark in
        var s = copyOfBase()
        benchmark.startMeasurement()
        for i in benchmark.scaledIterations { blackHole(s.remove(existingKeys[i])) }
        benchmark.stopMeasurement()
    }

    Benchmark("scheduler next wake + take due, 1M pending (per 1000 takes)", configuration: configuration) {
        benchmark in
        var s = copyOfBase()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            guard let next = s.nextWake else { break }
            blackHole(s.takeDue(now: next))
        }
        benchmark.stopMeasurement()
    }
}
