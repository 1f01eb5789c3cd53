import Foundation
import HeraldCore

/// A time of day in the device's zone, to the minute (`22:30`).
public struct DayTime: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// Minutes after midnight, 0…1439.
    public let minutes: Int

    /// Creates a time; throws for an hour outside 0…23 or a minute outside 0…59.
    public init(hour: Int, minute: Int = 0) throws(NotificationError) {
        guard (0...23).contains(hour), (0...59).contains(minute) else {
            throw .invalid("time", "must be HH:MM from 00:00 to 23:59, not \(hour):\(minute)")
        }
        minutes = hour * 60 + minute
    }

    /// Reads `HH:MM` (or `H:MM`); throws a message that quotes the text.
    public init(_ text: String) throws(NotificationError) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let hour = Int(parts[0]), let minute = Int(parts[1]), parts[1].count == 2 else {
            throw .invalid("time", "'\(text)' is not HH:MM (such as 08:00 or 22:30)")
        }
        try self.init(hour: hour, minute: minute)
    }

    /// The hour, 0…23.
    public var hour: Int { minutes / 60 }
    /// The minute, 0…59.
    public var minute: Int { minutes % 60 }

    /// `HH:MM`.
    public var description: String {
        (hour < 10 ? "0" : "") + "\(hour):" + (minute < 10 ? "0" : "") + "\(minute)"
    }

    public static func < (a: DayTime, b: DayTime) -> Bool { a.minutes < b.minutes }

    /// Decodes `HH:MM`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            try self.init(text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.message)
        }
    }

    /// Encodes `HH:MM`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    /// The instant this time names on a local day (days since 1970-01-01 in the zone's wall time): a
    /// time that does not exist that day (spring forward) is the first instant after the gap, a time
    /// that exists twice its first occurrence.
    func instant(onDay day: Int64, in zone: ZoneRules, plusDays: Int64 = 0) -> Int64 {
        let local = (day + plusDays) * Civil.secondsPerDay + Int64(minutes * 60)
        switch zone.resolve(local: local) {
        case .unique(let instant): return instant
        case .gap(let transition): return transition
        case .overlap(let first, _): return first
        }
    }
}

/// When a Focus turns itself on: on some days of the week, from one time to another in the device's
/// zone (an end at or before the start is on the next day: 22:00–07:00).
public struct FocusSchedule: Sendable, Hashable, Codable {
    /// The days it starts on, 1 = Sunday … 7 = Saturday (Foundation's numbering); empty: every day.
    public var weekdays: [Int]
    /// When it comes on.
    public var start: DayTime
    /// When it goes off (the next day when at or before `start`).
    public var end: DayTime

    /// Creates a schedule; throws for a weekday outside 1…7.
    public init(weekdays: [Int] = [], start: DayTime, end: DayTime) throws(NotificationError) {
        self.weekdays = Array(Set(weekdays)).sorted()
        self.start = start
        self.end = end
        try validate()
    }

    /// Checks the weekdays.
    public func validate() throws(NotificationError) {
        for day in weekdays where !(1...7).contains(day) {
            throw .invalid("schedule.weekdays", "must be 1 (Sunday) … 7 (Saturday), not \(day)")
        }
    }

    /// The interval it covers when it starts on `day` (a local day number), as instants; `nil` when it
    /// does not start that day.
    func interval(startingOn day: Int64, in zone: ZoneRules) -> Range<Int64>? {
        guard weekdays.isEmpty || weekdays.contains(Civil.weekday(day)) else { return nil }
        let from = start.instant(onDay: day, in: zone)
        let to = end.instant(onDay: day, in: zone, plusDays: end > start ? 0 : 1)
        return from < to ? from..<to : nil
    }
}

