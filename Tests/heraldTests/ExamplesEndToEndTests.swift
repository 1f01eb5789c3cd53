import Foundation
import Testing

/// Each example of Examples/ against a real daemon: the example processes connect over the app link,
/// the daemon launches them for responses, and `herald` commands act as the user and move time.
@Suite(.serialized, .ownThread) struct ExamplesEndToEndTests {
    @Test func remindMeKeepsOneReminderFollowsTravelAndShowsTheTextWhenTappedOrInTheForeground() throws {
        let device = try DeviceProcess(start: "2026-11-23T08:00:00+01:00")
        let app = "dev.herald.remindme"
        try device.install(app, example: "RemindMe")

        // One reminder at a time: the second replaces the first.
        #expect(try device.example("RemindMe", ["set", "Buy milk", "--in", "60"]) == ["RemindMe: reminder set"])
        #expect(try device.example("RemindMe", ["set", "Call mum", "--at", "09:30"]) == ["RemindMe: reminder set"])
        #expect(try device.pending(app).map(\.id) == ["reminder"])
        #expect(try device.pending(app).first?.next == "2026-11-23T08:30:00.000Z")

        // A floating time follows the device: 09:30 in Tokyo.
        try device.herald(["device", "set", "--time-zone", "Asia/Tokyo"])
        #expect(try device.pending(app).first?.next == "2026-11-24T00:30:00.000Z")
        try device.herald(["device", "clock", "--to", "2026-11-24T00:29:59Z"])
        #expect(try device.delivered(app).isEmpty)
        try device.herald(["device", "clock", "--advance", "1s"])
        #expect(
            device.daemon.waitForLine(containing: "Did you forget").last
                == "[dev.herald.remindme] Did you forget something? (sound default, badge 1)")
        #expect(try device.app(app)["badge"] as? Int == 1)

        // Tapping it launches RemindMe, which shows the text it kept in userInfo and clears the badge.
        try device.herald(["respond", app])
        let launched = device.daemon.reader.lines(containing: ["RemindMe: ", "response finished"])
        #expect(launched.contains { $0.contains("launched in the foreground") }, "\(launched)")
        #expect(launched.contains("RemindMe: Call mum"), "\(launched)")
        #expect(try device.app(app)["badge"] as? Int == 0)

        // In the foreground the app shows the reminder itself and the system shows nothing.
        _ = try device.example("RemindMe", ["set", "Feed the cat", "--in", "60"])
        let foreground = try device.start("RemindMe", ["wait"])
        try device.waitUntil(app, is: "foreground")
        try device.herald(["device", "clock", "--advance", "1m"])
        #expect(foreground.finish().lines == ["RemindMe: Feed the cat"])
        // The app answered willPresent with no options: nothing was presented and the badge stayed 0.
        let log = try #require(try device.get("/log?limit=4") as? [[String: Any]])
        let kinds = log.filter { $0["app"] as? String == app }.map { $0["kind"] as? String ?? "" }
        #expect(kinds.contains("willPresent") && !kinds.contains("presented"), "\(log)")
        #expect(try device.app(app)["badge"] as? Int == 0)

