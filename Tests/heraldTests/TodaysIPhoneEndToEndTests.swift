import Foundation
import Testing

/// Today's iPhone from the terminal: a real `herald gateway`, a real `herald device` on a manual clock,
/// pushes sent with curl, and the `herald` commands a person types. What the device prints is what it
/// decided: nothing listed without text, interruption levels, Focus, Scheduled Summary, provisional
/// delivery, grouping and the passcode on a locked device.
@Suite(.serialized, .ownThread) struct TodaysIPhoneEndToEndTests {
    /// A gateway, and a device (manual clock, Paris) linked to it with the demo app installed and
    /// authorized; `token` is the app's device token.
    struct Bench {
        let p: Provisioned
        let device: DeviceProcess
        let token: String
        let app = Provisioned.topic

        init(start: String = "2026-11-26T10:00:00+01:00") throws {
            let p = try Provisioned()
            let device = try DeviceProcess(
                start: start, extra: ["--gateway", p.gateway.info.linkDevelopmentURL])
            try device.herald(["device", "install", Provisioned.topic, "--aps-environment", "development"])
            try device.herald(["app", Provisioned.topic, "authorize", "--options", "alert,sound,badge"])
            var token = ""
            try eventually("a token for \(Provisioned.topic)") {
                token = try device.app(Provisioned.topic)["token"] as? String ?? ""
                return token.count == 64
            }
            self.p = p
            self.device = device
            self.token = token
        }

        /// Sends a push with curl and waits for the line the device prints for it.
        @discardableResult
        func push(_ body: String, shows text: String, sourceLocation: SourceLocation = #_sourceLocation) throws
            -> String
        {
            let answer = try p.push(token: token, body: body)
            #expect(answer.status == 200, "\(answer)", sourceLocation: sourceLocation)
            return device.daemon.waitForLine(containing: text).last ?? ""
        }

        func center() throws -> [String: Any] { try device.get("/center") as? [String: Any] ?? [:] }
    }

    @Test func whatIsShownHeardAndHeldBack() throws {
        let b = try Bench()
        let app = b.app
        // Item 1: a badge-only or sound-only push is not a notification; the terminal says what happened.
        #expect(try b.push(#"{"aps":{"badge":5}}"#, shows: "] badge 5") == "[\(app)] badge 5")
        #expect(try b.push(#"{"aps":{"sound":"default"}}"#, shows: "] sound default") == "[\(app)] sound default")
        #expect(try b.push(#"{"foo":1}"#, shows: "nothing to show") == "· [\(app)] nothing to show, play or count")
        #expect(try b.device.delivered(app).isEmpty)
        #expect(try b.device.herald(["app", app, "badge"]).contains("badge 5"))

        // Item 2: passive is listed only; time-sensitive is labelled.
        #expect(
            try b.push(#"{"aps":{"alert":"quiet","sound":"default","interruption-level":"passive"}}"#, shows: "quiet")
                == "[\(app)] quiet (passive, sound none)")

        // Item 3: Focus from the shell; a push silenced; a time-sensitive one breaks through.
        #expect(try b.device.herald(["device", "focus", "on", "do-not-disturb"]).contains("Focus: Do Not Disturb on"))
        #expect(b.device.daemon.waitForLine(containing: "Focus Do Not Disturb on").isEmpty == false)
        #expect(
            try b.push(#"{"aps":{"alert":"hush","sound":"default"}}"#, shows: "hush")
                == "[\(app)] hush (silenced by Do Not Disturb, sound none)")
        #expect(
            try b.push(
                #"{"aps":{"alert":"now","sound":"default","interruption-level":"time-sensitive"}}"#, shows: "now")
                == "[\(app)] now (time sensitive, sound default)")
        let center = try b.device.herald(["device", "center"])
        #expect(
            center.contains("Focus: Do Not Disturb on") && center.contains("hush (silenced by Do Not Disturb)"),
            "\(center)")
        #expect(try b.device.herald(["device", "focus", "off"]).contains("Focus: off"))

