import Foundation
import HeraldTesting
import Testing

@testable import HeraldCore

func date(_ text: String) -> Date {
    let f = ISO8601DateFormatter()
    return f.date(from: text)!
}

func iso(_ d: Date?, _ zone: String) -> String {
    guard let d else { return "nil" }
    let f = ISO8601DateFormatter()
    f.timeZone = TimeZone(identifier: zone)!
    return f.string(from: d)
}

/// The next `count` dates of components in a zone, chaining each result as the next start.
func sequence(_ components: CalendarComponents, _ zone: String, after: String, count: Int = 3) -> [String] {
    let rules = ZoneRules.named(zone)!
    let matcher = CalendarMatcher(components)
    var out: [String] = []
    var cursor = date(after)
    for _ in 0..<count {
        guard let next = matcher.nextDate(after: cursor, in: rules) else {
            out.append("nil")
            break
        }
        out.append(iso(next, zone))
        cursor = next
    }
    return out
}

@Suite struct CalendarMatcherTests {
    @Test func springForwardGapFiresAtFirstInstantAfter() {
        #expect(
            sequence(.init(hour: 2, minute: 30), "America/New_York", after: "2025-03-08T12:00:00Z")
                == ["2025-03-09T03:00:00-04:00", "2025-03-10T02:30:00-04:00", "2025-03-11T02:30:00-04:00"])
        // Midnight that does not exist (São Paulo 2018).
        #expect(
            sequence(.init(day: 4), "America/Sao_Paulo", after: "2018-11-03T12:00:00Z", count: 2)
                == ["2018-11-04T01:00:00-02:00", "2018-12-04T00:00:00-02:00"])
        // Minutes only: the hourly pattern skips the missing hour.
        #expect(
            sequence(.init(minute: 15), "America/New_York", after: "2025-03-09T05:30:00Z", count: 2)
                == ["2025-03-09T01:15:00-05:00", "2025-03-09T03:15:00-04:00"])
    }

    @Test func aSkippedDayIsCrossedInOneStep() {
        // Pacific/Apia skipped 30 December 2011 entirely (UTC-10 to UTC+14).
        #expect(
            sequence(.init(second: 10), "Pacific/Apia", after: "2011-12-29T23:59:30-10:00", count: 2)
                == ["2011-12-31T00:00:10+14:00", "2011-12-31T00:01:10+14:00"])
        let foundation = FoundationCalendarReference.nextDate(
            after: date("2011-12-29T23:59:30-10:00"), matching: .init(second: 10),
            calendar: FoundationCalendarReference.calendar(TimeZone(identifier: "Pacific/Apia")!))
        #expect(iso(foundation, "Pacific/Apia") == "2011-12-31T00:00:10+14:00")
    }

    @Test func repeatedHourFiresOnceFirstOccurrence() {
        #expect(
            sequence(.init(hour: 1, minute: 30), "America/New_York", after: "2025-11-01T12:00:00Z")
                == ["2025-11-02T01:30:00-04:00", "2025-11-03T01:30:00-05:00", "2025-11-04T01:30:00-05:00"])
        // Every hour at :30 sees both passes of the repeated hour.
        #expect(
            sequence(.init(minute: 30), "America/New_York", after: "2025-11-02T05:00:00Z", count: 3)
                == ["2025-11-02T01:30:00-04:00", "2025-11-02T01:30:00-05:00", "2025-11-02T02:30:00-05:00"])
    }

    @Test func day31InShortMonthGoesToNextMonthStart() {
        #expect(
            sequence(.init(day: 31), "UTC", after: "2025-04-02T00:00:00Z", count: 4)
                == ["2025-05-01T00:00:00Z", "2025-05-31T00:00:00Z", "2025-07-01T00:00:00Z", "2025-07-31T00:00:00Z"])
        #expect(
            sequence(.init(month: 2, day: 29, hour: 8), "UTC", after: "2027-01-02T00:00:00Z", count: 2)
                == ["2027-03-01T00:00:00Z", "2028-02-29T08:00:00Z"])
    }

    @Test func unsetUnitsBelowTheHighestTakeTheirMinimum() {
        #expect(
            sequence(.init(hour: 7, second: 30), "UTC", after: "2025-01-02T07:05:10Z", count: 2)
                == ["2025-01-03T07:00:30Z", "2025-01-04T07:00:30Z"])
        #expect(
            sequence(.init(month: 3, hour: 9), "UTC", after: "2025-01-02T00:00:00Z", count: 2)
                == ["2025-03-01T09:00:00Z", "2026-03-01T09:00:00Z"])
        #expect(
            sequence(.init(month: 3, weekday: 2), "UTC", after: "2025-01-02T00:00:00Z", count: 2)
                == ["2025-03-03T00:00:00Z", "2026-03-02T00:00:00Z"])
        #expect(
            sequence(.init(minute: 5, weekday: 2, weekdayOrdinal: 2), "UTC", after: "2025-01-02T00:00:00Z", count: 2)
                == ["2025-01-13T00:05:00Z", "2025-01-13T01:05:00Z"])
    }

    @Test func weekdaysOrdinalsAndWeeks() {
        #expect(
            sequence(.init(weekday: 2, weekdayOrdinal: 5), "UTC", after: "2025-01-02T00:00:00Z", count: 2)
                == ["2025-03-31T00:00:00Z", "2025-06-30T00:00:00Z"])
        #expect(
            sequence(.init(day: 13, weekday: 6), "UTC", after: "2025-01-02T00:00:00Z", count: 2)
                == ["2025-06-13T00:00:00Z", "2026-02-13T00:00:00Z"])
        #expect(
            sequence(.init(weekday: 4, weekOfMonth: 3), "UTC", after: "2025-01-02T00:00:00Z", count: 2)
                == ["2025-01-15T00:00:00Z", "2025-02-12T00:00:00Z"])
        #expect(sequence(.init(year: 2024, month: 5), "UTC", after: "2025-01-02T00:00:00Z", count: 1) == ["nil"])
    }

    /// Foundation's defects listed in docs/calendar-matching.md: Herald is right.
    @Test func lordHoweHalfHourGapIsNotSkipped() {
        let components = CalendarComponents(hour: 2, minute: 15)
        #expect(
            sequence(components, "Australia/Lord_Howe", after: "2025-10-04T00:00:00Z", count: 2)
                == ["2025-10-05T02:30:00+11:00", "2025-10-06T02:15:00+11:00"])
        let foundation = FoundationCalendarReference.nextDate(
            after: date("2025-10-04T00:00:00Z"), matching: components,
            calendar: FoundationCalendarReference.calendar(TimeZone(identifier: "Australia/Lord_Howe")!))
        #expect(iso(foundation, "Australia/Lord_Howe") == "2025-10-06T02:15:00+11:00", "Foundation skips the gap day")
        let why = FoundationCalendarReference.explain(
            herald: date("2025-10-04T15:30:00Z"), foundation: foundation, after: date("2025-10-04T00:00:00Z"),
            components: components, zone: ZoneRules.named("Australia/Lord_Howe")!)
        #expect(why == .foundationSkipsGap)
    }

    @Test func sundayMidnightIsNotMovedToAMondayGap() {
        // Casablanca, 1 June 2009: Monday 00:00 does not exist. Foundation answers that Monday at 01:00 for
        // "Sunday at 00:00"; the next Sunday midnight is 7 June.
        let components = CalendarComponents(hour: 0, weekday: 1)
        let after = date("2009-05-31T14:18:08Z")
        #expect(
            sequence(components, "Africa/Casablanca", after: "2009-05-31T14:18:08Z", count: 1) == [
                "2009-06-07T00:00:00+01:00"
            ])
        let zone = TimeZone(identifier: "Africa/Casablanca")!
        let foundation = FoundationCalendarReference.nextDate(
            after: after, matching: components, calendar: FoundationCalendarReference.calendar(zone))
        let herald = CalendarMatcher(components).nextDate(after: after, in: ZoneRules.of(zone))
        #expect(
            FoundationCalendarReference.explain(
                herald: herald, foundation: foundation, after: after, components: components, zone: ZoneRules.of(zone))
                == .foundationResultDoesNotMatch)
        // While a gap-end answer for a time that falls in the gap is agreement, not a mismatch.
        let gap = CalendarComponents(hour: 2, minute: 30)
        let ny = ZoneRules.named("America/New_York")!
        let start = date("2025-03-08T12:00:00Z")
        let h = CalendarMatcher(gap).nextDate(after: start, in: ny)
        #expect(
            h
                == FoundationCalendarReference.nextDate(
                    after: start, matching: gap,
                    calendar: FoundationCalendarReference.calendar(TimeZone(identifier: "America/New_York")!)))
    }

    @Test func aMatchingDateThatIsNotFirstInItsPeriodIsNotExplained() {
        // day=15,minute=30: the period is the 15th, whose first match is 00:30. Claiming 01:30 against a later
        // Foundation answer must stay unexplained; claiming 00:30 is a valid match Foundation skipped.
        let components = CalendarComponents(day: 15, minute: 30)
        let zone = ZoneRules.named("UTC")!
        let after = date("2025-01-14T12:00:00Z")
        let foundation = date("2025-02-15T00:30:00Z")
        #expect(
            FoundationCalendarReference.explain(
                herald: date("2025-01-15T01:30:00Z"), foundation: foundation, after: after, components: components,
                zone: zone) == nil)
        #expect(
            FoundationCalendarReference.explain(
                herald: date("2025-01-15T00:30:00Z"), foundation: foundation, after: after, components: components,
                zone: zone) == .foundationSkipsValidMatch)
    }

    @Test func secondWeekdayOrdinalDoesNotInventFirstOfMonth() {
        // Foundation answers 1 March 00:00 (a Saturday) for "second Monday at 10:00" after 10 February.
        #expect(
            sequence(.init(hour: 10, weekday: 2, weekdayOrdinal: 2), "UTC", after: "2025-02-10T10:00:00Z", count: 1)
                == ["2025-03-10T10:00:00Z"])
    }

    @Test func agreesWithFoundationOnSeededRandomCases() {
        let result = FoundationCalendarReference.compare(FoundationCalendarReference.randomCases(count: 4000, seed: 7))
        #expect(result.total == 4000)
        #expect(
            result.unexplained.isEmpty,
            "\(result.unexplained.prefix(5).map { "\($0.0.components) \($0.0.zoneIdentifier) \($0.0.after) h=\(String(describing: $0.herald)) f=\(String(describing: $0.foundation))" })"
        )
        #expect(Double(result.agreements) / Double(result.total) > 0.98)
    }

    @Test func invalidComponentsNameTheField() {
        #expect(throws: NotificationError.invalid("calendar.hour", "must be 0…23, not 25")) {
            try CalendarComponents(parsing: "hour=25")
        }
        #expect(throws: NotificationError.self) { try CalendarComponents(parsing: "hr=2") }
        #expect(throws: NotificationError.invalid("calendar", "at least one date component must be set")) {
            try CalendarComponents(parsing: "")
        }
        #expect(throws: NotificationError.invalid("calendar.minute", "'x' is not an integer")) {
            try CalendarComponents(parsing: "minute=x")
        }
    }
}

