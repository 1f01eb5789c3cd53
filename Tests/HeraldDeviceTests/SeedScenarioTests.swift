import Foundation
import HeraldCore
import Testing

@testable import HeraldDevice

/// The seeds' own scenarios, run against the engine with virtual time.
@Suite struct SeedScenarioTests {
    /// Seed 003 (RemindMe): cancel all, schedule one reminder, alert action label, badge 1, userInfo round trip.
    @Test func remindMe() throws {
        let app = "com.useyourloaf.RemindMe"
        let now = at("2025-05-01T10:00:00Z")
        let zone = TimeZone(identifier: "Europe/London")!
        var e = try engine(app: app, zone: "Europe/London", now: now)
        for id in ["old-1", "old-2"] {
            _ = try e.handle(
                .add(
                    app: app,
                    request: NotificationRequest(
                        identifier: id, content: content("old"),
                        trigger: .timeInterval(try TimeIntervalTrigger(interval: 600)))), now: now)
        }
        _ = try e.handle(
            .add(app: app, request: NotificationRequest(identifier: "shown", content: content("on screen"))), now: now)
        // cancelAllLocalNotifications: nothing pending, and the alert on screen is dismissed too.
        let cancelled = try e.handle(.cancelLegacy(app: app, identifiers: nil), now: now)
        #expect(e.apps[app]!.pending.isEmpty && e.apps[app]!.delivered.isEmpty)
        #expect(cancelled == [.removeFromScreen(app: app, identifiers: ["shown"])])

        let pickerDate = at("2025-05-01T18:30:00+01:00")
        var c = NotificationContent(body: "Did you forget something?", badge: 1, sound: .default)
        c.actionLocKey = "Show me"
        c.userInfo = ["kRemindMeNotificationDataKey": .string("Buy milk")]
        let trigger = try LegacySchedule(fireDate: pickerDate, timeZone: zone).trigger(now: now)
        _ = try e.handle(
            .add(app: app, request: NotificationRequest(identifier: "reminder", content: c, trigger: trigger)), now: now
        )
        #expect(e.nextWake == pickerDate)

        let fired = e.advance(to: pickerDate)
        let p = try #require(fired.presentations.first)
        #expect(p.notification.request.content.body == "Did you forget something?")
        #expect(p.notification.request.content.actionLocKey == "Show me")
        #expect(p.badge == 1 && p.sound == .default && fired.contains(.setBadge(app: app, badge: 1)))
        // The user taps "Show me": the app is launched with the notification, userInfo intact.
        let response = try e.handle(
            .respond(app: app, identifier: "reminder", actionIdentifier: StandardAction.defaultIdentifier, text: nil),
            now: pickerDate)
        guard case .launchApp(_, .foreground, let options?) = response[1] else { Issue.record("\(response)"); return }
        #expect(options.request.content.userInfo["kRemindMeNotificationDataKey"] == .string("Buy milk"))
        _ = try e.handle(.setBadge(app: app, badge: 0), now: pickerDate)  // applicationIconBadgeNumber = 0
        #expect(e.apps[app]!.badge == 0)
    }