        // Item 4: Scheduled Summary at 10:30; held, then delivered when the clock gets there.
        #expect(
            try b.device.herald(["device", "summary", "--on", "--times", "10:30,18:00", "--apps", app])
                .contains("Scheduled Summary: on at 10:30, 18:00; apps: \(app)"))
        let held = try b.push(#"{"aps":{"alert":"later","relevance-score":0.3}}"#, shows: "held for")
        #expect(held == "· [\(app)] held for the Scheduled Summary at 2026-11-26 10:30: later", "\(held)")
        _ = try b.push(#"{"aps":{"alert":"first","relevance-score":0.9}}"#, shows: "held for")
        #expect(try b.device.herald(["device", "summary"]).contains("2 waiting"))
        try b.device.herald(["device", "clock", "--advance", "30m"])
        let summary = b.device.daemon.waitForLine(containing: "Summary:")
        #expect(summary.last == "· [device] Your Morning Summary: 2 notifications from Demo", "\(summary)")
        let summaries = try b.center()["summaries"] as? [[String: Any]] ?? []
        let items = (summaries.first?["notifications"] as? [[String: Any]] ?? []).compactMap { $0["body"] as? String }
        #expect(items == ["first", "later"], "\(summaries)")
        try b.device.herald(["device", "summary", "--off"])
    }

    @Test func provisionalGroupingThePasscodeAndTheLegacyCalls() throws {
        let b = try Bench()
        let d = b.device
        // Item 5: provisional from the shell.
        try d.herald(["device", "install", "com.example.quiet"])
        #expect(
            try d.herald(["app", "com.example.quiet", "authorize", "--options", "provisional,alert,sound"]).contains(
                "granted"))
        try d.herald([
            "app", "com.example.quiet", "add", "--id", "q1", "--title", "Psst", "--body", "quietly", "--sound",
            "default",
        ])
        #expect(
            d.daemon.waitForLine(containing: "Psst").last
                == "[com.example.quiet] Psst — quietly (delivered quietly, sound none)")
        #expect(try d.herald(["device", "center"]).contains("delivered quietly: keep or turn off"))
        #expect(try d.herald(["device", "provisional", "com.example.quiet", "prominently"]).contains("authorized"))
        #expect(try d.herald(["app", "com.example.quiet", "settings"]).contains("authorization authorized"))
        try d.herald(["app", "com.example.quiet", "add", "--id", "q2", "--title", "Loud", "--sound", "default"])
        #expect(d.daemon.waitForLine(containing: "Loud").last == "[com.example.quiet] Loud (sound default)")
        let refused = try run(
            try heraldExecutable().path, ["device", "provisional", "com.example.quiet", "off"] + d.location)
        #expect(refused.status != 0 && refused.stderr.contains("not provisional"), "\(refused)")

