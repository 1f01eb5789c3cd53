import Foundation

/// Computes the next date matching calendar components: Herald's own matcher, in agreement with
/// `Calendar.nextDate(after:matching:matchingPolicy: .nextTime, repeatedTimePolicy: .first)` except where
/// Foundation is wrong (see docs/calendar-matching.md). The rules:
///
/// - The *highest set unit* is found in Foundation's order (era, year, month, day, hour, minute, second,
///   then weekday, weekdayOrdinal, weekOfMonth). For each period of that unit whose value matches, the
///   result is the earliest instant in the period that matches everything else. So unset units below it
///   take their minimum (`hour=7,second=30` is 07:00:30) and units above it are free.
/// - When the year is the highest set unit, the year only filters: units between it and the lowest set
///   unit stay free (`year=2026,hour=9` is every day of 2026 at 09:00).
/// - A day that does not exist in the month (31 April, 29 February in a common year) gives the first
///   instant of the next month instead, if that day matches the weekday constraints (`.nextTime`).
/// - A wall time that does not exist (spring forward): when the hour is constrained, the first instant
///   after the gap; when only minutes or seconds are, the hourly pattern simply skips it.
/// - A wall time that happens twice (fall back): the first occurrence. When the search starts inside
///   the repeated interval after the first occurrence, the second occurrence — once, never both.
public struct CalendarMatcher: Sendable, Hashable {
    /// The components matched.
    public let components: CalendarComponents

    enum Unit: Int { case era, year, month, day, hour, minute, second, weekday, weekdayOrdinal, weekOfMonth }
    enum Period: Hashable { case month, ordinalBlock, weekBlock }

    let year: Int?
    let month: Int?
    let day: Int?
    let hour: Int?
    let minute: Int?
    let second: Int?
    package let weekday: Int?
    package let ordinal: Int?
    package let weekOfMonth: Int?
    let hasWeekly: Bool
    let hourConstrained: Bool
    let period: Period?
    let impossible: Bool
    /// Whether a day missing from its month falls back to the next month's start (`.nextTime`). With the year
    /// highest and the month free, Foundation instead skips months that lack the day.
    let fallsBack: Bool

    /// Creates a matcher. The components should be valid (see ``CalendarComponents/validate()``); values
    /// out of range simply never match.
    public init(_ c: CalendarComponents) {
        components = c
        let highest: Unit? =
            c.era != nil
            ? .era
            : c.year != nil
                ? .year
                : c.month != nil
                    ? .month
                    : c.day != nil
                        ? .day
                        : c.hour != nil
                            ? .hour
                            : c.minute != nil
                                ? .minute
                                : c.second != nil
                                    ? .second
                                    : c.weekday != nil
                                        ? .weekday
                                        : c.weekdayOrdinal != nil
                                            ? .weekdayOrdinal
                                            : c.weekOfMonth != nil ? .weekOfMonth : nil
        let h = highest ?? .second
        let weekly = c.weekday != nil || c.weekdayOrdinal != nil || c.weekOfMonth != nil
        let weeklyHighest = h.rawValue >= Unit.weekday.rawValue
        // With the year highest, Foundation matches like cron from the start date: units between the year and
        // the lowest set unit stay free and only the units below the lowest set one take their minimum.
        let lowestChain: Unit? =
            c.second != nil
            ? .second
            : c.minute != nil
                ? .minute
                : c.hour != nil
                    ? .hour
                    : c.day != nil
                        ? .day
                        : c.month != nil ? .month : c.year != nil ? .year : nil
        let yearHighest = h == .era || h == .year
        func pinned(_ unit: Unit) -> Bool {
            if yearHighest { return unit.rawValue > (lowestChain ?? .year).rawValue }
            return weeklyHighest || h.rawValue < unit.rawValue
        }
        year = c.year
        month = c.month ?? (pinned(.month) && !weekly && !weeklyHighest ? 1 : nil)
        day = c.day ?? (pinned(.day) && !weekly && !weeklyHighest ? 1 : nil)
        hour = c.hour ?? (pinned(.hour) ? 0 : nil)
        minute = c.minute ?? (pinned(.minute) ? 0 : nil)
        second = c.second ?? (pinned(.second) ? 0 : nil)
        weekday = c.weekday
        ordinal = c.weekdayOrdinal
        weekOfMonth = c.weekOfMonth
        hasWeekly = weekly
        hourConstrained = hour != nil
        fallsBack = !yearHighest || c.month != nil
        if weekly && c.day == nil && h == .month {
            period = .month
        } else if h == .weekdayOrdinal {
            period = .ordinalBlock
        } else if h == .weekOfMonth {
            period = .weekBlock
        } else {
            period = nil
        }
        // Herald counts years of the common era only; era 0 (BC) never matches a date after year 1,
        // and an era alone names a period that began in year 1.
        impossible = highest == nil || c.era == 0 || (c.era != nil && c.year == nil)
    }