/// A Focus mode: who may still interrupt while it is on, and when it turns itself on.
public struct FocusMode: Sendable, Hashable, Codable {
    /// A short name without spaces (`do-not-disturb`, `sleep`, `work`, `reading`).
    public var identifier: String
    /// What the user sees (`Do Not Disturb`).
    public var name: String
    /// Apps whose notifications still interrupt (bundle ids).
    public var allowedApps: [String]
    /// Time Sensitive notifications break through (iOS's switch in each Focus, on by default).
    public var allowsTimeSensitive: Bool
    /// When it turns itself on.
    public var schedules: [FocusSchedule]

    /// Creates a mode.
    public init(
        identifier: String, name: String, allowedApps: [String] = [], allowsTimeSensitive: Bool = true,
        schedules: [FocusSchedule] = []
    ) {
        self.identifier = identifier
        self.name = name
        self.allowedApps = allowedApps
        self.allowsTimeSensitive = allowsTimeSensitive
        self.schedules = schedules
    }

    /// Checks the identifier, the name and the schedules.
    public func validate() throws(NotificationError) {
        guard !identifier.isEmpty, identifier.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        else {
            throw .invalid("focus.identifier", "'\(identifier)' must be letters, digits, - and _ (such as reading)")
        }
        guard !name.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw .invalid("focus.name", "must not be empty")
        }
        for schedule in schedules { try schedule.validate() }
    }

    /// Do Not Disturb, Sleep and Work, as a new iPhone has them: nothing allowed, Time Sensitive on,
    /// no schedules.
    public static let builtIn: [FocusMode] = [
        FocusMode(identifier: "do-not-disturb", name: "Do Not Disturb"),
        FocusMode(identifier: "sleep", name: "Sleep"),
        FocusMode(identifier: "work", name: "Work"),
    ]

    /// A mode's identifier made from a name the user typed (`Deep Work` → `deep-work`).
    public static func identifier(forName name: String) -> String {
        let words = name.lowercased().split { !($0.isLetter || $0.isNumber) }
        return words.joined(separator: "-")
    }
}

/// A Focus turned on or off by hand: it wins over the schedules until `until` (on: `nil` is until
/// turned off; off: the end of the scheduled Focus it interrupted).
public struct ManualFocus: Sendable, Hashable, Codable {
    /// The mode turned on; `nil`: turned off.
    public var mode: String?
    /// When the choice ends by itself; `nil`: when turned off (only a mode turned on has none).
    public var until: Date?
}

/// The Focus that is on: which, whether by its schedule, and until when (as far as is known).
public struct ActiveFocus: Sendable, Hashable, Codable {
    /// The mode's identifier (`do-not-disturb`).
    public var identifier: String
    /// The mode's name (`Do Not Disturb`).
    public var name: String
    /// Turned on by a schedule rather than by hand.
    public var scheduled: Bool
    /// When it goes off by itself (its schedule's end, or the time it was turned on for).
    public var until: Date?
}

/// The device's Focus modes and which is on (at most one at a time).
public struct FocusSettings: Sendable, Hashable, Codable {
    /// Every mode, in the order Settings lists them; the first of several scheduled at once wins.
    public var modes: [FocusMode] = FocusMode.builtIn
    /// Turned on or off by hand.
    public var manual: ManualFocus?

    /// The built-in modes, none on.
    public init() {}

    /// The mode with this identifier.
    public func mode(_ identifier: String) -> FocusMode? { modes.first { $0.identifier == identifier } }

    /// The Focus on at `date`, if any.
    public func active(at date: Date, in zone: ZoneRules) -> ActiveFocus? {
        let t = Int64(date.timeIntervalSince1970.rounded(.down))
        if let manual, manual.until.map({ date < $0 }) ?? true {
            guard let id = manual.mode, let mode = mode(id) else { return nil }
            return ActiveFocus(identifier: mode.identifier, name: mode.name, scheduled: false, until: manual.until)
        }
        guard let (mode, interval) = scheduled(at: t, in: zone) else { return nil }
        return ActiveFocus(
            identifier: mode.identifier, name: mode.name, scheduled: true,
            until: Date(timeIntervalSince1970: Double(interval.upperBound)))
    }

