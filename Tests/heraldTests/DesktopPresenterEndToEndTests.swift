import Foundation
import HeraldTesting
import Testing

/// The desktop presenter as a person sees it: `herald device --presenter terminal,desktop` on a
/// private session bus (its own `dbus-daemon`) with a real notification server (dunst) on a private X
/// server (Xvfb), started by Tests/Clients/desktop_session.sh. The user's clicks are dunst's own
/// commands (`dunstctl context` with a stand-in for dmenu, `dunstctl close`, `dunstctl action`);
/// the exact D-Bus arguments are checked against a recording stand-in server.
@Suite(.serialized, .ownThread) struct DesktopPresenterEndToEndTests {
    static let clients = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Clients")

    /// A private desktop (Tests/Clients/desktop_session.sh) with `herald device` on it.
    final class Session {
        let directory = URL(fileURLWithPath: "/tmp/hd-\(UUID().uuidString.prefix(8))")
        let child: Child
        let environment: [String: String]
        let devicePID: Int32
        var state: URL { directory.appendingPathComponent("device") }

        /// `server`: a command that stands in for dunst; `extra`: more `herald device` options.
        init(server: String? = nil, extra: [String] = []) throws {
            child = try Child(
                URL(fileURLWithPath: "/bin/sh"),
                [
                    DesktopPresenterEndToEndTests.clients.appendingPathComponent("desktop_session.sh").path,
                    try heraldExecutable().path, directory.appendingPathComponent("desktop").path, "--state",
                    directory.appendingPathComponent("device").path, "--api-port", "0",
                ] + extra, environment: server.map { ["SERVER": $0] } ?? [:])
            let started = child.waitForLine(containing: "apiURL:")
            let log = try? String(
                contentsOf: directory.appendingPathComponent("desktop/session.log"), encoding: .utf8)
            func value(_ key: String) throws -> String {
                let line = try #require(started.first { $0.hasPrefix(key + " ") }, "\(key) in \(started): \(log ?? "")")
                return String(line.dropFirst(key.count + 1))
            }
            environment = ["DISPLAY": try value("display"), "DBUS_SESSION_BUS_ADDRESS": try value("bus")]
            devicePID = try #require(Int32(try value("device-pid")))
        }

        func dunstctl(_ arguments: [String]) throws -> String {
            let result = try run("/usr/bin/env", environment.map { "\($0.key)=\($0.value)" } + ["dunstctl"] + arguments)
            #expect(result.status == 0, "dunstctl \(arguments): \(result.stderr)")
            return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        func herald(_ arguments: [String]) throws {
            let result = try run(try heraldExecutable().path, arguments + ["--device-state", state.path])
            #expect(result.status == 0, "herald \(arguments): \(result.stderr)")
        }

        /// Stops the device (SIGTERM) and returns the session's exit status.
        func stop() -> Int32 {
            // Only while the session runs (it ends when the device does): once the device has been
            // reaped, its id may be another process's.
            if child.process.isRunning { kill(devicePID, SIGTERM) }
            return child.finish().status
        }

        deinit {
            if child.process.isRunning { kill(devicePID, SIGKILL) }
            try? FileManager.default.removeItem(at: directory)
        }
    }