        // Item 6: stacks with summary-arg, from the device API and the shell.
        for (k, body) in [
            #"{"body":"1","summary-arg":"Anna"}"#, #"{"body":"2","summary-arg":"Anna","summary-arg-count":2}"#,
            #"{"body":"3"}"#,
        ].enumerated() {
            try b.push(#"{"aps":{"thread-id":"anna","alert":\#(body)}}"#, shows: "] \(k + 1) (")
        }
        let stacks = try b.center()["stacks"] as? [[String: Any]] ?? []
        let anna = try #require(stacks.first { $0["thread"] as? String == "anna" })
        #expect(anna["count"] as? Int == 3 && anna["line"] as? String == "and 3 more from Anna", "\(anna)")
        #expect(try d.herald(["device", "center"]).contains("Demo · anna (3) — and 3 more from Anna\n  [Demo] "))

        // Item 7: the passcode on a locked device, from the shell; target-content-id reaches the app.
        try d.herald([
            "app", b.app, "categories", "--category", "MAIL=trash+destructive+auth,reply+foreground,archive",
        ])
        try b.push(#"{"aps":{"alert":"mail","category":"MAIL","target-content-id":"inbox-7"}}"#, shows: "] mail (")
        let id = try #require(d.delivered(b.app).first?["identifier"] as? String)
        #expect(try d.herald(["device", "lock"]) == "locked\n")
        for action in ["trash", "reply", "default"] {
            let result = try run(try heraldExecutable().path, ["respond", b.app, id, "--action", action] + d.location)
            #expect(result.status != 0 && result.stderr.contains("needs the passcode"), "\(action): \(result.stderr)")
        }
        let wrong = try run(
            try heraldExecutable().path, ["respond", b.app, id, "--action", "trash", "--passcode", "1234"] + d.location)
        #expect(wrong.status != 0 && wrong.stderr.contains("wrong passcode"), "\(wrong.stderr)")
        let listen = try Child(
            try heraldExecutable(), ["app", b.app, "listen", "--count", "1"] + d.location)
        #expect(listen.waitForLine(containing: "listening as").isEmpty == false)
        try d.herald(["respond", b.app, id, "--action", "trash", "--passcode", "0000"])
        let told = listen.finish().lines
        #expect(told.contains { $0.contains("(action trash, target inbox-7)") }, "\(told)")
        #expect((try d.get("/screen") as? [String: Any])?["locked"] as? Bool == true, "the passcode does not unlock")

        // The legacy calls: a past fire date delivers at once; cancelling takes it off the screen.
        try d.herald([
            "app", b.app, "schedule-legacy", "--id", "tea", "--body", "Tea is ready", "--fire-date",
            "2026-11-26T09:00:00+01:00", "--alert-action", "Show me",
        ])
        #expect(d.daemon.waitForLine(containing: "Tea is ready").last?.hasPrefix("[\(b.app)] Tea is ready") == true)
        let screen = try d.get("/screen") as? [String: Any] ?? [:]
        let tea = (screen["notifications"] as? [[String: Any]] ?? []).first { $0["identifier"] as? String == "tea" }
        #expect(tea?["alertAction"] as? String == "slide to show me" && tea?["actionTitle"] as? String == "Show me")
        try d.herald(["app", b.app, "cancel-legacy", "tea"])
        #expect(d.daemon.waitForLine(containing: "removed from the screen: tea").isEmpty == false)
        #expect(try d.delivered(b.app).allSatisfy { $0["identifier"] as? String != "tea" })
    }

    /// A reinstalled app gets a new device token (today's iOS; Herald's choice where Apple's documents
    /// say nothing): the old one keeps answering 410, the new one is delivered to.
    @Test func aReinstalledAppGetsANewToken() throws {
        let b = try Bench()
        let d = b.device
        try d.herald(["device", "remove", b.app])
        #expect(try b.p.push(token: b.token).status == 410)
        try d.herald(["device", "install", b.app, "--aps-environment", "development"])
        try d.herald(["app", b.app, "authorize", "--options", "alert"])
        var fresh = ""
        try eventually("a new token") {
            fresh = try d.app(b.app)["token"] as? String ?? ""
            return fresh.count == 64
        }
        #expect(fresh != b.token)
        let old = try b.p.push(token: b.token)
        #expect(old.status == 410 && old.reason == "Unregistered", "\(old)")
        #expect(try b.p.push(token: fresh, body: #"{"aps":{"alert":"welcome back"}}"#).status == 200)
        #expect(d.daemon.waitForLine(containing: "welcome back").last == "[\(b.app)] welcome back (sound none)")
        // The same install registering again (a restart, a reconnect) keeps its token.
        #expect(d.stop() == 0)
        let again = try DeviceProcess(
            start: "2026-11-26T10:00:00+01:00", state: d.state,
            extra: ["--gateway", b.p.gateway.info.linkDevelopmentURL])
        try eventually("registered again") {
            (try again.get("/status") as? [String: Any])?["gateway"] as? String == "connected"
        }
        #expect(try again.app(b.app)["token"] as? String == fresh)
        #expect(try b.p.push(token: fresh, body: #"{"aps":{"alert":"still"}}"#).status == 200)
    }
}