    /// Seed 004: three reminders a day (9:00, 14:00, 20:00) for three days; none in the past, no duplicate
    /// fire dates; a denied permission is remembered and never asked again.
    @Test func moodTrackerThreeTimesADay() throws {
        let app = "com.superapp"
        let zone = TimeZone(identifier: "America/Los_Angeles")!
        let now = at("2025-06-10T15:30:00-07:00")  // after 14:00 today
        var e = try engine(app: app, zone: "America/Los_Angeles", now: now)
        func create(_ fire: Date) throws {
            if fire < now { return }  // no notifications in the past
            if e.apps[app]!.pending.values.contains(where: { $0.nextFireDate == fire }) { return }  // no duplicates
            let trigger = try LegacySchedule(fireDate: fire, timeZone: zone).trigger(now: now)
            var c = NotificationContent(body: "Have you tracked your mood yet?", sound: .default)
            c.actionLocKey = "Track it!"
            _ = try e.handle(
                .add(
                    app: app,
                    request: NotificationRequest(
                        identifier: "mood-\(fire.timeIntervalSince1970)", content: c, trigger: trigger)), now: now)
        }
        for _ in 0..<2 {  // the screen loads twice: the second pass must add nothing
            for day in 0..<3 {
                for hour in [9, 14, 20] {
                    let d = CalendarComponents.of(
                        now.addingTimeInterval(Double(day) * 86400), in: zone, units: ["year", "month", "day"])
                    let dc = DateComponents(timeZone: zone, year: d.year, month: d.month, day: d.day, hour: hour)
                    try create(Calendar(identifier: .gregorian).date(from: dc)!)
                }
            }
        }
        let dates = e.apps[app]!.pending.values.compactMap(\.nextFireDate).sorted()
        #expect(dates.count == 7)  // 9 minus today's 9:00 and 14:00
        #expect(Set(dates).count == dates.count && dates.allSatisfy { $0 > now })
        var fired = 0
        for date in dates { fired += e.advance(to: date).presentations.count }
        #expect(fired == 7 && e.apps[app]!.pending.isEmpty)

        // Denied is remembered: the system never asks again.
        let policy = CountingPolicy(allow: false)
        var denied = DeviceEngine(policy: policy)
        _ = try denied.handle(.installApp(InstalledApp(bundleID: app)), now: now)
        for _ in 0..<3 {
            _ = try denied.handle(.requestAuthorization(app: app, options: [.alert, .sound, .badge]), now: now)
        }
        #expect(policy.timesAsked == 1 && denied.apps[app]!.settings.authorizationStatus == .denied)
    }

    /// Seed 001 listing 3-1: a 7:00 alarm (calendar trigger, not repeating).
    @Test func morningAlarm() throws {
        let app = "com.example.alarm"
        let now = at("2025-02-03T22:00:00+01:00")
        var e = try engine(app: app, zone: "Europe/Paris", now: now)
        let c = NotificationContent(title: "Wake up!", body: "Rise and shine! It's morning time!")
        let trigger = NotificationTrigger.calendar(
            try CalendarTrigger(components: .init(hour: 7, minute: 0), repeats: false))
        _ = try e.handle(
            .add(app: app, request: NotificationRequest(identifier: "MorningAlarm", content: c, trigger: trigger)),
            now: now)
        #expect(e.nextWake == at("2025-02-04T07:00:00+01:00"))
        #expect(
            e.advance(to: at("2025-02-04T07:00:00+01:00")).presentations.first?.notification.request.content.title
                == "Wake up!")
        #expect(e.apps[app]!.pending.isEmpty && e.nextWake == nil)
    }

    /// Seed 000 listing 2-15: "You have arrived!", triggers once on entry; with location off it never fires.
    @Test func youHaveArrived() throws {
        let app = "com.example.friends"
        let now = at("2025-01-01T00:00:00Z")
        var e = try engine(app: app, now: now)
        let region = try CircularRegion(
            identifier: "LOC_IDENTIFIER", latitude: 37.3349, longitude: -122.0090, radius: 150)
        let trigger = try LegacySchedule(region: region, regionTriggersOnce: true).trigger(now: now)
        _ = try e.handle(
            .add(
                app: app,
                request: NotificationRequest(
                    identifier: "arrive", content: NotificationContent(body: "You have arrived!"), trigger: trigger)),
            now: now)
        let outside = LocationFix(latitude: 37.3400, longitude: -122.0090)
        let inside = LocationFix(latitude: 37.3350, longitude: -122.0091)
        // Location services off: nothing.
        for fix in [outside, inside, outside, inside] { #expect(e.handle(fix: fix, now: now).isEmpty) }
        _ = try e.handle(.setLocationAuthorization(app: app, allowed: true), now: now)
        #expect(e.handle(fix: outside, now: now).isEmpty)
        let arrived = e.handle(fix: inside, now: now)
        #expect(arrived.presentations.map(\.notification.request.content.body) == ["You have arrived!"])
        #expect(e.apps[app]!.pending.isEmpty, "regionTriggersOnce removes it")
        #expect(e.handle(fix: outside, now: now).isEmpty && e.handle(fix: inside, now: now).isEmpty)
    }
}

extension DeviceEngine {
    mutating func handle(fix: LocationFix, now: Date) -> [DeviceAction] {
        (try? handle(.locationFix(fix), now: now)) ?? []
    }
}
