import Foundation

/// Foundation's answer to the same question, and the explanation of each way Herald deliberately differs.
/// Used by the tests, the benchmark and `herald trigger next --compare-foundation`.
public enum FoundationCalendarReference {
    /// A Gregorian calendar in a zone, as Foundation computes next dates.
    public static func calendar(_ zone: TimeZone) -> Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar
    }

    /// A Gregorian calendar for each zone of ``comparisonZones``, keyed by Foundation's identifier for the
    /// zone (`UTC` is `GMT` there), built once for a comparison run.
    public static func comparisonCalendars() -> [String: Calendar] {
        Dictionary(
            comparisonZones.compactMap(TimeZone.init(identifier:)).map { ($0.identifier, calendar($0)) },
            uniquingKeysWith: { a, _ in a })
    }

    /// `Calendar.nextDate(after:matching:matchingPolicy: .nextTime, repeatedTimePolicy: .first)`.
    public static func nextDate(after date: Date, matching components: CalendarComponents, calendar: Calendar) -> Date?
    {
        calendar.nextDate(
            after: date, matching: components.dateComponents, matchingPolicy: .nextTime,
            repeatedTimePolicy: .first, direction: .forward)
    }

    /// Why Herald's answer differs from Foundation's, when the difference is one of Foundation's defects
    /// or one of Herald's documented rules; `nil` for an unexplained difference (a bug in one of them).
    public enum Explanation: String, Sendable, CaseIterable {
        /// Foundation skips an occurrence whose wall time falls in a gap: a half-hour DST shift
        /// (Australia/Lord_Howe) or a skipped day (Pacific/Apia, 30 December 2011). Herald fires at the first
        /// instant after the gap, as for whole-hour gaps.
        case foundationSkipsGap
        /// With the year as highest component, Foundation finds nothing after a first match (the sequence
        /// stops); Herald goes on through the rest of that year.
        case foundationStopsWithinYear
        /// Foundation returns a date in another year than the `year` component asks for.
        case foundationIgnoresYear
        /// Foundation returns a date whose weekday, ordinal or time does not match the components.
        case foundationResultDoesNotMatch
        /// Both agree on the wall time; they pick different passes of a repeated hour.
        case repeatedHour
        /// Herald's date is the `.nextTime` stand-in for a day missing from its month (the 1st of the next
        /// month) and satisfies the weekday constraints; Foundation passes over it in some years or accepts it
        /// in others (it checks the weekday for 30-day months but not for February).
        case foundationInconsistentFallback
        /// Herald's earlier date satisfies every component and no earlier time of its period does (checked by a
        /// walk independent of the matcher), and Foundation returns a later date or none: Foundation anchors a month's period on its 1st (so the first Saturday of July is missed
        /// when the search starts on 1 July), misses some weekOfMonth + weekdayOrdinal days, gives up near DST
        /// transitions at midnight (America/St_Johns before 2011), or stops searching.
        case foundationSkipsValidMatch
    }

    /// Classifies a disagreement. Both dates may be `nil`.
    public static func explain(
        herald: Date?, foundation: Date?, after: Date, components: CalendarComponents, zone: ZoneRules
    ) -> Explanation? {
        if herald == foundation { return nil }
        let matcher = CalendarMatcher(components)
        if let f = foundation {
            let instant = Int64(f.timeIntervalSince1970.rounded(.down))
            let fields = Civil.fields(zone.local(instant))
            if let year = components.year, fields.year != year { return .foundationIgnoresYear }
            // At the end of a DST gap the time of day legitimately differs (`.nextTime`); the date must still match.
            let atGapEnd = zone.instants.contains(instant)
            let fallback = isFallback(fields, components)
            if !weeklyMatches(fields, matcher) || (!fallback && !matchesDate(fields, matcher))
                || (!fallback && !atGapEnd && !matchesTime(fields, matcher))
            {
                return .foundationResultDoesNotMatch
            }
        }
        if let h = herald {
            let instant = Int64(h.timeIntervalSince1970)
            let startOfGap = zone.instants.firstIndex(of: instant).map {
                zone.offsetsAfter[$0] > zone.offsetsBefore[$0]
            }
            if startOfGap == true, foundation.map({ $0 > h }) ?? true { return .foundationSkipsGap }
            if foundation == nil, let year = components.year, components.era == nil,
                Civil.fields(zone.local(instant)).year == year
            {
                return .foundationStopsWithinYear
            }
        }
        for date in [herald, foundation].compactMap({ $0 }) {
            let wall = zone.local(Int64(date.timeIntervalSince1970.rounded(.down)))
            if case .overlap = zone.resolve(local: wall) { return .repeatedHour }
        }
        guard let h = herald, foundation.map({ $0 > h }) ?? true else { return nil }
        let fields = Civil.fields(zone.local(Int64(h.timeIntervalSince1970)))
        if isFallback(fields, components), weeklyMatches(fields, matcher) { return .foundationInconsistentFallback }
        if matches(fields, matcher) && noEarlierMatch(before: h, after: after, matcher, zone) {
            return .foundationSkipsValidMatch
        }
        return nil
    }

    /// Checks, without the matcher, that no wall time between the start of Herald's period (the period of the
    /// highest set unit, or the search start when that is later; with the year highest, the search start) and
    /// Herald's date matches every component. Walks aligned wall times at the step of the lowest set unit;
    /// gives up (no explanation) beyond three million steps.
    private static func noEarlierMatch(
        before date: Date, after start: Date, _ m: CalendarMatcher, _ zone: ZoneRules
    ) -> Bool {
        let c = m.components
        let wall = zone.local(Int64(date.timeIntervalSince1970))
        let f = Civil.fields(wall)
        let dayStart = Civil.seconds(f.year, f.month, f.day)
        let periodStart: Int64
        if c.era != nil || c.year != nil {
            periodStart = .min
        } else if c.month != nil {
            periodStart = Civil.seconds(f.year, f.month, 1)
        } else if c.day != nil {
            periodStart = dayStart
        } else if c.hour != nil {
            periodStart = wall - Int64(f.minute * 60 + f.second)
        } else if c.minute != nil {
            periodStart = wall - Int64(f.second)
        } else if c.second != nil {
            return true  // a one-second period holds one instant
        } else if c.weekday != nil {
            periodStart = dayStart
        } else if c.weekdayOrdinal != nil {
            periodStart = Civil.seconds(f.year, f.month, (f.day - 1) / 7 * 7 + 1)
        } else {
            let dayNumber = Civil.days(f.year, f.month, f.day)
            let weekStart = (dayNumber - Int64(Civil.weekday(dayNumber) - 1)) * Civil.secondsPerDay
            periodStart = max(Civil.seconds(f.year, f.month, 1), weekStart)
        }
        let step: Int64 = c.second != nil ? 1 : c.minute != nil ? 60 : c.hour != nil ? 3600 : Civil.secondsPerDay
        let startSeconds = start.timeIntervalSince1970
        var t = max(periodStart, zone.local(Int64(startSeconds.rounded(.down))) + 1)
        let remainder = t - Civil.floorDiv(t, step) * step
        if remainder != 0 { t += step - remainder }
        guard (wall - t) / step <= 3_000_000 else { return false }
        while t < wall {
            if matches(Civil.fields(t), m) {
                switch zone.resolve(local: t) {
                case .unique(let i): if Double(i) > startSeconds { return false }
                case .overlap(let a, let b): if Double(a) > startSeconds || Double(b) > startSeconds { return false }
                case .gap: break
                }
            }
            t += step
        }
        return true
    }

    private static func weeklyMatches(_ f: Civil.Fields, _ m: CalendarMatcher) -> Bool {
        if let v = m.weekday, f.weekday != v { return false }
        if let v = m.ordinal, (f.day - 1) / 7 + 1 != v { return false }
        if let v = m.weekOfMonth {
            let firstWeekday0 = Civil.weekday(Civil.days(f.year, f.month, 1)) - 1
            if (f.day - 1 + firstWeekday0) / 7 + 1 != v { return false }
        }
        return true
    }

    private static func matches(_ f: Civil.Fields, _ m: CalendarMatcher) -> Bool {
        matchesDate(f, m) && matchesTime(f, m) && weeklyMatches(f, m)
    }

    private static func matchesDate(_ f: Civil.Fields, _ m: CalendarMatcher) -> Bool {
        if let v = m.components.month, f.month != v { return false }
        if let v = m.components.day, f.day != v { return false }
        return true
    }

    private static func matchesTime(_ f: Civil.Fields, _ m: CalendarMatcher) -> Bool {
        if let v = m.components.hour, f.hour != v { return false }
        if let v = m.components.minute, f.minute != v { return false }
        if let v = m.components.second, f.second != v { return false }
        return true
    }

    private static func isFallback(_ f: Civil.Fields, _ c: CalendarComponents) -> Bool {
        guard let day = c.day, f.day == 1 else { return false }
        let (py, pm) = f.month == 1 ? (f.year - 1, 12) : (f.year, f.month - 1)
        return day > Civil.daysInMonth(py, pm)
    }
}
