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

/// A circular geographic region (`CLCircularRegion`).
public struct CircularRegion: Sendable, Hashable, Codable {
    public var identifier: String
    public var latitude: Double
    public var longitude: Double
    /// Metres.
    public var radius: Double
    public var notifyOnEntry: Bool
    public var notifyOnExit: Bool

    /// Creates a region; throws for an empty identifier, coordinates out of range or a radius ≤ 0.
    public init(
        identifier: String, latitude: Double, longitude: Double, radius: Double, notifyOnEntry: Bool = true,
        notifyOnExit: Bool = true
    ) throws(NotificationError) {
        self.identifier = identifier
        self.latitude = latitude
        self.longitude = longitude
        self.radius = radius
        self.notifyOnEntry = notifyOnEntry
        self.notifyOnExit = notifyOnExit
        try validate()
    }

    /// Checks the region.
    public func validate() throws(NotificationError) {
        guard !identifier.isEmpty else { throw .invalid("region.identifier", "must not be empty") }
        guard latitude.isFinite, (-90...90).contains(latitude) else {
            throw .invalid("region.latitude", "must be -90…90, not \(latitude)")
        }
        guard longitude.isFinite, (-180...180).contains(longitude) else {
            throw .invalid("region.longitude", "must be -180…180, not \(longitude)")
        }
        guard radius.isFinite, radius > 0 else {
            throw .invalid("region.radius", "must be greater than 0, not \(radius)")
        }
        guard notifyOnEntry || notifyOnExit else {
            throw .invalid("region", "notifyOnEntry or notifyOnExit must be set, or the region never fires")
        }
    }

    /// Whether a point lies in the region (great-circle distance ≤ radius).
    public func contains(_ fix: LocationFix) -> Bool {
        GreatCircle.distance(latitude, longitude, fix.latitude, fix.longitude) <= radius
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

/// The legacy repeat intervals (`NSCalendarUnit` on `UILocalNotification.repeatInterval`).
public enum LegacyRepeatInterval: String, Sendable, Codable, CaseIterable {
    case minute, hour, day, week, month, year
}

/// A legacy `UILocalNotification` schedule: fire date, time zone and repeat interval, expressed as a trigger.
public struct LegacySchedule: Sendable, Hashable {
    /// `nil` or past: deliver immediately (non-repeating).
    public var fireDate: Date?
    /// `nil`: the fire date is an absolute instant. Set: its wall-clock time, which follows the device's
    /// zone as it travels (floating).
    public var timeZone: TimeZone?
    public var repeatInterval: LegacyRepeatInterval?
    /// A location instead of a date.
    public var region: CircularRegion?
    /// Legacy default: `true`.
    public var regionTriggersOnce: Bool

    /// Creates a schedule.
    public init(
        fireDate: Date? = nil, timeZone: TimeZone? = nil, repeatInterval: LegacyRepeatInterval? = nil,
        region: CircularRegion? = nil, regionTriggersOnce: Bool = true
    ) {
        self.fireDate = fireDate
        self.timeZone = timeZone
        self.repeatInterval = repeatInterval
        self.region = region
        self.regionTriggersOnce = regionTriggersOnce
    }

    /// The equivalent trigger (`nil` = deliver now). Throws when a fire date and a region are both set.
    public func trigger(now: Date) throws(NotificationError) -> NotificationTrigger? {
        if let region {
            guard fireDate == nil else {
                throw .invalid("fireDate", "a notification cannot have both a fire date and a region")
            }
            return .location(LocationTrigger(region: region, repeats: !regionTriggersOnce))
        }
        guard let fireDate else { return nil }
        let zone = timeZone ?? TimeZone(secondsFromGMT: 0)!
        let triggerZone: TriggerTimeZone = timeZone == nil ? .fixed("GMT") : .floating
        guard let repeatInterval else {
            if fireDate <= now { return nil }
            let c = CalendarComponents.of(
                fireDate, in: zone, units: ["year", "month", "day", "hour", "minute", "second"])
            return .calendar(try CalendarTrigger(components: c, repeats: false, timeZone: triggerZone))
        }
        let units: Set<String> =
            switch repeatInterval {
            case .minute: ["second"]
            case .hour: ["minute", "second"]
            case .day: ["hour", "minute", "second"]
            case .week: ["weekday", "hour", "minute", "second"]
            case .month: ["day", "hour", "minute", "second"]
            case .year: ["month", "day", "hour", "minute", "second"]
            }
        let c = CalendarComponents.of(fireDate, in: zone, units: units)
        return .calendar(
            try CalendarTrigger(components: c, repeats: true, timeZone: triggerZone, notBefore: fireDate))
    }
}

extension LegacySchedule: Codable {
    enum CodingKeys: String, CodingKey {
        case fireDate, timeZone, repeatInterval, region, regionTriggersOnce
    }

    /// Decodes a schedule; `timeZone` is a zone identifier.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let zone = try c.decodeIfPresent(String.self, forKey: .timeZone)
        var timeZone: TimeZone?
        if let zone {
            guard let known = TimeZone(identifier: zone) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .timeZone, in: c, debugDescription: "unknown time zone '\(zone)'")
            }
            timeZone = known
        }
        self.init(
            fireDate: try c.decodeIfPresent(Date.self, forKey: .fireDate), timeZone: timeZone,
            repeatInterval: try c.decodeIfPresent(LegacyRepeatInterval.self, forKey: .repeatInterval),
            region: try c.decodeIfPresent(CircularRegion.self, forKey: .region),
            regionTriggersOnce: try c.decodeIfPresent(Bool.self, forKey: .regionTriggersOnce) ?? true)
    }

    /// Encodes the schedule with the zone's identifier.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(fireDate, forKey: .fireDate)
        try c.encodeIfPresent(timeZone?.identifier, forKey: .timeZone)
        try c.encodeIfPresent(repeatInterval, forKey: .repeatInterval)
        try c.encodeIfPresent(region, forKey: .region)
        try c.encode(regionTriggersOnce, forKey: .regionTriggersOnce)
    }
}