@Suite struct TriggerTests {
    @Test func timeIntervalRules() throws {
        #expect(throws: NotificationError.self) { try TimeIntervalTrigger(interval: 0) }
        #expect(throws: NotificationError.self) { try TimeIntervalTrigger(interval: -5) }
        #expect(
            throws: NotificationError.invalid(
                "trigger.timeInterval", "must be at least 60 seconds when repeating, not 59.0")
        ) {
            try TimeIntervalTrigger(interval: 59, repeats: true)
        }
        let anchor = date("2025-01-01T00:00:00Z")
        let once = try TimeIntervalTrigger(interval: 90)
        #expect(once.nextFireDate(after: anchor, anchor: anchor) == anchor.addingTimeInterval(90))
        #expect(once.nextFireDate(after: anchor.addingTimeInterval(90), anchor: anchor) == nil)
        let every = try TimeIntervalTrigger(interval: 60, repeats: true)
        #expect(
            every.nextFireDate(after: anchor.addingTimeInterval(125), anchor: anchor) == anchor.addingTimeInterval(180))
        #expect(
            every.nextFireDate(after: anchor.addingTimeInterval(120), anchor: anchor) == anchor.addingTimeInterval(180))
    }

    @Test func floatingFollowsTheDeviceFixedDoesNot() throws {
        let nine = CalendarComponents(hour: 9, minute: 0)
        let floating = try CalendarTrigger(components: nine, repeats: true, timeZone: .floating)
        let fixed = try CalendarTrigger(components: nine, repeats: true, timeZone: .fixed("America/New_York"))
        let after = date("2025-06-01T00:00:00Z")
        let paris = TimeZone(identifier: "Europe/Paris")!
        #expect(
            iso(floating.nextFireDate(after: after, deviceTimeZone: paris), "Europe/Paris")
                == "2025-06-01T09:00:00+02:00")
        #expect(
            iso(fixed.nextFireDate(after: after, deviceTimeZone: paris), "America/New_York")
                == "2025-06-01T09:00:00-04:00")
        #expect(throws: NotificationError.invalid("trigger.timeZone", "unknown time zone 'Mars/Olympus'")) {
            try CalendarTrigger(components: nine, timeZone: .fixed("Mars/Olympus"))
        }
    }

    /// Seed 000 listing 2-2: a to-do item due at a date, notified N minutes before, fixed vs floating.
    @Test func todoDueDateMinusMinutes() throws {
        let zone = TimeZone(identifier: "America/New_York")!
        let itemDue = date("2025-07-04T14:00:00-04:00")
        let fireDate = itemDue.addingTimeInterval(-15 * 60)
        let now = date("2025-07-01T12:00:00Z")
        // timeZone set: wall-clock 13:45 follows the device.
        let floating = try #require(try LegacySchedule(fireDate: fireDate, timeZone: zone).trigger(now: now))
        #expect(
            iso(floating.nextFireDate(after: now, anchor: now, deviceTimeZone: zone), "America/New_York")
                == "2025-07-04T13:45:00-04:00")
        let tokyo = TimeZone(identifier: "Asia/Tokyo")!
        #expect(
            iso(floating.nextFireDate(after: now, anchor: now, deviceTimeZone: tokyo), "Asia/Tokyo")
                == "2025-07-04T13:45:00+09:00")
        // timeZone nil: an absolute instant wherever the device is.
        let absolute = try #require(try LegacySchedule(fireDate: fireDate).trigger(now: now))
        #expect(absolute.nextFireDate(after: now, anchor: now, deviceTimeZone: tokyo) == fireDate)
        // A past fire date delivers now.
        #expect(try LegacySchedule(fireDate: now.addingTimeInterval(-60)).trigger(now: now) == nil)
        #expect(try LegacySchedule().trigger(now: now) == nil)
    }

    @Test func legacyRepeatIntervalStartsAtFireDate() throws {
        let first = date("2025-03-10T07:00:00Z")
        let now = date("2025-03-01T00:00:00Z")
        let t = try #require(try LegacySchedule(fireDate: first, repeatInterval: .week).trigger(now: now))
        let zone = TimeZone(identifier: "UTC")!
        let a = try #require(t.nextFireDate(after: now, anchor: now, deviceTimeZone: zone))
        #expect(a == first)
        #expect(t.nextFireDate(after: a, anchor: now, deviceTimeZone: zone) == first.addingTimeInterval(7 * 86400))
        let region = try CircularRegion(identifier: "home", latitude: 1, longitude: 2, radius: 100)
        #expect(throws: NotificationError.self) {
            try LegacySchedule(fireDate: first, region: region).trigger(now: now)
        }
    }

    @Test func regionValidationAndCrossings() throws {
        #expect(throws: NotificationError.invalid("region.radius", "must be greater than 0, not 0.0")) {
            try CircularRegion(identifier: "x", latitude: 0, longitude: 0, radius: 0)
        }
        #expect(throws: NotificationError.self) {
            try CircularRegion(identifier: "x", latitude: 91, longitude: 0, radius: 5)
        }
        let office = try CircularRegion(identifier: "office", latitude: 48.8584, longitude: 2.2945, radius: 200)
        // ~1.1 km north, then 50 m away, then back out.
        let fixes = [
            LocationFix(latitude: 48.8684, longitude: 2.2945), LocationFix(latitude: 48.8588, longitude: 2.2945),
            LocationFix(latitude: 48.8589, longitude: 2.2946), LocationFix(latitude: 48.8700, longitude: 2.2945),
        ]
        var monitor = RegionMonitor()
        #expect(
            monitor.process(fixes, regions: [office]) == [
                RegionCrossing(regionIdentifier: "office", kind: .entry, fixIndex: 1),
                RegionCrossing(regionIdentifier: "office", kind: .exit, fixIndex: 3),
            ])
        #expect(abs(GreatCircle.distance(0, 0, 0, 1) - 111_195) < 10)
    }
}