        // The user turns sounds and badges off in Settings: the next reminder shows without either.
        _ = try device.example("RemindMe", ["set", "Water the plants", "--in", "60"])
        let settings = try curl([
            "-X", "PATCH", device.apiURL + "/apps/\(app)/settings", "-d",
            #"{"soundSetting":"disabled","badgeSetting":"disabled"}"#,
        ])
        #expect(settings.status == 200, "\(settings.body)")
        try device.herald(["device", "clock", "--advance", "1m"])
        #expect(
            device.daemon.waitForLine(containing: "Did you forget").last
                == "[dev.herald.remindme] Did you forget something? (sound none)")
        #expect(try device.app(app)["badge"] as? Int == 0)
    }

    @Test func moodTrackerAsksOnceSchedulesThreeDailyRemindersAndLogsOneInTheForeground() throws {
        let device = try DeviceProcess(start: "2026-11-23T10:30:00+01:00")
        let app = "dev.herald.moodtracker"
        try device.install(app, example: "MoodTracker")

        let first = try device.example("MoodTracker", [])
        #expect(first.first?.hasPrefix("MoodTracker: We would like to remind you") == true, "\(first)")
        #expect(first.last == "MoodTracker: reminders at 9:00, 14:00, 20:00")
        let pending = try device.pending(app)
        #expect(pending.map(\.id) == ["mood-14", "mood-20", "mood-9"])
        #expect(
            pending.map(\.next) == ["2026-11-23T13:00:00.000Z", "2026-11-23T19:00:00.000Z", "2026-11-24T08:00:00.000Z"])

        // A second run neither asks nor duplicates.
        #expect(try device.example("MoodTracker", []) == ["MoodTracker: reminders at 9:00, 14:00, 20:00"])
        #expect(try device.pending(app).count == 3)

        // In the foreground it only logs the reminder; the repeating request stays, for tomorrow.
        let foreground = try device.start("MoodTracker", ["wait"])
        try device.waitUntil(app, is: "foreground")
        try device.herald(["device", "clock", "--to", "2026-11-23T14:00:00+01:00"])
        #expect(
            foreground.finish().lines.last == "MoodTracker: Notification received: Have you tracked your mood yet?")
        #expect(try device.pending(app).first { $0.id == "mood-14" }?.next == "2026-11-24T13:00:00.000Z")
    }

    @Test func moodTrackerSaysWhatToDoWhenTheUserSaidNo() throws {
        let device = try DeviceProcess(start: "2026-11-23T10:30:00+01:00", extra: ["--deny"])
        let app = "dev.herald.moodtracker"
        try device.install(app, example: "MoodTracker")
        #expect(try device.example("MoodTracker", []).count == 1)
        #expect(
            try device.example("MoodTracker", [])
                == ["MoodTracker: Notifications are off. Turn them on in Settings to get mood reminders."])
        #expect(try device.pending(app).isEmpty)
    }

    @Test func alarmSnoozesByReschedulingAndStopsInTheBackground() throws {
        let device = try DeviceProcess(start: "2026-11-23T07:00:00Z")
        let app = "dev.herald.alarm"
        try device.install(app, example: "Alarm")
        #expect(try device.example("Alarm", ["start", "300"]) == ["Alarm: rings in 300 s"])
        try device.herald(["device", "clock", "--advance", "5m"])
        let rang = device.daemon.waitForLine(containing: "Wake up!")
        #expect(rang.last?.contains("Your timer has expired.") == true, "\(rang)")
        #expect(rang.last?.contains("actions: SNOOZE_ACTION | STOP_ACTION") == true, "\(rang)")

        // Snooze: the app runs in the background, invalidates the timer and sets a new one 9 minutes on.
        try device.herald(["respond", app, "timer", "--action", "SNOOZE_ACTION"])
        let snoozed = device.daemon.reader.lines(containing: ["Alarm: ", "response finished"])
        #expect(snoozed.contains { $0.contains("launched in the background") }, "\(snoozed)")
        #expect(snoozed.contains("Alarm: snoozed for 9 minutes"), "\(snoozed)")
        #expect(try device.pending(app).map(\.id) == ["timer"])
        #expect(try device.pending(app).first?.next == "2026-11-23T07:14:00.000Z")
        #expect(try device.delivered(app).isEmpty)

        // It rings again; Stop invalidates it for good.
        try device.herald(["device", "clock", "--advance", "9m"])
        #expect(device.daemon.waitForLine(containing: "Wake up!").isEmpty == false)
        try device.herald(["respond", app, "timer", "--action", "STOP_ACTION"])
        #expect(device.daemon.reader.lines(containing: ["Alarm: ", "response finished"]).contains("Alarm: stopped"))
        #expect(try device.pending(app).isEmpty)
        #expect(try device.delivered(app).isEmpty)
    }

    @Test func arrivalFiresOnceOnEnteringTheRegionAndTheAppTellsFriends() throws {
        let device = try DeviceProcess(start: "2026-11-23T07:00:00Z")
        let app = "dev.herald.arrival"
        try device.install(app, example: "Arrival")
        // The Eiffel Tower, 200 m.
        #expect(
            try device.example("Arrival", ["watch", "48.8584", "2.2945", "200"]) == ["Arrival: watching destination"])
        #expect((try device.get("/apps/\(app)/settings") as? [String: Any])?["locationAuthorized"] as? Bool == true)

        try device.herald(["device", "set", "--location", "48.8606,2.3376"])  // the Louvre, 3 km away
        #expect(try device.delivered(app).isEmpty)
        try device.herald(["device", "set", "--location", "48.8583,2.2944"])
        #expect(
            device.daemon.waitForLine(containing: "You have arrived!").last
                == "[dev.herald.arrival] You have arrived! (sound default)")
        // Once: leaving and coming back shows nothing more.
        try device.herald(["device", "set", "--location", "48.8606,2.3376"])
        try device.herald(["device", "set", "--location", "48.8583,2.2944"])
        #expect(try device.delivered(app).count == 1)
        #expect(try device.pending(app).isEmpty)

        try device.herald(["respond", app])
        #expect(
            device.daemon.waitForLine(containing: "Arrival: ").last
                == "Arrival: telling friends you arrived at destination")
    }

    @Test func arrivalSaysWhenTheUserKeepsLocationOff() throws {
        let device = try DeviceProcess(start: "2026-11-23T07:00:00Z", extra: ["--deny"])
        try device.install("dev.herald.arrival", example: "Arrival")
        #expect(
            try device.example("Arrival", ["watch", "48.8584", "2.2945", "200"], status: 1)
                == ["Arrival: location is off for this app; turn it on in Settings"])
        #expect(try device.pending("dev.herald.arrival").isEmpty)
    }

    @Test func invitesAndParcelsOverThePushServiceAnswerAndLocalizeThroughTheRealApps() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("herald-ex-\(UUID())")
        let up = try UpEndToEndTests.Up(
            state: state,
            extra: [
                "--install", "dev.herald.invites=\(try exampleExecutable("Invites").path)",
                "--install", "dev.herald.parcels=\(try exampleExecutable("ParcelApp").path)",
            ])
        defer { _ = up.stop() }
        let appLink = ["HERALD_APP_LINK": state.appendingPathComponent("device/app.sock").path]
        let upFile = state.appendingPathComponent("up.json").path

        // Invites registers its category and for remote notifications; the provider names the category.
        // The device asks the user first (`herald up` runs it with --permission interactive): Allow.
        let registering = try Child(try exampleExecutable("Invites"), ["register"], environment: appLink)
        try up.allow("dev.herald.invites")
        let register = registering.finish()
        let token = try #require(register.lines.last?.split(separator: " ").last.map(String.init), "\(register)")
        #expect(token.count == 64)
        let payload = state.appendingPathComponent("invite.json")
        try Data(#"{"aps":{"alert":"You’re invited!","category":"INVITE_CATEGORY"},"event":"Team lunch"}"#.utf8)
            .write(to: payload)
        let pushed = try up.herald(
            ["push", "--up", upFile, "--token", token, "--topic", "dev.herald.invites", "--payload", payload.path])
        #expect(pushed.status == 0, "\(pushed.stderr)")
        let shown = up.waitForLine(containing: "You’re invited!")
        #expect(
            shown.last?.contains("actions: ACCEPT_IDENTIFIER | MAYBE_IDENTIFIER | DECLINE_IDENTIFIER") == true,
            "\(shown)")

        // Accept runs the not-running app in the background; the response reaches it, the device waits.
        let accepted = try up.herald(["respond", "dev.herald.invites", "--action", "ACCEPT_IDENTIFIER"] + up.device)
        #expect(accepted.status == 0, "\(accepted.stderr)")
        let answered = up.reader.lines(containing: ["Invites: ", "response finished"])
        #expect(answered.contains { $0.contains("[dev.herald.invites] launched in the background") }, "\(answered)")
        #expect(answered.contains("Invites: accepted Team lunch"), "\(answered)")
        #expect(answered.contains { $0.contains("[dev.herald.invites] response finished") }, "\(answered)")

        // The provider example: the app registers its token and languages with the app server, which
        // sends through HeraldProvider in the user's language.
        let server = try Child(try exampleExecutable("ParcelServer"), [upFile])
        let listening = try #require(server.waitForLine(containing: "listening on").last)
        let serverURL = String(listening.split(separator: " ").last ?? "")
        let parcelApp = try Child(
            try exampleExecutable("ParcelApp"), [serverURL],
            environment: appLink.merging(["LANGUAGE": "fr_CA:en", "LANG": "fr_CA.UTF-8"]) { $1 })
        try up.allow("dev.herald.parcels")
        #expect(server.waitForLine(containing: "registered").last?.hasSuffix("speaking fr-CA,en") == true)
        let shipped = try curl(["-d", #"{"parcel":"A123"}"#, serverURL + "/ship"])
        #expect(shipped.status == 200 && shipped.body == "sent 1\n", "\(shipped)")
        let app = parcelApp.finish()
        #expect(app.status == 0)
        #expect(app.lines.last == "ParcelApp: Votre colis A123 est en route.", "\(app.lines)")
        #expect(up.waitForLine(containing: "Votre colis").last?.hasPrefix("[dev.herald.parcels] Parcel A123") == true)
        kill(server.process.processIdentifier, SIGTERM)
    }
}
