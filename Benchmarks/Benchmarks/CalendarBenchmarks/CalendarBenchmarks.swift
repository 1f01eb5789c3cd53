import Benchmark
import Foundation
import HeraldCore
import HeraldTesting

// Seeded random cases (components, zones including DST zones and Australia/Lord_Howe, start dates): the same
// for Herald's matcher and for Foundation's Calendar.nextDate. 10,000 per iteration here, because Foundation
// takes about 0.7 ms a case on Linux; scripts/bench-calendar runs the full 100,000 and prints the ratio.
let cases = FoundationCalendarReference.randomCases(count: 10_000, seed: 42)
let prepared: [(CalendarMatcher, ZoneRules, Date)] = cases.map {
    (CalendarMatcher($0.components), ZoneRules.named($0.zoneIdentifier)!, $0.after)
}
let calendars = FoundationCalendarReference.comparisonCalendars()

let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal], maxDuration: .seconds(30), maxIterations: 10)

    Benchmark("calendar next-fire, Herald, 10k cases", configuration: configuration) { benchmark in
        for (matcher, zone, after) in prepared {
            blackHole(matcher.nextDate(after: after, in: zone))
        }
    }

    Benchmark("calendar next-fire, Foundation, 10k cases", configuration: configuration) { benchmark in
        for c in cases {
            blackHole(
                FoundationCalendarReference.nextDate(
                    after: c.after, matching: c.components, calendar: calendars[c.zoneIdentifier]!))
        }
    }
}
