import Foundation
import Testing

/// The web device as a person sees it: `herald device` serves the page, headless Chromium shows it
/// (Tests/Clients/web_device.py, Selenium), and what an app does appears on it live.
@Suite(.serialized, .ownThread) struct WebDeviceEndToEndTests {
    /// `herald up` as the README's tour starts it: the printed page, driven by a person in Chromium
    /// (the steps are in the script), with pushes from curl and the Invites example installed.
    @Test func theTourOnThePagePromptLockScreenBannerSettingsAlertReplyAndNotificationCenter() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("herald-web-\(UUID())")
        defer { try? FileManager.default.removeItem(at: state) }
        let invites = try exampleExecutable("Invites").path
        let up = try UpEndToEndTests.Up(state: state, extra: ["--install", "dev.herald.invites=\(invites)"])
        defer { _ = up.stop() }
        // The page comes first in what `herald up` prints.
        let pageLine = try #require(up.banner.first { $0.contains("the device (open it):") })
        #expect(up.banner.firstIndex(of: pageLine) == (up.banner.firstIndex { $0.hasPrefix("herald is up") } ?? -1) + 1)
        let page = String(pageLine.split(separator: " ").last ?? "")
        #expect(page == (up.info.deviceAPI) + "/")
        let bearer = try #require(
            up.curlCommand.range(of: "bearer [A-Za-z0-9_.-]+", options: .regularExpression).map {
                String(up.curlCommand[$0].dropFirst("bearer ".count))
            })
        let shots = try screenshotDirectory(else: state)
        let result = try run(
            "/usr/bin/python3",
            [
                Self.script, page, up.info.developmentURL, bearer, up.info.deviceToken,
                try heraldExecutable().path, state.appendingPathComponent("device").path, invites,
                shots.path,
            ])
        #expect(result.status == 0, "\(result.stderr)")
        let steps = Self.steps(result.stdout)

        // The system's dialog names the app and what it asked for; Don't Allow is the app's answer.
        let deny = try #require(steps["deny"])
        #expect(deny["title"] as? String == "“Tea” Would Like to Send You Notifications")
        #expect(
            deny["body"] as? String
                == "Notifications may include alerts, sounds, and icon badges. These can be configured in Settings.")
        #expect(deny["answer"] as? String == "denied" && deny["status"] as? Int == 0)
        // Allow: Invites' own requestAuthorization returns granted, and it goes on to register.
        let allow = try #require(steps["allow"])
        #expect(allow["title"] as? String == "“Invites” Would Like to Send You Notifications")
        #expect(allow["registered"] as? Bool == true && allow["status"] as? Int == 0, "\(allow)")

        // Locked: the push from curl is on the lock screen, with its app and the legacy slide text.
        let lock = try #require(steps["lock"])
        #expect(lock["app"] as? String == "Demo" && lock["title"] as? String == "Hello")
        #expect(lock["body"] as? String == "from Herald" && lock["foot"] as? String == "slide to view")
        #expect(lock["homeVisible"] as? Bool == false)
        // On the lock screen, Decline (authentication required) asks for the passcode; with it, it
        // runs in the background and the device stays locked.
        let passcode = try #require(steps["passcode"])
        #expect(passcode["actions"] as? [String] == ["Accept", "Decline"])
        #expect(passcode["reason"] as? String == "to Decline", "\(passcode)")
        #expect(passcode["locked"] as? Bool == true && passcode["lockVisible"] as? Bool == true, "\(passcode)")
        // Unlocked: the badge the push set is on the icon.
        let home = try #require(steps["home"])
        #expect(home["badge"] as? String == "1" && home["name"] as? String == "Demo")
        // Tapping the icon launched the demo app in the foreground; Home sent it to the background.
        let open = try #require(steps["open"])
        #expect(open["front"] as? String == "Demo" && open["after"] as? String == "background", "\(open)")
        // The app's own sound file plays in the page; a missing one plays the default, and says why.
        let played = try #require(steps["sounds"]?["played"] as? [[String: Any]])
        #expect(played.first?["sound"] as? String == "chime.wav" && played.first?["played"] as? String == "file")
        #expect(played.last?["sound"] as? String == "default" && played.last?["played"] as? String == "default")
        #expect((played.last?["note"] as? String)?.contains("missing.wav") == true, "\(played)")
        // A banner with the category's lock-screen actions, and its sound played in the page.
        let banner = try #require(steps["banner"])
        #expect(banner["title"] as? String == "You’re invited!")
        #expect(banner["actions"] as? [String] == ["Accept", "Decline"])
        let bannerSound = (banner["sounds"] as? [[String: Any]])?.first
        #expect(bannerSound?["sound"] as? String == "default" && bannerSound?["played"] as? String == "default")
        // Settings: the same settings the API has.
        let settings = try #require(steps["settings"])
        #expect(settings["alertStyle"] as? String == "alert" && settings["soundSetting"] as? String == "disabled")
        #expect(settings["checked"] as? Bool == false)
        // The next one is an alert panel with all four-or-fewer actions, Decline in red, and silent.
        let alert = try #require(steps["alert"])
        #expect(alert["body"] as? String == "Dinner on Saturday")
        #expect(alert["buttons"] as? [String] == ["Accept", "Maybe", "Decline", "Close"])
        #expect(alert["destructive"] as? [String] == ["Decline"])
        #expect(alert["sounds"] as? Int == 1 && alert["presentedSound"] is NSNull, "\(alert)")
        // Accept launched Invites in the background and it answered; the reply reached the demo app.
        let accepted = up.reader.lines(containing: [
            "Invites: declined Breakfast", "Invites: accepted Dinner", "(action reply, text On my way)",
            "(action reply, text At eight)",
        ])
        #expect(accepted.contains { $0.contains("[dev.herald.invites] launched in the background") }, "\(accepted)")
        #expect(accepted.contains { $0.hasPrefix("didReceive") && $0.contains("text On my way") }, "\(accepted)")
        // Notification Center: grouped by app and thread; cleared one, then all.
        let center = try #require(steps["center"])
        let groups = (center["groups"] as? [[Any]])?.map { $0.map { "\($0)" } } ?? []
        #expect(groups.contains(["dev.herald.demo", "dinner", "2"]), "\(groups)")
        #expect(center["left"] as? Int == 0)
        // Show Previews off: the alert shows the app and "Notification", and the text is nowhere in the page.
        let previews = try #require(steps["previews"])
        #expect(previews["title"] is NSNull && previews["body"] as? String == "Notification", "\(previews)")
        #expect(previews["page"] as? Bool == false)
        // An alert's text-input action: a field with the action's button title; the text reaches the app.
        let alertReply = try #require(steps["alert reply"])
        #expect(alertReply["send"] as? String == "Send" && alertReply["placeholder"] as? String == "Reply")
        #expect(steps["same page"]?["mark"] as? String == "still the same page")
        for name in ["prompt", "lock", "home", "banner", "settings", "alert", "center"] {
            let png = try Data(contentsOf: shots.appendingPathComponent("web-device-\(name).png"))
            #expect(png.prefix(4) == Data([0x89, 0x50, 0x4E, 0x47]), "\(name) is a PNG")
        }
    }

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Clients/web_device.py").path

    /// The script's JSON lines, by step.
    static func steps(_ output: String) -> [String: [String: Any]] {
        var steps: [String: [String: Any]] = [:]
        for line in output.split(separator: "\n") {
            if let step = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let name = step["step"] as? String
            {
                steps[name] = step
            }
        }
        return steps
    }

    /// Live Activities are cards on the lock screen: the app, its attributes and its state, updated
    /// live, badged when ended, gone when dismissed.
    @Test func liveActivitiesAreCardsOnTheLockScreen() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("herald-web-\(UUID())")
        defer { try? FileManager.default.removeItem(at: state) }
        let up = try UpEndToEndTests.Up(state: state)
        defer { _ = up.stop() }
        let pageLine = try #require(up.banner.first { $0.contains("the device (open it):") })
        let shots = try screenshotDirectory(else: state)
        let script = URL(fileURLWithPath: Self.script).deletingLastPathComponent().appendingPathComponent(
            "web_activities.py")
        let result = try run(
            "/usr/bin/python3",
            [
                script.path, String(pageLine.split(separator: " ").last ?? ""), try heraldExecutable().path,
                state.appendingPathComponent("device").path, up.info.topic, shots.path,
            ])
        #expect(result.status == 0, "\(result.stderr)")
        let steps = Self.steps(result.stdout)
        let started = try #require(steps["started"])
        #expect(started["app"] as? String == "Demo" && started["onLockScreen"] as? Bool == true)
        #expect(started["attributes"] as? String == "order A-17", "\(started)")
        #expect(started["state"] as? String == "eta 12:40 · stop 5")
        #expect(steps["updated"]?["state"] as? String == "eta 12:25 · stop 2")
        let alert = try #require(steps["alert"])
        #expect(alert["title"] as? String == "Almost there" && alert["body"] as? String == "One stop left", "\(alert)")
        #expect(alert["sounds"] as? [String] == ["default"], "the demo app's sounds are allowed")
        let ended = try #require(steps["ended"])
        #expect(
            ended["badge"] as? String == "ended" && ended["foot"] as? String == "leaves the screen in 1h", "\(ended)")
        #expect(steps["dismissed"]?["cards"] as? Int == 1)
        let png = try Data(contentsOf: shots.appendingPathComponent("web-device-activity.png"))
        #expect(png.prefix(4) == Data([0x89, 0x50, 0x4E, 0x47]))
    }

    /// Today's iPhone on the page (Tests/Clients/web_today.py), on a device clock that moves only
    /// when told: only what iOS shows is shown, interruption levels, Focus, provisional Keep and
    /// Turn Off, stacks, the passcode on a locked device, and Scheduled Summary.
    @Test func todaysIPhoneOnThePageFocusSummaryProvisionalPasscodeAndNothingToShow() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("herald-web-\(UUID())")
        defer { try? FileManager.default.removeItem(at: state) }
        let up = try UpEndToEndTests.Up(
            state: state, extra: ["--manual-clock", "--start-time", "2026-11-26T10:00:00+01:00"])
        defer { _ = up.stop() }
        let pageLine = try #require(up.banner.first { $0.contains("the device (open it):") })
        let bearer = try #require(
            up.curlCommand.range(of: "bearer [A-Za-z0-9_.-]+", options: .regularExpression).map {
                String(up.curlCommand[$0].dropFirst("bearer ".count))
            })
        let shots = try screenshotDirectory(else: state)
        let script = URL(fileURLWithPath: Self.script).deletingLastPathComponent().appendingPathComponent(
            "web_today.py")
        let result = try run(
            "/usr/bin/python3",
            [
                script.path, String(pageLine.split(separator: " ").last ?? ""), up.info.developmentURL,
                bearer, up.info.deviceToken, try heraldExecutable().path,
                state.appendingPathComponent("device").path, shots.path,
            ])
        #expect(result.status == 0, "\(result.stderr)")
        let steps = Self.steps(result.stdout)

        // A badge-only push changes the icon's badge and nothing else; {"foo":1} does nothing at all.
        let badge = try #require(steps["badge only"])
        #expect(badge["badge"] as? String == "7" && badge["kinds"] as? [String] == ["presented"], "\(badge)")
        #expect(badge["nothingKinds"] as? [String] == ["notShown"], "\(badge)")
        #expect(badge["banner"] as? Bool == false && badge["sounds"] as? Int == 0, "\(badge)")
        #expect(
            badge["lockCards"] as? Int == 0 && badge["centerCards"] as? Int == 0 && badge["listed"] as? Int == 0,
            "\(badge)")
        // Passive: no sound (though the push asks for one), no banner, the screen stays asleep; listed.
        let passive = try #require(steps["passive"])
        #expect(passive["awake"] as? String == "no" && passive["banner"] as? Bool == false, "\(passive)")
        #expect(passive["sounds"] as? Int == 0 && passive["center"] as? Bool == true, "\(passive)")
        #expect(passive["level"] as? String == "passive")
        // Do Not Disturb from the page's control: a push is silenced and marked; Time Sensitive breaks
        // through with a banner, its label and its sound; the lock screen shows the Focus and stays
        // dark for a silenced push, and lights for a Time Sensitive one.
        let focus = try #require(steps["focus"])
        #expect(focus["modes"] as? [String] == ["Do Not Disturb", "Sleep", "Work", "Off"], "\(focus)")
        #expect(focus["statusFocus"] as? String == "Do Not Disturb" && focus["focus"] as? String == "Do Not Disturb")
        #expect(focus["silencedBanner"] as? Bool == false && focus["silencedSounds"] as? Int == 0, "\(focus)")
        let urgent = focus["urgent"] as? [String: Any]
        #expect(
            urgent?["label"] as? String == "Time Sensitive" && urgent?["title"] as? String == "Delivery", "\(focus)")
        #expect(urgent?["sound"] as? String == "default", "\(focus)")
        #expect(focus["centerMark"] as? String == "Silenced by Do Not Disturb", "\(focus)")
        let pill = focus["pill"] as? [String: Any]
        #expect(pill?["text"] as? String == "Do Not Disturb" && pill?["on"] as? Bool == true, "\(focus)")
        let afterSilenced = focus["afterSilenced"] as? [String: Any]
        #expect(afterSilenced?["awake"] as? String == "no" && afterSilenced?["onLock"] as? Int == 0, "\(focus)")
        #expect(afterSilenced?["sounds"] as? Int == 0, "\(focus)")
        #expect(focus["lockLabel"] as? String == "Time Sensitive" && focus["lockAwake"] as? String == "yes", "\(focus)")
        #expect(focus["lockSounds"] as? Int == 1, "\(focus)")
        let focusOff = try #require(steps["focus off"])
        #expect(focusOff["pill"] as? String == "Focus" && focusOff["focus"] is NSNull, "\(focusOff)")
        // Provisional: quiet in Notification Center with Keep… and Turn Off…; Keep → Deliver
        // Prominently authorizes one app, Turn Off denies the other; the buttons go, Settings says so.
        let provisional = try #require(steps["provisional"])
        #expect(provisional["answer"] as? String == "granted" && provisional["banner"] as? Bool == false)
        #expect(provisional["buttons"] as? [String] == ["Keep…", "Turn Off…"], "\(provisional)")
        #expect(provisional["keep"] as? [String] == ["Deliver Prominently", "Deliver Quietly", "Cancel"])
        #expect(provisional["off"] as? [String] == ["Turn Off All Notifications", "Cancel"])
        #expect((provisional["left"] as? [String])?.isEmpty == true, "\(provisional)")
        #expect(
            provisional["keptStatus"] as? String == "authorized" && provisional["keptAlertStyle"] as? String == "banner"
        )
        #expect(provisional["offStatus"] as? String == "denied")
        let details = provisional["details"] as? [String: String]
        #expect(details?["com.example.quiet"] == "Banners, Sounds, Badges" && details?["com.example.hush"] == "Off")
        // A thread is one stack: its top card and its line; tapped, all three.
        let stack = try #require(steps["stack"])
        #expect(stack["count"] as? String == "3" && stack["collapsed"] as? Int == 1, "\(stack)")
        #expect(stack["line"] as? String == "and 2 more from Anna" && stack["top"] as? String == "Starting now")
        #expect(stack["expanded"] as? Int == 3)
        // Locked, Done (authentication required) asks for the passcode: a wrong one is refused, 0000
        // runs it in the background, and the device stays locked.
        let passcode = try #require(steps["passcode"])
        #expect(passcode["reason"] as? String == "to Done", "\(passcode)")
        let wrong = passcode["wrong"] as? [String: Any]
        #expect(wrong?["error"] as? String == "Wrong Passcode" && wrong?["locked"] as? Bool == true, "\(passcode)")
        #expect(wrong?["still"] as? Bool == true)
        #expect(passcode["locked"] as? Bool == true && passcode["page"] as? String == "lock", "\(passcode)")
        #expect(passcode["lockVisible"] as? Bool == true && passcode["told"] as? [String] == ["response done"])
        // Settings: Scheduled Summary on, at half past the start, for the demo app; an app's Time
        // Sensitive Notifications and Notification Grouping.
        let summarySettings = try #require(steps["summary settings"])
        let settings = summarySettings["settings"] as? [String: Any]
        #expect(summarySettings["at"] as? String == "10:30", "\(summarySettings)")
        #expect(settings?["enabled"] as? Bool == true && settings?["apps"] as? [String] == ["dev.herald.demo"])
        #expect((settings?["times"] as? [String])?.contains("10:30") == true, "\(summarySettings)")
        #expect((summarySettings["row"] as? String)?.contains("10:30") == true, "\(summarySettings)")
        let rows = summarySettings["rows"] as? [String] ?? []
        #expect(rows.contains("Time Sensitive Notifications") && rows.contains("Notification Grouping"), "\(rows)")
        #expect(summarySettings["timeSensitive"] as? Bool == true && summarySettings["inSummary"] as? Bool == true)
        // Held for the summary: dark, silent, not listed; past 10:30 the summary is on the lock
        // screen (most relevant first) and in Notification Center; an item opens as itself.
        let summary = try #require(steps["summary"])
        let held = summary["whileHeld"] as? [String: Any]
        #expect(held?["awake"] as? String == "no" && held?["sounds"] as? Int == 0, "\(summary)")
        #expect(held?["onLock"] as? Int == 0 && held?["held"] as? Int == 3, "\(summary)")
        #expect((summary["advanced"] as? String)?.hasPrefix("2026-11-26T09:45:00") == true, "\(summary)")
        let card = summary["summary"] as? [String: Any]
        #expect(card?["title"] as? String == "Your Morning Summary", "\(summary)")
        #expect((card?["count"] as? String)?.hasPrefix("3 notifications") == true, "\(summary)")
        #expect(card?["items"] as? [String] == ["Bank", "Anna", "Club"], "\(summary)")
        #expect(card?["awake"] as? String == "yes" && card?["sounds"] as? Int == 0 && card?["inCenter"] as? Int == 1)
        #expect(summary["reason"] as? String == "to open Demo" && summary["front"] as? String == "Demo", "\(summary)")
        let opened = try #require(summary["opened"] as? String)
        #expect(summary["told"] as? String == "didReceive default for \(opened)", "\(summary)")
        #expect(summary["locked"] as? Bool == false && summary["foreground"] as? String == "dev.herald.demo")
        // Home sends the app away; the page was never reloaded.
        let home = try #require(steps["home"])
        #expect(home["foreground"] is NSNull && home["mark"] as? String == "still the same page", "\(home)")
        // The legacy API: alertAction labels the alert's open button; cancelling takes the alert off the
        // screen; hasAction NO is one OK button that opens nothing.
        let legacy = try #require(steps["legacy"])
        #expect(legacy["buttons"] as? [String] == ["Close", "Show me"], "\(legacy)")
        #expect(legacy["cancelled"] as? Bool == true && legacy["okButtons"] as? [String] == ["OK"], "\(legacy)")
        #expect(legacy["foreground"] is NSNull, "OK did not open the app")
        for name in ["focus", "summary"] {
            let png = try Data(contentsOf: shots.appendingPathComponent("web-device-\(name).png"))
            #expect(png.prefix(4) == Data([0x89, 0x50, 0x4E, 0x47]), "\(name) is a PNG")
        }
    }

    @Test func anOpenPageDoesNotHoldUpTheDaemonsShutdown() throws {
        let device = try DeviceProcess()
        let page = try Child(URL(fileURLWithPath: "/usr/bin/curl"), ["-sSN", device.apiURL + "/events"])
        // The stream is open: its first line is the opening comment.
        #expect(page.waitForLine(containing: ": herald device").last == ": herald device")
        // SIGTERM ends the daemon cleanly (the watchdog's SIGKILL would say otherwise) and ends the
        // stream as a finished response, so curl exits 0.
        #expect(device.stop() == 0)
        #expect(page.finish().status == 0)
    }

    @Test func stoppingTheDaemonEndsAnUnansweredPermissionDialogWithAnError() throws {
        let device = try DeviceProcess(extra: ["--permission", "interactive"])
        try device.herald(["device", "install", "dev.herald.tea"])
        let asking = try Child(
            try heraldExecutable(), ["app", "dev.herald.tea", "authorize", "--device-state", device.state.path])
        let asked = device.daemon.waitForLine(containing: "asks to send notifications")
        #expect(asked.last?.hasSuffix("waiting for the user's answer") == true, "\(asked)")
        // SIGTERM: the daemon stops cleanly (the watchdog's SIGKILL would say otherwise) and the
        // app's call fails instead of waiting for ever.
        #expect(device.stop() == 0)
        let answer = asking.finish()
        #expect(answer.status != 0 && answer.lines.isEmpty, "\(answer)")
    }

    @Test func withoutTheWebPresenterThePageIsOffAndSaysSo() throws {
        let device = try DeviceProcess(extra: ["--presenter", "terminal"])
        let page = try curl([device.apiURL + "/"])
        #expect(page.status == 404 && page.body.contains("the web device is off"), "\(page.body)")
        #expect(try curl([device.apiURL + "/healthz"]).status == 200)
        // Another site's page in the user's browser may not change the device; curl (no Origin) may.
        let forged = try curl([
            "-X", "PUT", "-H", "Origin: http://evil.example", "-d", #"{"identifier":"Asia/Tokyo"}"#,
            device.apiURL + "/time-zone",
        ])
        #expect(forged.status == 403 && forged.body.contains("may not change this device"), "\(forged.body)")
        #expect(
            try curl(["-X", "PUT", "-d", #"{"identifier":"Asia/Tokyo"}"#, device.apiURL + "/time-zone"]).status == 200)
        let unknown = try run(try heraldExecutable().path, ["device", "--presenter", "terminal,phone"])
        #expect(unknown.status != 0 && unknown.stderr.contains("unknown presenter 'phone'"), "\(unknown.stderr)")
    }
}

/// Where a test keeps its screenshots: `HERALD_SCREENSHOTS` (`docs/images` keeps them for the
/// documentation), else `shots` in the test's own directory.
func screenshotDirectory(else state: URL) throws -> URL {
    let shots =
        ProcessInfo.processInfo.environment["HERALD_SCREENSHOTS"].map { URL(fileURLWithPath: $0) }
        ?? state.appendingPathComponent("shots")
    try FileManager.default.createDirectory(at: shots, withIntermediateDirectories: true)
    return shots
}