    /// The first mode whose schedule covers instant `t`, and the interval.
    func scheduled(at t: Int64, in zone: ZoneRules) -> (FocusMode, Range<Int64>)? {
        let today = Civil.floorDiv(zone.local(t), Civil.secondsPerDay)
        for mode in modes {
            for schedule in mode.schedules {
                for day in [today - 1, today] {
                    if let interval = schedule.interval(startingOn: day, in: zone), interval.contains(t) {
                        return (mode, interval)
                    }
                }
            }
        }
        return nil
    }

    /// The next instant after `date` at which what is on may change: a schedule's start or end, or
    /// the end of a manual choice.
    public func nextChange(after date: Date, in zone: ZoneRules) -> Date? {
        let t = Int64(date.timeIntervalSince1970.rounded(.down))
        var best: Int64?
        func consider(_ candidate: Int64) {
            if candidate > t, best.map({ candidate < $0 }) ?? true { best = candidate }
        }
        if let until = manual?.until { consider(Int64(until.timeIntervalSince1970.rounded(.up))) }
        let today = Civil.floorDiv(zone.local(t), Civil.secondsPerDay)
        for mode in modes {
            for schedule in mode.schedules {
                for day in (today - 1)...(today + 8) {
                    guard let interval = schedule.interval(startingOn: day, in: zone) else { continue }
                    consider(interval.lowerBound)
                    consider(interval.upperBound)
                }
            }
        }
        return best.map { Date(timeIntervalSince1970: Double($0)) }
    }

    /// Turns a mode on by hand (until `until`, or until turned off).
    public mutating func turnOn(_ identifier: String, until: Date?) throws(NotificationError) {
        guard mode(identifier) != nil else {
            throw .invalid(
                "focus", "no Focus '\(identifier)' (\(modes.map(\.identifier).joined(separator: ", ")))")
        }
        manual = ManualFocus(mode: identifier, until: until)
    }

    /// Turns the Focus that is on off: a manual one ends; a scheduled one stays off until its
    /// interval ends, then the schedules decide again.
    public mutating func turnOff(at date: Date, in zone: ZoneRules) {
        manual = nil
        let t = Int64(date.timeIntervalSince1970.rounded(.down))
        if let (_, interval) = scheduled(at: t, in: zone) {
            manual = ManualFocus(mode: nil, until: Date(timeIntervalSince1970: Double(interval.upperBound)))
        }
    }

    /// Forgets a manual choice whose time is over.
    mutating func expire(at date: Date) -> Bool {
        guard let until = manual?.until, until <= date else { return false }
        manual = nil
        return true
    }

    /// Adds or replaces a mode (by identifier).
    public mutating func put(_ mode: FocusMode) throws(NotificationError) {
        try mode.validate()
        if let index = modes.firstIndex(where: { $0.identifier == mode.identifier }) {
            modes[index] = mode
        } else {
            modes.append(mode)
        }
    }

    /// Removes a mode the user added; the built-in ones stay (as on iOS, where they can only be
    /// emptied). A mode that is on goes off.
    public mutating func remove(_ identifier: String) throws(NotificationError) {
        guard mode(identifier) != nil else { throw .invalid("focus", "no Focus '\(identifier)'") }
        guard !FocusMode.builtIn.contains(where: { $0.identifier == identifier }) else {
            throw .invalid("focus", "\(identifier) is built in; it can be changed but not removed")
        }
        modes.removeAll { $0.identifier == identifier }
        if manual?.mode == identifier { manual = nil }
    }

    /// Whether the Focus `active` silences a notification of `app` at `level` (time-sensitive and
    /// critical levels already checked against the app's settings).
    func silences(_ active: ActiveFocus?, app: String, level: InterruptionLevel) -> String? {
        guard let active, let mode = mode(active.identifier) else { return nil }
        if mode.allowedApps.contains(app) || level == .critical { return nil }
        if level == .timeSensitive && mode.allowsTimeSensitive { return nil }
        return mode.name
    }
}