    /// The first instant strictly after `date` that matches, with wall times read in `zone`;
    /// `nil` when there is none (a year in the past, an impossible combination within 400 years).
    public func nextDate(after date: Date, in zone: ZoneRules) -> Date? {
        if impossible { return nil }
        let start = date.timeIntervalSince1970
        guard start.isFinite, abs(start) < 1e12 else { return nil }
        var local = zone.searchStart(Int64(start.rounded(.down)))
        for _ in 0..<256 {
            guard let (wall, fallback) = nextWallTime(from: local) else { return nil }
            var resume = wall + 1
            switch zone.resolve(local: wall) {
            case .unique(let instant):
                if Double(instant) > start { return Date(timeIntervalSince1970: Double(instant)) }
            case .gap(let transition):
                if hourConstrained || fallback, Double(transition) > start {
                    return Date(timeIntervalSince1970: Double(transition))
                }
                // Skip the whole gap at once (a day long in Pacific/Apia on 30 December 2011).
                resume = max(resume, zone.local(transition))
            case .overlap(let first, let second):
                if Double(first) > start { return Date(timeIntervalSince1970: Double(first)) }
                // Inside the repeated interval: the second pass counts once, never right after the first
                // occurrence of the same wall time fired.
                if Double(second) > start && (!hourConstrained || Double(first) != start) {
                    return Date(timeIntervalSince1970: Double(second))
                }
            }
            local = resume
        }
        return nil
    }

    // MARK: - Wall-clock search

    /// The next matching wall time at or after `from` (local seconds), honouring the period rule.
    func nextWallTime(from: Int64) -> (Int64, fallback: Bool)? {
        var from = from
        for _ in 0..<1000 {
            guard let (candidate, fallback) = nextRaw(from: from) else { return nil }
            guard let period, !fallback else { return (candidate, fallback) }
            let (periodStart, periodEnd) = bounds(of: period, containing: candidate)
            if candidate == periodStart { return (candidate, false) }
            if let (earliest, _) = nextRaw(from: periodStart), earliest < candidate {
                from = periodEnd
                continue
            }
            return (candidate, false)
        }
        return nil
    }

    private func bounds(of period: Period, containing wall: Int64) -> (Int64, Int64) {
        let f = Civil.fields(wall)
        let monthStart = Civil.seconds(f.year, f.month, 1)
        let nextMonth = f.month == 12 ? Civil.seconds(f.year + 1, 1, 1) : Civil.seconds(f.year, f.month + 1, 1)
        switch period {
        case .month:
            return (monthStart, nextMonth)
        case .ordinalBlock:
            let first = (f.day - 1) / 7 * 7 + 1
            let start = Civil.seconds(f.year, f.month, first)
            return (start, min(start + 7 * Civil.secondsPerDay, nextMonth))
        case .weekBlock:
            let dayNumber = Civil.days(f.year, f.month, f.day)
            let weekStart = (dayNumber - Int64(Civil.weekday(dayNumber) - 1)) * Civil.secondsPerDay
            return (max(weekStart, monthStart), min(weekStart + 7 * Civil.secondsPerDay, nextMonth))
        }
    }