@Suite struct CategoryTests {
    /// Seed 000 listing 2-8.
    @Test func inviteCategoryContexts() throws {
        let accept = try NotificationAction(identifier: "ACCEPT_IDENTIFIER", title: "Accept")
        let maybe = try NotificationAction(identifier: "MAYBE_IDENTIFIER", title: "Maybe")
        let decline = try NotificationAction(
            identifier: "DECLINE_IDENTIFIER", title: "Decline", options: [.destructive])
        let invite = try NotificationCategory(
            identifier: "INVITE_CATEGORY", actions: [accept, maybe, decline], minimalActions: [accept, decline])
        #expect(invite.actions(for: .default).map(\.title) == ["Accept", "Maybe", "Decline"])
        #expect(invite.actions(for: .minimal).map(\.title) == ["Accept", "Decline"])
        let noMinimal = try NotificationCategory(identifier: "INVITE_CATEGORY", actions: [accept, maybe, decline])
        #expect(noMinimal.actions(for: .minimal).map(\.title) == ["Accept", "Maybe"])
        let five = try (1...5).map { try NotificationAction(identifier: "A\($0)", title: "\($0)") }
        #expect(try NotificationCategory(identifier: "MANY", actions: five).actions(for: .default).count == 4)
    }

    @Test func foregroundImpliesAuthentication() throws {
        let reply = try NotificationAction(identifier: "REPLY", title: "Reply", options: [.foreground])
        #expect(reply.effectiveOptions.contains(.authenticationRequired))
        #expect(throws: NotificationError.self) { try NotificationAction(identifier: "", title: "x") }
        #expect(throws: NotificationError.self) {
            try NotificationAction(identifier: StandardAction.defaultIdentifier, title: "x")
        }
        #expect(throws: NotificationError.self) { try NotificationCategory(identifier: "C", actions: [reply, reply]) }
    }

    @Test func settingsAfterDecisions() {
        let granted = NotificationSettings.after(decision: true, options: [.alert, .sound])
        #expect(
            granted.authorizationStatus == .authorized && granted.badgeSetting == .disabled
                && granted.soundSetting == .enabled)
        let provisional = NotificationSettings.after(decision: true, options: [.alert, .provisional])
        #expect(
            provisional.authorizationStatus == .provisional && provisional.alertSetting == .disabled
                && provisional.notificationCenterSetting == .enabled)
        #expect(NotificationSettings.after(decision: false, options: [.alert]).authorizationStatus == .denied)
        #expect(NotificationError(.badgeInputInvalid, "x").code.rawValue == 1600)
        #expect(NotificationError.Code.notificationInvalidNoContent.description == "notificationInvalidNoContent")
    }
}

