import Foundation

/// A deterministic random number generator (SplitMix64), so comparisons and benchmarks run the same
/// cases on every machine.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// Creates a generator from a seed.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// One calendar next-fire question: components, zone and start date.
public struct CalendarCase: Sendable, Hashable {
    public var components: CalendarComponents
    public var zoneIdentifier: String
    public var after: Date
}

extension FoundationCalendarReference {
    /// Zones the comparisons use: DST rules of both hemispheres, half-hour and 45-minute offsets, a
    /// half-hour DST shift (Lord Howe), zones that changed their rules, and UTC.
    public static let comparisonZones = [
        "UTC", "America/New_York", "America/Los_Angeles", "Europe/London", "Europe/Berlin", "Europe/Moscow",
        "Australia/Sydney", "Australia/Lord_Howe", "America/Sao_Paulo", "America/Santiago", "America/St_Johns",
        "Asia/Kolkata", "Asia/Tehran", "Pacific/Chatham", "Pacific/Apia", "Africa/Casablanca", "Asia/Kathmandu",
    ]

    /// `count` seeded random cases: components as triggers use them (hour and minute most often; day, weekday,
    /// ordinal, month, second, year and week of month less often), start dates 2000–2040 with a third of
    /// them within two days of a DST transition.
    public static func randomCases(count: Int, seed: UInt64) -> [CalendarCase] {
        var rng = SeededGenerator(seed: seed)
        let zones = comparisonZones.compactMap { TimeZone(identifier: $0) }
        var transitions: [String: [Int64]] = [:]
        for zone in zones {
            let rules = ZoneRules.of(zone)
            transitions[zone.identifier] = rules.instants.filter { $0 > 946_684_800 && $0 < 2_208_988_800 }
        }
        func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }
        var cases: [CalendarCase] = []
        cases.reserveCapacity(count)
        while cases.count < count {
            let zone = zones[Int.random(in: 0..<zones.count, using: &rng)]
            var start: Int64
            if chance(0.33), let list = transitions[zone.identifier], !list.isEmpty {
                start =
                    list[Int.random(in: 0..<list.count, using: &rng)]
                    + Int64.random(in: -172_800...172_800, using: &rng)
            } else {
                start = Int64.random(in: 946_684_800...2_208_988_800, using: &rng)  // 2000–2040
            }
            if chance(0.5) { start -= start % 60 }  // many real starts sit on whole minutes
            var c = CalendarComponents()
            if chance(0.05) {
                let y = Civil.fields(start).year
                c.year = y + Int.random(in: -1...3, using: &rng)
            }
            if chance(0.15) { c.month = Int.random(in: 1...12, using: &rng) }
            if chance(0.3) {
                c.day = chance(0.3) ? Int.random(in: 28...31, using: &rng) : Int.random(in: 1...31, using: &rng)
            }
            if chance(0.6) { c.hour = Int.random(in: 0...23, using: &rng) }
            if chance(0.6) {
                c.minute =
                    chance(0.5)
                    ? [0, 15, 30, 45][Int.random(in: 0..<4, using: &rng)] : Int.random(in: 0...59, using: &rng)
            }
            if chance(0.15) { c.second = Int.random(in: 0...59, using: &rng) }
            if chance(0.2) { c.weekday = Int.random(in: 1...7, using: &rng) }
            if chance(0.08) { c.weekdayOrdinal = Int.random(in: 1...5, using: &rng) }
            if chance(0.04) { c.weekOfMonth = Int.random(in: 1...5, using: &rng) }
            if c.pairs.isEmpty { c.hour = Int.random(in: 0...23, using: &rng) }
            cases.append(
                CalendarCase(
                    components: c, zoneIdentifier: zone.identifier, after: Date(timeIntervalSince1970: Double(start))))
        }
        return cases
    }

    /// The outcome of comparing Herald's matcher with Foundation on a set of cases.
    public struct Comparison: Sendable {
        public var total = 0
        public var agreements = 0
        /// Explained disagreements by explanation.
        public var explained: [Explanation: Int] = [:]
        /// Unexplained disagreements (should be empty), with both answers.
        public var unexplained: [(CalendarCase, herald: Date?, foundation: Date?)] = []
        /// Up to three examples per explanation.
        public var examples: [Explanation: [(CalendarCase, herald: Date?, foundation: Date?)]] = [:]
    }

    /// Runs every case through both and classifies each difference.
    public static func compare(_ cases: [CalendarCase]) -> Comparison {
        var result = Comparison()
        let calendars = comparisonCalendars()
        for c in cases {
            let tz = TimeZone(identifier: c.zoneIdentifier)!
            let calendar = calendars[c.zoneIdentifier] ?? calendar(tz)
            let rules = ZoneRules.of(tz)
            let herald = CalendarMatcher(c.components).nextDate(after: c.after, in: rules)
            let foundation = nextDate(after: c.after, matching: c.components, calendar: calendar)
            result.total += 1
            if herald == foundation {
                result.agreements += 1
            } else if let why = explain(
                herald: herald, foundation: foundation, after: c.after, components: c.components, zone: rules)
            {
                result.explained[why, default: 0] += 1
                if result.examples[why, default: []].count < 3 {
                    result.examples[why, default: []].append((c, herald, foundation))
                }
            } else {
                result.unexplained.append((c, herald, foundation))
            }
        }
        return result
    }
}
