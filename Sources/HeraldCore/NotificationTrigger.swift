import Foundation

/// The zone a calendar trigger reads wall-clock times in.
public enum TriggerTimeZone: Sendable, Hashable, Codable {
    /// Wall-clock time that moves with the device: 09:00 stays 09:00 after the device travels.
    case floating
    /// A fixed zone: the trigger names absolute instants.
    case fixed(String)

    /// The zone for a computation, given the device's current zone.
    public func resolve(device: TimeZone) -> TimeZone {
        switch self {
        case .floating: device
        case .fixed(let identifier): TimeZone(identifier: identifier) ?? TimeZone(secondsFromGMT: 0)!
        }
    }
}

/// Fires after a number of seconds (`UNTimeIntervalNotificationTrigger`).
public struct TimeIntervalTrigger: Sendable, Hashable, Codable {
    public var interval: TimeInterval
    public var repeats: Bool

    /// Creates a trigger; throws when the interval is not > 0, or < 60 s for a repeating one.
    public init(interval: TimeInterval, repeats: Bool = false) throws(NotificationError) {
        self.interval = interval
        self.repeats = repeats
        try validate()
    }

    /// Checks the interval rules.
    public func validate() throws(NotificationError) {
        guard interval.isFinite, interval > 0 else {
            throw .invalid("trigger.timeInterval", "must be greater than 0, not \(interval)")
        }
        if repeats && interval < 60 {
            throw .invalid("trigger.timeInterval", "must be at least 60 seconds when repeating, not \(interval)")
        }
    }

    /// The first fire date after `date` for a trigger scheduled at `anchor`: `anchor + interval`, and for a
    /// repeating trigger every interval after that.
    public func nextFireDate(after date: Date, anchor: Date) -> Date? {
        let first = anchor.addingTimeInterval(interval)
        if first > date { return first }
        guard repeats else { return nil }
        let elapsed = date.timeIntervalSince(anchor)
        let k = (elapsed / interval).rounded(.down) + 1
        var next = anchor.addingTimeInterval(k * interval)
        if next <= date { next = next.addingTimeInterval(interval) }
        return next
    }
}

/// Fires when the device's clock matches date components (`UNCalendarNotificationTrigger`).
public struct CalendarTrigger: Sendable, Hashable, Codable {
    public var components: CalendarComponents
    public var repeats: Bool
    public var timeZone: TriggerTimeZone
    /// Legacy repeat intervals start at their fire date: no match before this instant counts.
    public var notBefore: Date?

    /// Creates a trigger; throws when the components are invalid or the zone is unknown.
    public init(
        components: CalendarComponents, repeats: Bool = false, timeZone: TriggerTimeZone = .floating,
        notBefore: Date? = nil
    ) throws(NotificationError) {
        self.components = components
        self.repeats = repeats
        self.timeZone = timeZone
        self.notBefore = notBefore
        try validate()
    }

    /// Checks components and zone.
    public func validate() throws(NotificationError) {
        try components.validate()
        if case .fixed(let identifier) = timeZone, TimeZone(identifier: identifier) == nil {
            throw .invalid("trigger.timeZone", "unknown time zone '\(identifier)'")
        }
    }

    /// The first matching instant after `date`, with floating wall times read in `deviceTimeZone`.
    public func nextFireDate(after date: Date, deviceTimeZone: TimeZone) -> Date? {
        let zone = ZoneRules.of(timeZone.resolve(device: deviceTimeZone))
        var after = date
        if let notBefore, notBefore > date { after = notBefore.addingTimeInterval(-1) }
        return CalendarMatcher(components).nextDate(after: after, in: zone)
    }
}

/// Fires when the device enters or leaves a region (`UNLocationNotificationTrigger`).
public struct LocationTrigger: Sendable, Hashable, Codable {
    public var region: CircularRegion
    /// `false` (legacy `regionTriggersOnce`, the default) removes the request after the first crossing.
    public var repeats: Bool

    /// Creates a trigger.
    public init(region: CircularRegion, repeats: Bool = false) {
        self.region = region
        self.repeats = repeats
    }
}

/// When a notification fires. A request without a trigger is delivered now.
public enum NotificationTrigger: Sendable, Hashable, Codable {
    case timeInterval(TimeIntervalTrigger)
    case calendar(CalendarTrigger)
    case location(LocationTrigger)

    /// Whether the request stays pending after it fires.
    public var repeats: Bool {
        switch self {
        case .timeInterval(let t): t.repeats
        case .calendar(let t): t.repeats
        case .location(let t): t.repeats
        }
    }

    /// Checks the trigger's arguments.
    public func validate() throws(NotificationError) {
        switch self {
        case .timeInterval(let t): try t.validate()
        case .calendar(let t): try t.validate()
        case .location(let t): try t.region.validate()
        }
    }

    /// The next fire date after `date`; `nil` for location triggers and for triggers that will not fire again.
    public func nextFireDate(after date: Date, anchor: Date, deviceTimeZone: TimeZone) -> Date? {
        switch self {
        case .timeInterval(let t): t.nextFireDate(after: date, anchor: anchor)
        case .calendar(let t): t.nextFireDate(after: date, deviceTimeZone: deviceTimeZone)
        case .location: nil
        }
    }
}