@Suite struct CalendarMatcherInvariantTests {
    /// Independently of Foundation: every answer is after the start and matches its components, except the
    /// two documented adjustments (the first of the next month for a missing day; the end of a DST gap).
    @Test func answersAreLaterAndMatch() {
        var checked = 0
        for c in FoundationCalendarReference.randomCases(count: 20_000, seed: 11) {
            let zone = ZoneRules.named(c.zoneIdentifier)!
            guard let next = CalendarMatcher(c.components).nextDate(after: c.after, in: zone) else { continue }
            checked += 1
            #expect(next > c.after)
            let instant = Int64(next.timeIntervalSince1970)
            let f = Civil.fields(zone.local(instant))
            let k = c.components
            let atGapEnd = zone.instants.contains(instant)
            let previousMonthDays = f.month == 1 ? 31 : Civil.daysInMonth(f.year, f.month - 1)
            let fallback =
                f.day == 1 && f.hour == 0 && (k.day.map { $0 > previousMonthDays } ?? false)
                || (atGapEnd && f.day == 1)
            if let v = k.year { #expect(f.year == v) }
            if let v = k.weekday { #expect(f.weekday == v, "\(k) \(c.zoneIdentifier) \(next)") }
            if let v = k.weekdayOrdinal { #expect((f.day - 1) / 7 + 1 == v, "\(k) \(c.zoneIdentifier) \(next)") }
            if fallback { continue }
            if let v = k.month { #expect(f.month == v, "\(k) \(c.zoneIdentifier) \(next)") }
            if let v = k.day { #expect(f.day == v, "\(k) \(c.zoneIdentifier) \(next)") }
            if atGapEnd { continue }
            if let v = k.hour { #expect(f.hour == v, "\(k) \(c.zoneIdentifier) \(next)") }
            if let v = k.minute { #expect(f.minute == v, "\(k) \(c.zoneIdentifier) \(next)") }
            if let v = k.second { #expect(f.second == v, "\(k) \(c.zoneIdentifier) \(next)") }
        }
        #expect(checked > 15_000)
    }

    @Test func extremeInputsNeverCrash() {
        let zone = ZoneRules.named("America/New_York")!
        let starts = [
            Date.distantPast, Date.distantFuture, Date(timeIntervalSince1970: -1e11), Date(timeIntervalSince1970: 1e11),
            Date(timeIntervalSince1970: .nan), Date(timeIntervalSince1970: 0),
        ]
        let components: [CalendarComponents] = [
            .init(year: 9999, month: 12, day: 31, hour: 23, minute: 59, second: 59), .init(era: 0), .init(era: 1),
            .init(weekday: 7, weekdayOrdinal: 6), .init(month: 2, day: 31, weekday: 3, weekOfMonth: 6), .init(),
        ]
        for start in starts {
            for c in components { _ = CalendarMatcher(c).nextDate(after: start, in: zone) }
        }
        #expect(
            CalendarMatcher(.init(weekday: 7, weekdayOrdinal: 6)).nextDate(
                after: Date(timeIntervalSince1970: 0), in: zone) == nil)
        #expect(CalendarMatcher(.init(year: 1999)).nextDate(after: Date(timeIntervalSince1970: 1e9), in: zone) == nil)
    }
}
