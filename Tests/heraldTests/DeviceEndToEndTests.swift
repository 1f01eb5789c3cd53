import Foundation
import HeraldTesting
import Testing

/// `herald device` against a real `herald gateway`: the link survives a gateway restart and a device
/// restart; the device clock's API refuses what it cannot do.
@Suite(.serialized, .ownThread) struct DeviceEndToEndTests {
    @Test func theDeviceReconnectsAfterAGatewayRestartAndGetsWhatWasStoredWhileItWasDown() throws {
        // The gateway comes back on the same link port: one outside the ephemeral range, which no
        // outgoing connection can take while the gateway is down.
        let linkPort = try portOutsideTheEphemeralRange()
        let p = try Provisioned(arguments: ["--link-port", "\(linkPort)"])
        let link = p.gateway.info.linkDevelopmentURL
        let device = try DeviceProcess(extra: ["--gateway", link])
        let app = Provisioned.topic
        try device.herald(["device", "install", app, "--aps-environment", "development"])
        try device.herald(["app", app, "authorize", "--options", "alert"])
        var token = ""
        try eventually("a token for \(app)") {
            token = try device.app(app)["token"] as? String ?? ""
            return token.count == 64
        }
        #expect(try p.push(token: token, body: #"{"aps":{"alert":"first"}}"#).status == 200)
        #expect(device.daemon.waitForLine(containing: "first").last == "[\(app)] first (sound none)")

        // The gateway stops; the device notices and keeps trying with backoff until it is back on the
        // same port.
        #expect(p.gateway.stop() == 0)
        // Its log says why it stopped.
        #expect(p.gateway.log.contains("received SIGTERM; stopping gracefully"), "\(p.gateway.log)")
        try eventually("the device sees the gateway gone") {
            (try device.get("/status") as? [String: Any])?["gateway"] as? String == "disconnected"
        }
        let restarted = try Provisioned(
            arguments: ["--link-port", "\(linkPort)"], state: p.gateway.state, existing: p)
        try eventually("the device reconnects") {
            (try device.get("/status") as? [String: Any])?["gateway"] as? String == "connected"
        }
        #expect(try device.app(app)["token"] as? String == token)
        #expect(try restarted.push(token: token, body: #"{"aps":{"alert":"second"}}"#).status == 200)
        #expect(device.daemon.waitForLine(containing: "second").last == "[\(app)] second (sound none)")

        // The device stops; a push is stored, and the restarted device gets it once.
        #expect(device.stop() == 0)
        #expect(device.daemon.errors.contains("received SIGTERM; stopping gracefully"), "\(device.daemon.errors)")
        #expect(try restarted.push(token: token, body: #"{"aps":{"alert":"stored"}}"#).status == 200)
        let again = try DeviceProcess(state: device.state, extra: ["--gateway", link])
        #expect(again.daemon.waitForLine(containing: "stored").last == "[\(app)] stored (sound none)")
        let delivered = try again.delivered(app).compactMap { $0["body"] as? String }
        #expect(delivered == ["stored", "second", "first"])
    }