/// A `UILocalNotification` (the seeds' API): what it shows and its schedule. The device turns it into
/// a request on its own clock (``request(now:)``): a fire date that is `nil` or already past delivers
/// it at once.
public struct LegacyNotification: Sendable, Hashable, Codable {
    /// The identifier to cancel it by (`UILocalNotification` has none; Herald's handle).
    public var identifier: String
    /// When it fires: fire date, time zone, repeat interval or region.
    public var schedule: LegacySchedule
    /// `alertTitle`.
    public var alertTitle: String?
    /// `alertBody`: without it (and without a title) nothing is shown, only the badge and sound apply.
    public var alertBody: String?
    /// The action button's and the lock screen slider's label ("slide to show…").
    public var alertAction: String?
    /// `false`: one OK button, and the notification never launches the app.
    public var hasAction: Bool
    /// `alertLaunchImage`.
    public var alertLaunchImage: String?
    /// `default` (`UILocalNotificationDefaultSoundName`) or a file name; `nil` is silent.
    public var soundName: String?
    /// The badge it sets; 0 (the default) leaves the badge unchanged, as in `UILocalNotification`.
    public var applicationIconBadgeNumber: Int
    /// The category's identifier (its actions).
    public var category: String?
    /// `userInfo`: the app's own data, handed back with the notification.
    public var userInfo: [String: JSONValue]

    /// Creates a legacy notification.
    public init(
        identifier: String, schedule: LegacySchedule = LegacySchedule(), alertTitle: String? = nil,
        alertBody: String? = nil, alertAction: String? = nil, hasAction: Bool = true, alertLaunchImage: String? = nil,
        soundName: String? = nil, applicationIconBadgeNumber: Int = 0, category: String? = nil,
        userInfo: [String: JSONValue] = [:]
    ) {
        self.identifier = identifier
        self.schedule = schedule
        self.alertTitle = alertTitle
        self.alertBody = alertBody
        self.alertAction = alertAction
        self.hasAction = hasAction
        self.alertLaunchImage = alertLaunchImage
        self.soundName = soundName
        self.applicationIconBadgeNumber = applicationIconBadgeNumber
        self.category = category
        self.userInfo = userInfo
    }

    /// The request it stands for at `now` (the device's time): its content, and the trigger of its
    /// schedule (`nil`: deliver now).
    public func request(now: Date) throws(NotificationError) -> NotificationRequest {
        var content = NotificationContent()
        content.title = alertTitle ?? ""
        content.body = alertBody ?? ""
        content.actionLocKey = alertAction
        if !hasAction { content.hasAction = false }
        content.launchImageName = alertLaunchImage ?? ""
        content.sound = soundName.map { $0 == "default" ? .default : .named($0) }
        if applicationIconBadgeNumber < 0 {
            throw NotificationError(
                .badgeInputInvalid, "applicationIconBadgeNumber: must be 0 or more, not \(applicationIconBadgeNumber)")
        }
        content.badge = applicationIconBadgeNumber == 0 ? nil : applicationIconBadgeNumber
        content.categoryIdentifier = category ?? ""
        content.userInfo = userInfo
        return NotificationRequest(identifier: identifier, content: content, trigger: try schedule.trigger(now: now))
    }
}
