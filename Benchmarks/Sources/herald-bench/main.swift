import Foundation
import HeraldCore
import HeraldDevice
import HeraldTesting

// Same-run comparisons with their references, printed as ratios (scripts/bench-calendar, BENCHMARKS.md).

func measure(_ rounds: Int, _ body: () -> Void) -> Duration {
    let clock = ContinuousClock()
    var best = Duration.seconds(1_000_000)
    for _ in 0..<rounds { best = min(best, clock.measure(body)) }
    return best
}

func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

let count = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 100_000
let rounds = 3
print("calendar next-fire: \(count) seeded random cases (seed 42), best of \(rounds) rounds")
let cases = FoundationCalendarReference.randomCases(count: count, seed: 42)
let prepared = cases.map { (CalendarMatcher($0.components), ZoneRules.named($0.zoneIdentifier)!, $0.after) }
let calendars = FoundationCalendarReference.comparisonCalendars()
var sink = 0
let herald = measure(rounds) {
    for (m, z, a) in prepared where m.nextDate(after: a, in: z) != nil { sink &+= 1 }
}
let foundation = measure(rounds) {
    for c in cases
    where FoundationCalendarReference.nextDate(
        after: c.after, matching: c.components, calendar: calendars[c.zoneIdentifier]!) != nil
    {
        sink &+= 1
    }
}
print(
    String(format: "  Herald      %8.3f s  (%.2f µs per case)", seconds(herald), seconds(herald) / Double(count) * 1e6))
print(
    String(
        format: "  Foundation  %8.3f s  (%.2f µs per case)", seconds(foundation),
        seconds(foundation) / Double(count) * 1e6))
print(String(format: "  ratio: Herald is %.1f× faster", seconds(foundation) / seconds(herald)))

let comparison = FoundationCalendarReference.compare(cases)
print("  agreements: \(comparison.agreements) of \(comparison.total)")
for (why, n) in comparison.explained.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
    print("  explained \(why.rawValue): \(n)")
}
print("  unexplained: \(comparison.unexplained.count)")
for (c, h, f) in comparison.unexplained.prefix(20) {
    print(
        "    \(c.components) \(c.zoneIdentifier) after \(c.after): herald \(String(describing: h)) foundation \(String(describing: f))"
    )
}

print("\nscheduler: 1,000,000 pending across 10,000 apps")
var rng = SeededGenerator(seed: 1)
var scheduler = Scheduler()
let buildStart = ContinuousClock.now
for i in 0..<1_000_000 {
    scheduler.schedule(
        .init(app: "com.example.app\(i % 10_000)", id: "request-\(i)"),
        at: Date(timeIntervalSince1970: Double.random(in: 1.7e9..<1.8e9, using: &rng)))
}
let build = ContinuousClock.now - buildStart
print(
    String(
        format: "  build 1M: %.3f s (%.2f µs per add while growing)", seconds(build), seconds(build) / 1_000_000 * 1e6))
let ops = 100_000
let newKeys = (0..<ops).map { Scheduler.Key(app: "com.example.app\($0 % 10_000)", id: "new-\($0)") }
let add = measure(1) {
    for (i, k) in newKeys.enumerated() { scheduler.schedule(k, at: Date(timeIntervalSince1970: 1.75e9 + Double(i))) }
}
let remove = measure(1) { for k in newKeys { scheduler.remove(k) } }
let take = measure(1) {
    for _ in 0..<ops {
        guard let next = scheduler.nextWake else { break }
        sink &+= scheduler.takeDue(now: next).count
    }
}
print(String(format: "  add at 1M:        %.3f µs per add (target ≤ 2 µs)", seconds(add) / Double(ops) * 1e6))
print(String(format: "  remove at 1M:     %.3f µs per remove", seconds(remove) / Double(ops) * 1e6))
print(String(format: "  next-due at 1M:   %.3f µs per next wake + take", seconds(take) / Double(ops) * 1e6))
print("  (sink \(sink))")