    @Test func aPushTheDeviceCannotReadIsRefusedVisiblyEverywhere() throws {
        let p = try Provisioned()
        let device = try DeviceProcess(extra: ["--gateway", p.gateway.info.linkDevelopmentURL])
        let app = Provisioned.topic
        try device.herald(["device", "install", app, "--aps-environment", "development"])
        try device.herald(["app", app, "authorize", "--options", "alert", "badge"])
        var token = ""
        try eventually("a token for \(app)") {
            token = try device.app(app)["token"] as? String ?? ""
            return token.count == 64
        }
        // The gateway takes what APNs takes (a JSON object); the device cannot use these.
        for (body, key) in [(#"{"aps":"hi"}"#, "aps:"), (#"{"aps":{"alert":"x","badge":"two"}}"#, "aps.badge:")] {
            let id = UUID().uuidString.lowercased()
            let answer = try p.push(token: token, body: body, headers: ["apns-id: \(id)", "apns-push-type: alert"])
            #expect(answer.status == 200, "\(body): \(answer)")
            // The terminal presenter shows the refusal, naming the key.
            let shown = device.daemon.waitForLine(containing: "refused push \(id)")
            #expect(shown.last?.hasPrefix("· [\(app)] refused push \(id): \(key)") == true, "\(shown)")
            // `herald device log` has it.
            #expect(try device.herald(["device", "log"]).contains("refused push \(id): \(key)"))
            // The gateway's delivery log: a warning (the gateway saw it coming: nothing to show, a badge
            // in words), delivered, acknowledged, then refused by the device with the reason.
            var kinds: [String] = []
            var detail = ""
            var state = ""
            try eventually("the refusal in the delivery log") {
                let log = try p.gateway.adminCall("GET", "/deliveries/\(id)")
                let events = (try? JSONSerialization.jsonObject(with: Data(log.body.utf8))) as? [[String: Any]] ?? []
                kinds = events.compactMap { $0["kind"] as? String }
                detail = events.last?["detail"] as? String ?? ""
                state = events.last?["state"] as? String ?? ""
                return kinds.last == "refused"
            }
            #expect(kinds == ["accepted", "warning", "delivered", "acknowledged", "refused"], "\(kinds)")
            #expect(detail.contains(key), "\(detail)")
            #expect(state == "discarded-disabled", "Apple's state for what the device would not present")
            // The history shows it as one push (by its apns-unique-id), its latest step the refusal.
            let history =
                (try? JSONSerialization.jsonObject(with: Data(p.gateway.adminCall("GET", "/deliveries").body.utf8)))
                as? [[String: Any]] ?? []
            let entries = history.filter { $0["apnsID"] as? String == id }
            #expect(entries.count == 1 && entries.first?["status"] as? String == "refused", "\(entries)")
            #expect(entries.first?["uniqueID"] is String, "a push with an apns-unique-id: \(entries)")
        }
        // An app the device does not have, registered for it by the admin API: refused as not installed,
        // which is Apple's "Discarded - Token Unregistered".
        let absent = "com.example.absent"
        #expect(
            try p.gateway.adminCall("POST", "/apps", #"{"bundleID":"\#(absent)","teamID":"\#(Provisioned.team)"}"#)
                .status == 201)
        let devices =
            (try? JSONSerialization.jsonObject(with: Data(p.gateway.adminCall("GET", "/devices").body.utf8)))
            as? [[String: Any]] ?? []
        let daemonID = try #require(devices.first { $0["online"] as? Bool == true }?["id"] as? String)
        let absentToken =
            try p.gateway.adminCall("POST", "/devices/\(daemonID)/apps", #"{"bundleID":"\#(absent)"}"#)
            .json?["token"] as? String ?? ""
        let absentID = UUID().uuidString.lowercased()
        #expect(
            try p.push(token: absentToken, topic: absent, headers: ["apns-id: \(absentID)"]).status == 200)
        var absentState: String?
        try eventually("the not-installed refusal in the delivery log") {
            let log = try p.gateway.adminCall("GET", "/deliveries/\(absentID)")
            let events = (try? JSONSerialization.jsonObject(with: Data(log.body.utf8))) as? [[String: Any]] ?? []
            absentState = events.last { $0["kind"] as? String == "refused" }?["state"] as? String
            // The refusal is written at once, the delivered push's lines (and their count) up to 100 ms
            // later: the counts below are read once both are in.
            return absentState != nil && events.contains { $0["kind"] as? String == "acknowledged" }
        }
        #expect(absentState == "discarded-token-unregistered")
        let counts = try deliveryCounts(p.gateway)
        #expect(counts["\(app) discarded-disabled"] == 2 && counts["\(absent) received"] == 1, "\(counts)")
        #expect(counts["\(absent) discarded-token-unregistered"] == 1, "\(counts)")
        #expect(try device.delivered(app).isEmpty)

        // A body that is no JSON object is answered PayloadEmpty, and the gateway's log says why.
        let broken = try p.push(
            token: token, body: #"{"aps":{"alert":"x"}"#, headers: ["apns-id: \(UUID().uuidString)"])
        #expect(broken.status == 400 && broken.reason == "PayloadEmpty")
        try eventually("the reason in the gateway's log") {
            p.gateway.log.contains("provider request refused")
                && p.gateway.log.contains("the body is not a JSON object")
        }

        // A push the device cannot read, stored while it is away: refused from storage when it is back.
        #expect(device.stop() == 0)
        let storedID = UUID().uuidString.lowercased()
        let stored = try p.push(
            token: token, body: #"{"aps":{"alert":"x","badge":"three"}}"#,
            headers: ["apns-id: \(storedID)", "apns-push-type: alert"])
        #expect(stored.status == 200)
        let again = try DeviceProcess(state: device.state, extra: ["--gateway", p.gateway.info.linkDevelopmentURL])
        var storedState: String?
        try eventually("the refusal from storage in the delivery log") {
            let log = try p.gateway.adminCall("GET", "/deliveries/\(storedID)")
            let events = (try? JSONSerialization.jsonObject(with: Data(log.body.utf8))) as? [[String: Any]] ?? []
            storedState = events.last { $0["kind"] as? String == "refused" }?["state"] as? String
            return storedState != nil
        }
        #expect(storedState == "discarded-disabled-from-storage")
        #expect(again.stop() == 0)
    }

    @Test func theDeviceAPITellsWhatAConnectionSpeaksFromItsFirstBytes() throws {
        let device = try DeviceProcess()
        let port = URL.port(device.apiURL)
        let hello = try RawSocket(port: port)
        hello.send("HELLO THERE\r\n")
        let answer = hello.readUntilClosed()
        #expect(answer.closed && answer.text.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(answer)")
        let h2 = try RawSocket(port: port)
        h2.send("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        let refused = h2.readUntilClosed()
        #expect(refused.closed && refused.text.isEmpty && refused.after < 5, "\(refused)")
        // A real request still works, and the daemon is fine.
        #expect(try curl([device.apiURL + "/status"]).status == 200)
        #expect(device.stop() == 0)
    }

    @Test func aSecondDeviceOnTheSameStateIsRefusedAndTheFirstKeepsItsAppLink() throws {
        let device = try DeviceProcess()
        let socket = device.state.appendingPathComponent("app.sock").path
        let inode = try FileManager.default.attributesOfItem(atPath: socket)[.systemFileNumber] as? Int
        let second = try run(
            try heraldExecutable().path, ["device", "--state", device.state.path, "--api-port", "0", "--manual-clock"])
        #expect(second.status != 0)
        let pid = device.daemon.process.processIdentifier
        #expect(
            second.stderr.contains("the state directory \(device.state.path) is in use by herald device, pid \(pid)"),
            "\(second.stderr)")
        // The socket is the same file, and apps still reach the running device through it.
        #expect(try FileManager.default.attributesOfItem(atPath: socket)[.systemFileNumber] as? Int == inode)
        try device.herald(["device", "install", "dev.herald.lock"])
        try device.herald(["app", "dev.herald.lock", "authorize", "--options", "alert"])
        try device.herald(["app", "dev.herald.lock", "add", "--id", "a", "--title", "A", "--in", "600"])
        #expect(try device.pending("dev.herald.lock").map(\.id) == ["a"])
        #expect(device.stop() == 0)
    }

    @Test func aRestartKeepsPendingNotificationsAndFiresTheMissedOneOnceMarkedLate() throws {
        let app = "dev.herald.restart"
        let first = try DeviceProcess(start: "2026-11-23T08:00:00+01:00")
        try first.herald(["device", "install", app])
        try first.herald(["app", app, "authorize", "--options", "alert"])
        try first.herald(["app", app, "add", "--id", "tea", "--title", "Tea", "--in", "600"])
        try first.herald(["app", app, "add", "--id", "news", "--title", "News", "--calendar", "hour=20", "--repeats"])
        #expect(first.stop() == 0)

        // Back an hour later: the missed one fires once, marked late; the repeating one waits for 20:00.
        let second = try DeviceProcess(start: "2026-11-23T09:00:00+01:00", state: first.state)
        // It fires on starting, before the ready banner.
        #expect(second.startup.contains("[\(app)] Tea (sound none, late)"), "\(second.startup)")
        #expect(try second.pending(app).map(\.id) == ["news"])
        #expect(try second.pending(app).first?.next == "2026-11-23T19:00:00.000Z")
        #expect(second.stop() == 0)
        let third = try DeviceProcess(start: "2026-11-23T09:30:00+01:00", state: first.state)
        #expect(try third.delivered(app).compactMap { $0["title"] as? String } == ["Tea"])
        #expect(try third.delivered(app).first?["late"] as? Bool == true)
        #expect(try third.pending(app).map(\.id) == ["news"])
    }

    /// An app the daemon launched that never connects to the app link is killed once the launch wait
    /// has passed (on the device's manual clock here), and the log says what became of its event.
    @Test func aLaunchedAppThatNeverConnectsIsKilledAfterTheLaunchWait() throws {
        let device = try DeviceProcess(start: "2026-11-23T08:00:00Z")
        let app = "dev.herald.stuck"
        // It starts, says its process id, and waits without connecting.
        let executable = device.state.appendingPathComponent("stuck")
        try writeExecutableScript("#!/bin/sh\necho $$ > \"$0.pid\"\nexec sleep 600\n", to: executable)
        try device.herald(["device", "install", app, "--executable", executable.path])
        try device.herald(["app", app, "authorize", "--options", "alert"])
        try device.herald(["app", app, "add", "--id", "tea", "--title", "Tea", "--body", "Ready"])

        try device.herald(["respond", app, "tea"])
        let launched = try #require(device.daemon.waitForLine(containing: "launched in the foreground").last)
        let pidFile = executable.appendingPathExtension("pid")
        try eventually("the app wrote its pid") { FileManager.default.fileExists(atPath: pidFile.path) }
        let pid = try #require(
            Int32(try String(contentsOf: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(launched.contains("(pid \(pid))"), "\(launched)")
        #expect(kill(pid, 0) == 0)

        try device.herald(["device", "clock", "--advance", "20s"])
        let failed = try #require(device.daemon.waitForLine(containing: "did not connect within").last)
        let said = "did not connect within 20 s of its launch; ended (pid \(pid)); 1 event for it dropped"
        #expect(failed.contains("[\(app)]") && failed.contains(said), "\(failed)")
        try eventually("the app's process is gone") { kill(pid, 0) != 0 }
    }

    @Test func theClockMovesOnlyWhenManualAndNeverBack() throws {
        let manual = try DeviceProcess(start: "2026-11-23T08:00:00Z", timeZone: "Asia/Tokyo")
        #expect(try manual.herald(["device", "clock"]).hasPrefix("2026-11-23T08:00:00.000Z  Asia/Tokyo  manual"))
        #expect(try manual.herald(["device", "clock", "--advance", "1d"]).hasPrefix("2026-11-24T08:00:00.000Z"))
        let back = try run(
            try heraldExecutable().path, ["device", "clock", "--to", "2026-11-23T09:00:00Z"] + manual.location)
        #expect(back.status != 0)
        #expect(back.stderr.contains("400") && back.stderr.contains("the clock never goes back"), "\(back.stderr)")
        let both = try curl([
            "-X", "POST", manual.apiURL + "/clock", "-d", #"{"advance":1,"to":"2027-01-01T00:00:00Z"}"#,
        ])
        #expect(both.status == 400 && both.body.contains("exactly one of advance"), "\(both.body)")
        // Past the calendar's last year (10^19 seconds on made the Focus's clock overflow, and stopped
        // the daemon): named, and the clock stays where it was.
        let far = try curl(["-X", "POST", manual.apiURL + "/clock", "-d", #"{"advance":1e19}"#])
        #expect(far.status == 400 && far.body.contains("advance: the clock goes no later than 9999"), "\(far.body)")
        #expect(try manual.herald(["device", "clock"]).hasPrefix("2026-11-24T08:00:00.000Z"))
        let bad = try run(try heraldExecutable().path, ["device", "clock", "--advance", "soon"] + manual.location)
        #expect(bad.status != 0 && bad.stderr.contains("'soon' is not a duration"), "\(bad.stderr)")

        let system = try DeviceProcess()
        let refused = try curl(["-X", "POST", system.apiURL + "/clock", "-d", #"{"advance":60}"#])
        #expect(refused.status == 409 && refused.body.contains("--manual-clock"), "\(refused.body)")
        #expect(try system.herald(["device", "clock"]).contains("system clock"))
    }
}
