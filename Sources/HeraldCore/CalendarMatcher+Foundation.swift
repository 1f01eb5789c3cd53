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
        /// Herald's earlier date satisfies every component and the period rule, and Foundation returns a later
        /// date or none: Foundation anchors a month's period on its 1st (so the first Saturday of July is missed
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
        if matches(fields, matcher) && isEarliestInPeriod(h, matcher, zone) { return .foundationSkipsValidMatch }
        return nil
    }

    /// Whether no earlier instant of the same period (of the highest unit) matches: the check that Herald's
    /// date is a result under the period rule and not merely a matching instant.
    private static func isEarliestInPeriod(_ date: Date, _ m: CalendarMatcher, _ zone: ZoneRules) -> Bool {
        let wall = zone.local(Int64(date.timeIntervalSince1970))
        guard let (first, _) = m.nextWallTime(from: wall - 366 * Civil.secondsPerDay) else { return false }
        var cursor = first
        // Walk the results of the year before; the last one before `wall` must be in an earlier period,
        // which the matcher's own period rule guarantees if `wall` is among the walked results.
        for _ in 0..<100_000 {
            if cursor == wall { return true }
            if cursor > wall { return false }
            guard let (next, _) = m.nextWallTime(from: cursor + 1) else { return false }
            cursor = next
        }
        return false
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
