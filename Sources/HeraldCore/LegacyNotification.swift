import Foundation

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