    @Test func actionsAndAClickReachTheAppAndClosingIsADismissWhenTheCategoryAsks() throws {
        let desktop = try Session()
        let directory = desktop.directory
        let session = desktop.child
        let herald = desktop.herald
        let dunstctl = desktop.dunstctl

        // The app: launched by the device when the user answers, it prints what it is told and exits.
        let app = directory.appendingPathComponent("tea.sh")
        try writeExecutableScript(
            "#!/bin/sh\nexec '\(try heraldExecutable().path)' app \"$HERALD_BUNDLE_ID\" listen --count 1\n", to: app)
        try herald(["device", "install", "dev.herald.tea", "--executable", app.path])
        try herald(["app", "dev.herald.tea", "authorize", "--options", "alert,sound,badge"])
        try herald([
            "app", "dev.herald.tea", "categories", "--category", "TEA+customDismiss=accept,decline+destructive",
        ])

        // Shown by dunst, with the default action and the category's two actions; a screenshot.
        try herald([
            "app", "dev.herald.tea", "add", "--id", "tea", "--title", "Tea", "--body", "Ready", "--category-id", "TEA",
        ])
        try eventually("the notification on the desktop") { try dunstctl(["count", "displayed"]) == "1" }
        let shot = directory.appendingPathComponent("screen.xwd")
        let dump = try run(
            "/bin/sh", ["-c", "DISPLAY=\(desktop.environment["DISPLAY"]!) xwd -root -silent > '\(shot.path)'"])
        #expect(dump.status == 0, "\(dump.stderr)")
        let png =
            ProcessInfo.processInfo.environment["HERALD_SCREENSHOTS"].map {
                URL(fileURLWithPath: $0).appendingPathComponent("desktop-notification.png")
            } ?? directory.appendingPathComponent("desktop-notification.png")
        let converted = try run(
            "/usr/bin/python3",
            [Self.clients.appendingPathComponent("xwd_to_png.py").path, shot.path, png.path, "800", "140"])
        #expect(converted.status == 0, "\(converted.stderr)")
        #expect(try Data(contentsOf: png).prefix(4) == Data([0x89, 0x50, 0x4E, 0x47]))

        // The user picks Accept in dunst's menu: the app is launched and told, and the notification goes.
        try Data("Accept".utf8).write(to: directory.appendingPathComponent("desktop/pick"))
        _ = try dunstctl(["context"])
        let accepted = session.reader.lines(containing: ["(action accept)"])
        #expect(accepted.contains { $0.contains("[dev.herald.tea] response accept") }, "\(accepted)")
        #expect(accepted.last?.hasPrefix("didReceive tea: Tea Ready") == true, "\(accepted)")
        let menu = try String(contentsOf: directory.appendingPathComponent("desktop/menu.txt"), encoding: .utf8)
        #expect(
            menu.contains("#Accept (Tea)") && menu.contains("#Decline (Tea)") && menu.contains("#Open (Tea)"), "\(menu)"
        )
        try eventually("the answered notification closed") { try dunstctl(["count", "displayed"]) == "0" }

        // Closed by the user: a dismiss, which this category reports to the app.
        try herald([
            "app", "dev.herald.tea", "add", "--id", "two", "--title", "Two", "--body", "Later", "--category-id", "TEA",
        ])
        try eventually("the second on the desktop") { try dunstctl(["count", "displayed"]) == "1" }
        _ = try dunstctl(["close"])
        let dismissed = session.reader.lines(containing: ["didReceive two"])
        #expect(
            dismissed.last?.contains("(action com.apple.UNNotificationDismissActionIdentifier)") == true, "\(dismissed)"
        )