    @inline(__always)
    private func weeklyMatches(_ y: Int, _ m: Int, _ d: Int) -> Bool {
        if !hasWeekly { return true }
        let dayNumber = Civil.days(y, m, d)
        if let weekday, Civil.weekday(dayNumber) != weekday { return false }
        if let ordinal, (d - 1) / 7 + 1 != ordinal { return false }
        if let weekOfMonth {
            let firstWeekday0 = Civil.weekday(dayNumber - Int64(d - 1)) - 1
            if (d - 1 + firstWeekday0) / 7 + 1 != weekOfMonth { return false }
        }
        return true
    }

    /// The first day `>= from` in the month that satisfies the weekday constraints.
    @inline(__always)
    private func firstWeeklyDay(_ y: Int, _ m: Int, from: Int, daysInMonth: Int) -> Int? {
        var lo = from
        var hi = daysInMonth
        if let ordinal {
            lo = max(lo, (ordinal - 1) * 7 + 1)
            hi = min(hi, ordinal * 7)
        }
        if let weekOfMonth {
            let firstWeekday0 = Civil.weekday(Civil.days(y, m, 1)) - 1
            let start = 7 * (weekOfMonth - 1) - firstWeekday0 + 1
            lo = max(lo, start)
            hi = min(hi, start + 6)
        }
        guard lo <= hi else { return nil }
        guard let weekday else { return lo }
        let candidate = lo + (weekday - Civil.weekday(Civil.days(y, m, lo)) + 7) % 7
        return candidate <= hi ? candidate : nil
    }

    /// The first second of day `>= from` matching hour, minute and second.
    @inline(__always)
    private func nextTimeOfDay(_ from: Int) -> Int? {
        var h = from / 3600
        var m = (from / 60) % 60
        var s = from % 60
        while h < 24 {
            if let hour {
                if h < hour {
                    h = hour
                    m = 0
                    s = 0
                } else if h > hour {
                    return nil
                }
            }
            if let minute {
                if m < minute {
                    m = minute
                    s = 0
                } else if m > minute {
                    h += 1
                    m = 0
                    s = 0
                    continue
                }
            }
            if let second {
                if s < second {
                    s = second
                } else if s > second {
                    s = 0
                    m += 1
                    if m == 60 {
                        m = 0
                        h += 1
                    }
                    continue
                }
            }
            return h * 3600 + m * 60 + s
        }
        return nil
    }

    /// The next wall time `>= from` matching every constraint (without the period rule), or the
    /// `.nextTime` fallback for a day that does not exist in its month.
    private func nextRaw(from: Int64) -> (Int64, fallback: Bool)? {
        let dayNumber = Civil.floorDiv(from, Civil.secondsPerDay)
        var tod = Int(from - dayNumber * Civil.secondsPerDay)
        var (y, m, d) = Civil.date(dayNumber)
        let lastYear = (year ?? y) + 400
        @inline(__always) func nextMonth() {
            m += 1
            if m > 12 {
                m = 1
                y += 1
            }
            d = 1
            tod = 0
        }
        while y <= lastYear {
            if let year {
                if y < year {
                    (y, m, d, tod) = (year, 1, 1, 0)
                } else if y > year {
                    return nil
                }
            }
            if let month {
                if m < month {
                    (m, d, tod) = (month, 1, 0)
                } else if m > month {
                    (y, m, d, tod) = (y + 1, 1, 1, 0)
                    continue
                }
            }
            let dim = Civil.daysInMonth(y, m)
            if let day {
                if day > dim {
                    let (ny, nm) = m == 12 ? (y + 1, 1) : (y, m + 1)
                    if fallsBack, weeklyMatches(ny, nm, 1) { return (Civil.seconds(ny, nm, 1), true) }
                    nextMonth()
                    continue
                }
                if d > day {
                    nextMonth()
                    continue
                }
                if d < day { (d, tod) = (day, 0) }
                if !weeklyMatches(y, m, d) {
                    nextMonth()
                    continue
                }
            } else if hasWeekly {
                guard let found = firstWeeklyDay(y, m, from: d, daysInMonth: dim) else {
                    nextMonth()
                    continue
                }
                if found != d { (d, tod) = (found, 0) }
            }
            if let t = nextTimeOfDay(tod) { return (Civil.seconds(y, m, d, t), false) }
            d += 1
            tod = 0
            if d > dim { nextMonth() }
        }
        return nil
    }
}
