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
        #expect(page == (up.info["deviceAPI"] ?? "") + "/")
        let bearer = try #require(
            up.curlCommand.range(of: "bearer [A-Za-z0-9_.-]+", options: .regularExpression).map {
                String(up.curlCommand[$0].dropFirst("bearer ".count))
            })
        let shots = try screenshotDirectory(else: state)
        let result = try run(
            "/usr/bin/python3",
            [
                Self.script, page, up.info["developmentURL"] ?? "", bearer, up.info["deviceToken"] ?? "",
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
        // On the lock screen, Decline (authentication required) asks to unlock first; it runs after the unlock.
        let unlockFirst = try #require(steps["unlock first"])
        #expect(unlockFirst["actions"] as? [String] == ["Accept", "Decline"])
        #expect(unlockFirst["hint"] as? String == "Unlock to Decline" && unlockFirst["locked"] as? Bool == true)
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
                state.appendingPathComponent("device").path, try #require(up.info["topic"]), shots.path,
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
