import Foundation
import HeraldRuntime
import Testing

/// The push console as a person uses it: `herald up` prints its address and a sign-in link, headless
/// Chromium drives the page (Tests/Clients/console.py, Selenium), and what the page sends goes through
/// the real provider API to the real device.
@Suite(.serialized, .ownThread) struct ConsoleEndToEndTests {
    @Test func signInSendTraceFaultWatchAndRefuseForgedPosts() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("herald-console-\(UUID())")
        defer { try? FileManager.default.removeItem(at: state) }
        let up = try UpEndToEndTests.Up(state: state)
        defer { _ = up.stop() }
        // `herald up` prints the console and a link that signs in.
        let console = up.info.consoleURL
        #expect(console == up.info.adminURL + "/console")
        #expect(up.banner.contains { $0.hasSuffix("the push console:         \(console)") }, "\(up.banner)")
        let link = try #require(
            up.banner.first { $0.contains("sign in with this link:") }.map { String($0.split(separator: " ").last!) })
        #expect(link == "\(console)#token=\(up.info.adminToken)")

        let shots = try screenshotDirectory(else: state)
        // The gateway's database, where the script damages a row of the delivery log at its end.
        let database = state.appendingPathComponent("gateway/gateway.sqlite").path
        #expect(FileManager.default.fileExists(atPath: database), "\(database)")
        let result = try run(
            "/usr/bin/python3",
            [
                Self.script, console, link, up.info.adminToken, up.info.p8,
                up.info.deviceAPI,
                shots.path, database,
            ])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let steps = WebDeviceEndToEndTests.steps(result.stdout)

        // A wrong token: the page says so and shows nothing else.
        let wrong = try #require(steps["wrong"])
        #expect(wrong["error"] as? String == "That is not this gateway's admin token.")
        #expect(wrong["appHidden"] as? Bool == true)
        // The link signs in; the token leaves the address bar, and the cookie is out of scripts' reach.
        let signIn = try #require(steps["signin"])
        #expect(signIn["url"] as? String == console)
        #expect(signIn["scriptSeesCookie"] as? String == "")
        #expect(signIn["httpOnly"] as? Bool == true && signIn["sameSite"] as? String == "Strict")

        // The form starts with the demo key's .p8: `herald up` gave it to the gateway.
        #expect(steps["prefilled"]?["same"] as? Bool == true, "\(steps["prefilled"] ?? [:])")

        // The form's push: 200 with its ids and latency, and the device shows it.
        let send = try #require(steps["send"])
        #expect(send["status"] as? String == "200", "\(send)")
        let answer = try #require(send["answer"] as? [String: String])
        let apnsID = try #require(answer["apns-id"])
        #expect(answer["apns-unique-id"] != nil && answer["latency"]?.hasSuffix(" ms") == true, "\(answer)")
        #expect(answer["sent to"] == up.info.developmentURL)
        let title = try #require(send["title"] as? String)
        #expect((send["device"] as? [String])?.contains(title) == true)
        // The commands it shows send the same push: curl as it is; `herald push` from the directory that
        // holds the key, as `herald up` writes it.
        let curlCommand = try #require(send["curl"] as? String)
        let curlRun = try run("/bin/sh", ["-c", curlCommand + " -sS --max-time 20"])
        #expect(curlRun.stdout.hasPrefix("HTTP/2 200"), "\(curlRun)")
        let heraldCommand = try #require(send["herald"] as? String)
        let heraldRun = try run(
            "/bin/sh",
            [
                "-c",
                "cd '\(state.path)' && "
                    + heraldCommand.replacingOccurrences(
                        of: "herald push", with: "'\(try heraldExecutable().path)' push"),
            ])
        #expect(heraldRun.status == 0 && heraldRun.stdout.hasPrefix("200 apns-id "), "\(heraldRun)")

        // Its delivery log, by the id the answer gave: accepted, delivered, acknowledged, to the millisecond;
        // and it heads the history, acknowledged, with its app and device.
        let log = try #require(steps["log"])
        #expect(log["lookup"] as? String == answer["apns-unique-id"])
        #expect(log["kinds"] as? [String] == ["accepted", "delivered", "acknowledged"])
        #expect(
            (log["times"] as? [String])?.allSatisfy { $0.range(of: #"\.\d{3}$"#, options: .regularExpression) != nil }
                == true)
        let history = try #require(log["history"] as? [String])
        #expect(history.count == 6 && history[1] == apnsID && history[2] == "dev.herald.demo", "\(history)")
        // Its status, and the state Apple's console would show for it.
        #expect(history[3] == up.info.deviceID && history[4] == "acknowledgedDelivered to Device", "\(history)")

        // A badge in words: Apple would answer 200 and leave the badge as it was; the gateway answers 200
        // with herald-warnings, and Send names the warning with what Apple does and where it says so.
        let warning = try #require(steps["warning"])
        #expect(warning["status"] as? String == "200", "\(warning)")
        #expect(warning["warnings"] as? [String] == ["BadgeNotANumber"], "\(warning)")
        #expect(warning["header"] as? String == "BadgeNotANumber", "\(warning)")
        #expect(
            (warning["text"] as? String)?.contains("the badge is left as it was") == true
                && (warning["text"] as? String)?.contains("Generating a remote notification") == true, "\(warning)")
        // Broken JSON is named as the user types, and Send then sends nothing.
        let bad = try #require(steps["bad"])
        #expect((bad["syntax"] as? String)?.hasPrefix("payload: ") == true)
        #expect(bad["unchanged"] as? Bool == true)

        // A fault rule added in the page answers the next push with its reason; then it is used up.
        let fault = try #require(steps["fault"])
        // The rule as added in the form: its reason, a GOAWAY after the answer, on every matching push.
        let cells = fault["rule"] as? [String] ?? []
        #expect(cells.contains("Unregistered") && cells.contains("GOAWAY NO_ERROR"), "\(cells)")
        #expect(cells.contains("probability 1"), "\(cells)")
        #expect(fault["faulted"] as? String == "410 Unregistered" && fault["after"] as? String == "200", "\(fault)")
        // The refused push has its line in the delivery log: what answered it, and for which device and app.
        let rejected = try #require(fault["rejected"] as? String)
        #expect(
            rejected.contains("410 Unregistered") && rejected.contains("answered by fault rule")
                && rejected.contains("device \(up.info.deviceID ?? "")") && rejected.contains("topic dev.herald.demo"),
            "\(rejected)")

        // The live counters are those of /metrics: this run's answers, the device online.
        let live = try #require(steps["live"])
        let totals = try #require(live["totals"] as? [String: String])
        #expect(totals["410 Unregistered"] == "1", "\(totals)")
        #expect(Int(totals["200"] ?? "") ?? 0 >= 2, "\(totals)")
        #expect((live["gauges"] as? [String])?.contains("devices online: 1") == true, "\(live)")
        // The header says what is live, in green; when the stream drops it says so, in red.
        #expect((live["status"] as? String)?.contains("live: the gateway's counters") == true, "\(live)")
        #expect(live["statusClass"] as? String == "live ok", "\(live)")

        // Metrics: Apple's delivery states today. Three pushes received and delivered (the faulted one was
        // refused, so never received); the badge in words was then refused by the device ("Disabled").
        let metrics = try #require(steps["metrics"])
        let states = try #require(metrics["totals"] as? [String: String])
        #expect(states["Received by APNs"] == "3" && states["Delivered to Device"] == "3", "\(states)")
        #expect(states["Discarded - Disabled"] == "1" && states["Stored - Device Offline"] == "0", "\(states)")
        #expect((metrics["heads"] as? [String])?.first == "state" && (metrics["heads"] as? [String])?.count == 9)

        // Devices and apps: the device online with its token; the key without its private half.
        let devices = try #require(steps["devices"])
        let device = try #require(devices["device"] as? [String])
        #expect(device.first == up.info.deviceID && device.contains("online"), "\(device)")
        #expect(device.last?.contains(up.info.deviceToken) == true)
        // The certificate the page downloaded authenticates a push over TLS, as the Send view's curl has it.
        let certificate = try #require(devices["certificate"] as? String)
        defer { try? FileManager.default.removeItem(at: URL(fileURLWithPath: certificate).deletingLastPathComponent()) }
        let provider = up.info.providerURL
        let byCertificate = try run(
            "/usr/bin/env",
            [
                "curl", "-sS", "-i", "--max-time", "20", "--http2", "--cacert", up.info.caCertificate,
                "--cert", certificate, "\(provider)/3/device/\(up.info.deviceToken)",
                "-H", "apns-topic: dev.herald.demo", "-d", #"{"aps":{"alert":"by the downloaded certificate"}}"#,
            ])
        #expect(byCertificate.stdout.hasPrefix("HTTP/2 200"), "\(byCertificate)")
        let keys = try #require(devices["keys"] as? [[String]])
        #expect(keys.first?.first == up.info.keyID && !"\(keys)".contains("PRIVATE"), "\(keys)")

        // Another site's form cannot add a fault rule: cross-site it carries no cookie (401); from
        // another origin of the same site it carries the cookie but not the CSRF token, and its origin
        // is not the console's (403).
        let forged = try #require(steps["forged"])
        #expect((forged["crossSite"] as? String)?.contains("authorization: Bearer") == true, "\(forged)")
        #expect((forged["sameSite"] as? String)?.contains("may not change this gateway") == true, "\(forged)")
        #expect(forged["rulesBefore"] as? Int == forged["rulesAfter"] as? Int)

        // A row of the delivery log it cannot read (the form's push's, damaged): the history lists the
        // rest and says one row was left out; the push's own log says it cannot be read.
        let unreadable = try #require(steps["unreadable"])
        #expect(unreadable["damaged"] as? Int == 1, "\(unreadable)")
        #expect(
            (unreadable["note"] as? String)?.hasSuffix(
                "1 row of the log could not be read (damaged, or written by a newer release of Herald) and is left out."
            ) == true, "\(unreadable)")
        #expect(unreadable["listed"] as? Bool == false, "\(unreadable)")
        #expect(
            (unreadable["timeline"] as? String)?.contains("is 1 row(s) this gateway cannot read") == true,
            "\(unreadable)")

        // Last, as it stops the gateway: the event stream drops, and the header says so in red.
        let pid = try GatewayInfo.read(directory: state.appendingPathComponent("gateway")).pid
        let drop = try run("/usr/bin/python3", [Self.script, "--drop", link, shots.path, pid])
        #expect(drop.status == 0, "\(drop.stdout)\n\(drop.stderr)")
        let dropped = try #require(WebDeviceEndToEndTests.steps(drop.stdout)["dropped"])
        #expect((dropped["live"] as? String)?.contains("live: the gateway's counters") == true, "\(dropped)")
        #expect((dropped["status"] as? String)?.contains("not live") == true, "\(dropped)")
        #expect(dropped["color"] as? String == "rgb(196, 39, 29)", "\(dropped)")

        for name in [
            "signin", "send", "log", "warning", "faults", "live", "metrics", "devices", "unreadable", "dropped",
        ] {
            let png = try Data(contentsOf: shots.appendingPathComponent("console-\(name).png"))
            #expect(png.prefix(4) == Data([0x89, 0x50, 0x4E, 0x47]), "\(name) is a PNG")
        }
    }

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Clients/console.py").path
}
