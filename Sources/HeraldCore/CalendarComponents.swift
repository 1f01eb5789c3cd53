import Foundation

/// The date components a calendar trigger matches (Gregorian calendar, weeks starting on Sunday with
/// week 1 holding the first day of the month — Foundation's defaults for `Calendar(identifier: .gregorian)`).
public struct CalendarComponents: Sendable, Hashable, Codable, CustomStringConvertible {
    public var era: Int?
    public var year: Int?
    public var month: Int?
    public var day: Int?
    public var hour: Int?
    public var minute: Int?
    public var second: Int?
    /// 1 = Sunday … 7 = Saturday.
    public var weekday: Int?
    /// The n-th such weekday of the month: days 1–7 are ordinal 1, 8–14 ordinal 2, …
    public var weekdayOrdinal: Int?
    /// Week of the month, 1–6, weeks starting on Sunday.
    public var weekOfMonth: Int?

    /// Creates components.
    public init(
        era: Int? = nil, year: Int? = nil, month: Int? = nil, day: Int? = nil, hour: Int? = nil, minute: Int? = nil,
        second: Int? = nil, weekday: Int? = nil, weekdayOrdinal: Int? = nil, weekOfMonth: Int? = nil
    ) {
        self.era = era
        self.year = year
        self.month = month
        self.day = day
        self.hour = hour
        self.minute = minute
        self.second = second
        self.weekday = weekday
        self.weekdayOrdinal = weekdayOrdinal
        self.weekOfMonth = weekOfMonth
    }

    /// Component names in the order `description` and the CLI use.
    public static let names = [
        "era", "year", "month", "day", "hour", "minute", "second", "weekday", "weekdayOrdinal", "weekOfMonth",
    ]

    static let ranges: [String: ClosedRange<Int>] = [
        "era": 0...1, "year": 1...9999, "month": 1...12, "day": 1...31, "hour": 0...23, "minute": 0...59,
        "second": 0...59, "weekday": 1...7, "weekdayOrdinal": 1...6, "weekOfMonth": 1...6,
    ]

    /// The components as (name, value) pairs, in order.
    public var pairs: [(String, Int)] {
        let values = [era, year, month, day, hour, minute, second, weekday, weekdayOrdinal, weekOfMonth]
        return zip(Self.names, values).compactMap { name, value in value.map { (name, $0) } }
    }

    /// Sets a component by name; throws for an unknown name.
    public mutating func set(_ name: String, _ value: Int) throws(NotificationError) {
        switch name.lowercased() {
        case "era": era = value
        case "year": year = value
        case "month": month = value
        case "day": day = value
        case "hour": hour = value
        case "minute": minute = value
        case "second": second = value
        case "weekday": weekday = value
        case "weekdayordinal": weekdayOrdinal = value
        case "weekofmonth": weekOfMonth = value
        default:
            throw .invalid("calendar", "unknown component '\(name)' (known: \(Self.names.joined(separator: ", ")))")
        }
    }

    /// Parses `hour=2,minute=30`.
    public init(parsing text: String) throws(NotificationError) {
        self.init()
        for part in text.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, !pair[0].isEmpty else {
                throw .invalid("calendar", "'\(part)' is not name=value")
            }
            guard let value = Int(pair[1]) else {
                throw .invalid("calendar.\(pair[0])", "'\(pair[1])' is not an integer")
            }
            try set(pair[0], value)
        }
        try validate()
    }

    /// Checks that at least one component is set and each is in its range.
    public func validate() throws(NotificationError) {
        let set = pairs
        guard !set.isEmpty else { throw .invalid("calendar", "at least one date component must be set") }
        for (name, value) in set {
            let range = Self.ranges[name]!
            guard range.contains(value) else {
                throw .invalid("calendar.\(name)", "must be \(range.lowerBound)…\(range.upperBound), not \(value)")
            }
        }
    }

    /// `hour=2,minute=30`.
    public var description: String { pairs.map { "\($0.0)=\($0.1)" }.joined(separator: ",") }

    /// The same components as Foundation's `DateComponents`.
    public var dateComponents: DateComponents {
        var c = DateComponents()
        c.era = era
        c.year = year
        c.month = month
        c.day = day
        c.hour = hour
        c.minute = minute
        c.second = second
        c.weekday = weekday
        c.weekdayOrdinal = weekdayOrdinal
        c.weekOfMonth = weekOfMonth
        return c
    }

    /// The components of `date` in `zone` for the given units (used by legacy repeat intervals).
    public static func of(_ date: Date, in zone: TimeZone, units: Set<String>) -> CalendarComponents {
        let rules = ZoneRules.of(zone)
        let f = Civil.fields(rules.local(Int64(date.timeIntervalSince1970.rounded(.down))))
        var c = CalendarComponents()
        if units.contains("year") { c.year = f.year }
        if units.contains("month") { c.month = f.month }
        if units.contains("day") { c.day = f.day }
        if units.contains("hour") { c.hour = f.hour }
        if units.contains("minute") { c.minute = f.minute }
        if units.contains("second") { c.second = f.second }
        if units.contains("weekday") { c.weekday = f.weekday }
        return c
    }
}