        // A click on it: the default action opens the app.
        try herald(["app", "dev.herald.tea", "add", "--id", "three", "--title", "Three", "--body", "Now"])
        try eventually("the third on the desktop") { try dunstctl(["count", "displayed"]) == "1" }
        _ = try dunstctl(["action", "0"])
        let opened = session.reader.lines(containing: ["didReceive three"])
        #expect(
            opened.last?.contains("(action com.apple.UNNotificationDefaultActionIdentifier)") == true, "\(opened)")
        try eventually("the third closed") { try dunstctl(["count", "displayed"]) == "0" }

        // The device locked: a click needs the passcode, which the desktop cannot take. Nothing runs,
        // and a notification of its own says why.
        try herald(["device", "lock"])
        try herald(["app", "dev.herald.tea", "add", "--id", "four", "--title", "Four", "--body", "Locked"])
        try eventually("the fourth on the desktop") { try dunstctl(["count", "displayed"]) == "1" }
        _ = try dunstctl(["action", "0"])
        let log = directory.appendingPathComponent("desktop/device.log")
        try eventually("the refusal") {
            ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("a desktop response needs the passcode")
        }
        // The clicked one is closed; the one on screen now is the refusal.
        try eventually("the refusal on the desktop") { try dunstctl(["count", "displayed"]) == "1" }
        let delivered = try run(
            try heraldExecutable().path, ["app", "dev.herald.tea", "delivered", "--device-state", desktop.state.path])
        #expect(delivered.stdout.contains("four"), "the refused answer left it in the list: \(delivered.stdout)")

        #expect(desktop.stop() == 0)
    }

    /// What goes over D-Bus, as a stand-in server records it (Tests/Clients/fake_notifications.py):
    /// one without the `actions` capability, so the presenter also degrades.
    @Test func whatIsSentWithoutTheActionsCapabilityAReplacementAndARemoval() throws {
        let record = URL(fileURLWithPath: "/tmp/hd-record-\(UUID().uuidString.prefix(8)).jsonl")
        defer { try? FileManager.default.removeItem(at: record) }
        let server =
            "/usr/bin/python3 '\(Self.clients.appendingPathComponent("fake_notifications.py").path)' "
            + "'\(record.path)' body,body-markup"
        let desktop = try Session(server: server)
        func calls() -> [[String: Any]] {
            ((try? String(contentsOf: record, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }
        // The app's bundle has an icon.
        let bundle = desktop.directory.appendingPathComponent("Tea.bundle")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        let icon = bundle.appendingPathComponent("AppIcon.png")
        try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]).write(to: icon)
        try desktop.herald(["device", "install", "dev.herald.tea", "--bundle-dir", bundle.path])
        try desktop.herald(["app", "dev.herald.tea", "authorize", "--options", "alert,sound,badge"])
        try desktop.herald(["app", "dev.herald.tea", "categories", "--category", "TEA=accept,decline"])
        try desktop.herald([
            "app", "dev.herald.tea", "add", "--id", "tea", "--title", "Tea", "--body", "Ready", "--category-id", "TEA",
            "--sound", "default",
        ])
        try eventually("the first Notify") { calls().count == 1 }
        let first = calls()[0]
        #expect(first["app"] as? String == "Tea" && first["summary"] as? String == "Tea")
        #expect(first["icon"] as? String == icon.path, "\(first)")
        #expect(first["body"] as? String == "Ready" && first["replaces_id"] as? Int == 0)
        // No actions capability: no buttons at all, and the log says why.
        #expect(first["actions"] as? [String] == [], "\(first)")
        let hints = first["hints"] as? [String: Any] ?? [:]
        #expect(hints["urgency"] as? Int == 1 && hints["sound-name"] as? String == "message-new-instant", "\(hints)")
        let log = try String(
            contentsOf: desktop.directory.appendingPathComponent("desktop/device.log"), encoding: .utf8)
        #expect(log.contains("the notification server shows no actions"), "\(log)")

        // The same request again replaces the one on screen; silent now, it says so.
        try desktop.herald([
            "app", "dev.herald.tea", "add", "--id", "tea", "--title", "Tea", "--body", "Steeped", "--category-id",
            "TEA",
        ])
        try eventually("the replacing Notify") { calls().count == 2 }
        let second = calls()[1]
        #expect(second["replaces_id"] as? Int == first["id"] as? Int && second["body"] as? String == "Steeped")
        #expect((second["hints"] as? [String: Any])?["suppress-sound"] as? Bool == true, "\(second)")

        // The app removes it: the presenter closes it on the desktop.
        try desktop.herald(["app", "dev.herald.tea", "remove-delivered", "tea"])
        try eventually("CloseNotification") { calls().count == 3 }
        #expect(calls()[2]["call"] as? String == "CloseNotification" && calls()[2]["id"] as? Int == first["id"] as? Int)

        // A Live Activity: one resident, silent notification, replaced as it changes, closed when it
        // leaves the screen.
        func herald(_ arguments: [String]) throws -> String {
            let result = try run(try heraldExecutable().path, arguments + ["--device-state", desktop.state.path])
            #expect(result.status == 0, "herald \(arguments): \(result.stderr)")
            return result.stdout
        }
        let started = try herald([
            "app", "dev.herald.tea", "activity-start", "--attributes-type", "Brew", "--attributes", #"{"pot":"green"}"#,
            "--content-state", #"{"left":3}"#, "--push-type", "none",
        ])
        let id = String(started.split(separator: " ").first ?? "")
        try eventually("the activity's Notify") { calls().count == 4 }
        let activity = calls()[3]
        #expect(activity["summary"] as? String == "pot green" && activity["body"] as? String == "left 3", "\(activity)")
        #expect(activity["timeout"] as? Int == 0 && activity["replaces_id"] as? Int == 0)
        let activityHints = activity["hints"] as? [String: Any] ?? [:]
        #expect(activityHints["resident"] as? Bool == true && activityHints["urgency"] as? Int == 0, "\(activityHints)")
        _ = try herald(["app", "dev.herald.tea", "activity-update", id, "--content-state", #"{"left":1}"#])
        try eventually("the activity replaced") { calls().count == 5 }
        #expect(
            calls()[4]["replaces_id"] as? Int == activity["id"] as? Int && calls()[4]["body"] as? String == "left 1")
        // An update with an alert: the activity replaced, and the alert a notification of its own.
        _ = try herald([
            "app", "dev.herald.tea", "activity-update", id, "--content-state", #"{"left":0}"#, "--title", "Brewed",
            "--body", "Pour now", "--sound", "default",
        ])
        try eventually("the alert") { calls().count == 7 }
        let alert = try #require(calls().first { $0["summary"] as? String == "Brewed" })
        #expect(alert["body"] as? String == "Pour now" && alert["replaces_id"] as? Int == 0, "\(alert)")
        #expect((alert["hints"] as? [String: Any])?["sound-name"] as? String == "message-new-instant")
        _ = try herald(["app", "dev.herald.tea", "activity-end", id, "--dismissal", "immediate"])
        try eventually("the activity closed") { calls().count == 8 }
        #expect(
            calls()[7]["call"] as? String == "CloseNotification" && calls()[7]["id"] as? Int == activity["id"] as? Int)
        #expect(desktop.stop() == 0)
    }

    /// What iOS shows no banner for is not put on the desktop; time-sensitive ones say so; a summary is
    /// one quiet notification (as the stand-in server records them).
    @Test func levelsFocusAndASummaryOnTheDesktop() throws {
        let record = URL(fileURLWithPath: "/tmp/hd-record-\(UUID().uuidString.prefix(8)).jsonl")
        defer { try? FileManager.default.removeItem(at: record) }
        let server =
            "/usr/bin/python3 '\(Self.clients.appendingPathComponent("fake_notifications.py").path)' "
            + "'\(record.path)' body,actions"
        let desktop = try Session(
            server: server,
            extra: ["--manual-clock", "--start-time", "2026-11-26T10:00:00+01:00", "--time-zone", "Europe/Paris"])
        func notified() -> [[String: Any]] {
            ((try? String(contentsOf: record, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.filter { $0["call"] as? String == "Notify" }
        }
        let tea = "dev.herald.tea"
        try desktop.herald(["device", "install", tea])
        try desktop.herald(["app", tea, "authorize", "--options", "alert,sound,badge"])
        func add(_ id: String, _ extra: [String]) throws {
            try desktop.herald(["app", tea, "add", "--id", id] + extra)
            _ = desktop.child.waitForLine(containing: "[\(tea)]")
        }
        // No banner on iOS, none on the desktop: a badge only, a passive one, one silenced by a Focus.
        try add("badge", ["--set-badge", "3"])
        try add("passive", ["--title", "Passive", "--level", "passive"])
        try desktop.herald(["device", "focus", "on", "do-not-disturb"])
        try add("hushed", ["--title", "Hushed", "--sound", "default"])
        // A time-sensitive one breaks through, labelled.
        try add("urgent", ["--title", "Urgent", "--level", "time-sensitive", "--sound", "default"])
        try eventually("the time-sensitive Notify") { notified().count == 1 }
        let urgent = notified()[0]
        #expect(
            urgent["app"] as? String == "Tea · Time Sensitive" && urgent["summary"] as? String == "Urgent", "\(urgent)")
        #expect((urgent["hints"] as? [String: Any])?["category"] as? String == "x-herald.time-sensitive")
        try desktop.herald(["device", "focus", "off"])
        // Scheduled Summary: held, then one quiet notification at 10:30 (Paris).
        try desktop.herald(["device", "summary", "--on", "--times", "10:30", "--apps", tea])
        try add("s1", ["--title", "Sale", "--body", "Shoes", "--relevance-score", "0.2"])
        try add("s2", ["--title", "Order", "--body", "Shipped", "--relevance-score", "0.8"])
        #expect(notified().count == 1, "held ones are not shown")
        try desktop.herald(["device", "clock", "--advance", "30m"])
        try eventually("the summary's Notify") { notified().count == 2 }
        let summary = notified()[1]
        #expect(
            summary["app"] as? String == "Scheduled Summary" && summary["summary"] as? String == "Your Morning Summary")
        #expect(summary["body"] as? String == "Tea: Order — Shipped\nTea: Sale — Shoes", "\(summary)")
        #expect((summary["hints"] as? [String: Any])?["suppress-sound"] as? Bool == true)
        #expect(desktop.stop() == 0)
    }
}
