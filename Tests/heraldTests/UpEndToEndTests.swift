import Foundation
import HeraldRuntime
import Testing

/// `herald up` as a newcomer runs it: the real executable, its gateway and device children, curl,
/// and the `herald` commands the README's tour uses.
@Suite(.serialized, .ownThread) struct UpEndToEndTests {
    /// A running `herald up` on free ports.
    final class Up {
        let state: URL
        let process = Process()
        let output = Pipe()
        let reader: LineReader
        var banner: [String] = []
        let info: UpInfo
        let watchdog: DispatchWorkItem

        init(state: URL, extra: [String] = [], environment: [String: String] = [:]) throws {
            self.state = state
            process.executableURL = try heraldExecutable()
            if !environment.isEmpty {
                process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            }
            process.arguments =
                [
                    "up", "--state", state.path, "--port", "0", "--dev-port", "0", "--link-port", "0", "--admin-port",
                    "0", "--device-port", "0", "--binary-port", "0", "--feedback-port", "0", "--channels-port", "0",
                    "--channels-dev-port", "0", "--time-zone",
                    "Europe/Paris",
                ] + extra
            process.standardOutput = output
            // Kept in a temporary file, and shown if `up` ends before it is ready.
            let errors = FileManager.default.temporaryDirectory.appendingPathComponent("herald-up-\(UUID()).err")
            _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
            process.standardError = try FileHandle(forWritingTo: errors)
            reader = LineReader(output.fileHandleForReading)
            try process.run()
            // A safety net, not a wait: if a test hangs reading the terminal, `up` stops everything
            // (its SIGTERM stops the device and the gateway), the output ends and the test fails.
            watchdog = heraldTests.watchdog(process, after: 240, signal: SIGTERM)
            // Everything up to the tour's last line.
            while let line = reader.line() {
                banner.append(line)
                if line.contains("Ctrl-C stops everything") { break }
            }
            do {
                info = try UpInfo.read(directory: state)
            } catch {
                let said = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
                throw UpFailed(description: "\(error); herald up printed:\n\(banner.joined(separator: "\n"))\n\(said)")
            }
            try? FileManager.default.removeItem(at: errors)
        }

        struct UpFailed: Error, CustomStringConvertible { var description: String }

        /// Reads the terminal until a line contains `text`; returns the lines read.
        func waitForLine(containing text: String) -> [String] { reader.lines(through: text) }

        /// The curl command of the banner, as printed.
        var curlCommand: String {
            let start = banner.firstIndex { $0.hasPrefix("curl ") } ?? 0
            return banner[start..<(start + 3)].joined(separator: "\n")
        }

        func herald(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
            try run(try heraldExecutable().path, arguments)
        }

        var device: [String] { ["--device-state", state.appendingPathComponent("device").path] }

        /// Waits until the device shows `app`'s permission dialog, then taps Allow (as a person on
        /// the web device does: `POST /prompts/<app>`).
        func allow(_ app: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let asked = waitForLine(containing: "[\(app)] asks to send notifications")
            #expect(asked.last?.contains("waiting for the user's answer") == true, sourceLocation: sourceLocation)
            let answer = try curl([
                "-X", "POST", "-d", #"{"allow":true}"#, info.deviceAPI + "/prompts/\(app)",
            ])
            #expect(answer.status == 200, "\(answer.body)", sourceLocation: sourceLocation)
        }

        func stop() -> Int32 {
            watchdog.cancel()
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
            return process.terminationStatus
        }

        deinit {
            watchdog.cancel()
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
    }

    /// `herald up --nodes 2`: a private PostgreSQL under the state, two gateways on it, the device on
    /// the second; the printed curl goes to the first and the notification appears. Ctrl-C stops the
    /// database server too.
    @Test func twoNodesAreOnePushService() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("herald-up-\(UUID())")
        defer { try? FileManager.default.removeItem(at: state) }
        let up = try Up(state: state, extra: ["--nodes", "2"])
        #expect(up.info.nodes == 2)
        let node2 = try #require(up.info.otherNodes.first)
        let database = try #require(up.info.database)
        #expect(database.hasPrefix("postgres://herald@127.0.0.1:") && database.contains(state.path + "/postgres"))
        let second = node2.developmentURL
        #expect(second != up.info.developmentURL)
        #expect(up.info.linkURL == node2.linkDevelopmentURL, "the device is on node 2")
        #expect(up.banner.contains { $0.hasPrefix("  cluster:                  2 gateway nodes on postgres://") })
        #expect(up.banner.contains { $0.hasPrefix("  node 2:                   development \(second)") })
        // Each node answers for the cluster: node 2 knows the key and app node 1 was given.
        let admin2 = try curl([
            "-H", "authorization: Bearer \(up.info.adminToken)", node2.adminURL + "/apps",
        ])
        #expect(admin2.body.contains("dev.herald.demo"), "\(admin2.body)")

        #expect(up.curlCommand.contains(up.info.developmentURL))
        let pasted = try run("/bin/sh", ["-c", up.curlCommand])
        #expect(pasted.stdout.hasPrefix("HTTP/2 200"), "\(pasted.stdout)\n\(pasted.stderr)")
        let shown = up.waitForLine(containing: "Hello — from Herald")
        #expect(shown.last == "[dev.herald.demo] Hello — from Herald (sound default, badge 1)", "\(shown)")

        // Node 2's legacy binary interface and feedback service serve the cluster too (the demo
        // app's certificate is from the cluster's CA).
        let upFile = state.appendingPathComponent("up.json").path
        let binary = try up.herald([
            "push", "--up", upFile, "--binary", "--binary-address", node2.binaryAddress, "--alert",
            "through node 2's binary interface",
        ])
        #expect(binary.status == 0, "\(binary.stderr)")
        #expect(
            up.waitForLine(containing: "through node 2's binary interface").last?.hasPrefix("[dev.herald.demo]") == true
        )
        // Node 1's binary interface: the notification crosses to node 2, which holds the device.
        let crossing = try up.herald([
            "push", "--up", upFile, "--binary", "--alert", "through node 1's binary interface",
        ])
        #expect(crossing.status == 0, "\(crossing.stderr)")
        #expect(
            up.waitForLine(containing: "through node 1's binary interface").last?.hasPrefix("[dev.herald.demo]") == true
        )
        // The pasted curl and that notification went to node 1 and were forwarded to node 2.
        let metrics = try curl([
            "-H", "authorization: Bearer \(up.info.adminToken)", up.info.adminURL + "/metrics",
        ])
        #expect(metrics.body.contains(#"herald_pushes_forwarded_total{result="answered"} 2"#), "\(metrics.body)")
        let feedback = try up.herald(["feedback", "--up", upFile, "--address", node2.feedbackAddress])
        #expect(feedback.stdout == "the feedback list is empty\n", "\(feedback.stderr)")

        let bad = try up.herald(["up", "--state", state.path + "-other", "--nodes", "0"])
        #expect(bad.status != 0 && bad.stderr.contains("--nodes: between 1 and 9, not 0"), "\(bad.stderr)")

        #expect(up.stop() == 0)
        // The private server stopped with the rest: its data stays, its pid file is gone.
        #expect(FileManager.default.fileExists(atPath: state.appendingPathComponent("postgres/PG_VERSION").path))
        #expect(!FileManager.default.fileExists(atPath: state.appendingPathComponent("postgres/postmaster.pid").path))
    }

    /// `widgets`, `controls` and `location` pushes are no notifications: sent with `herald push` to the
    /// demo app's suffixed topics, they reach the app (`herald app … listen`) as a reload of its
    /// widgets or controls and as a location query, and the device shows each as a line. A widgets
    /// push without `content-changed` is refused by the device.
    @Test func widgetsControlsAndLocationPushesReachTheApp() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("herald-up-\(UUID())")
        let up = try Up(state: state)
        let upFile = state.appendingPathComponent("up.json").path
        let app = up.info.topic
        let listener = try Child(
            try heraldExecutable(), ["app", app, "listen", "--count", "3"] + up.device)
        let watchdog = watchdog(listener.process, after: 60)
        defer { watchdog.cancel() }
        #expect(listener.waitForLine(containing: "listening as").last?.contains(app) == true)
        func push(_ type: String, _ topic: String, _ payload: String) throws -> (status: Int32, stderr: String) {
            let file = state.appendingPathComponent("\(type).json")
            try Data(payload.utf8).write(to: file)
            let sent = try up.herald([
                "push", "--up", upFile, "--push-type", type, "--topic", topic, "--payload", file.path,
            ])
            return (sent.status, sent.stderr)
        }
        let changed = #"{"aps":{"content-changed":true}}"#
        #expect(try push("widgets", app + ".push-type.widgets", changed).status == 0)
        #expect(listener.waitForLine(containing: "contentChanged").last == "contentChanged widgets")
        #expect(up.waitForLine(containing: "asked to reload").last?.contains("widgets asked to reload") == true)
        #expect(try push("controls", app + ".push-type.controls", changed).status == 0)
        #expect(listener.waitForLine(containing: "contentChanged").last == "contentChanged controls")
        // Accepted by the gateway (it does not read aps for this), refused by the device.
        #expect(try push("widgets", app + ".push-type.widgets", #"{"aps":{}}"#).status == 0)
        #expect(
            up.waitForLine(containing: "refused push").last?.contains(#"needs "content-changed": true"#) == true)
        #expect(try push("location", app + ".location-query", #"{"aps":{},"query":"where"}"#).status == 0)
        let located = listener.waitForLine(containing: "locationPush").last ?? ""
        #expect(located.hasPrefix("locationPush "), "\(located)")
        #expect(up.waitForLine(containing: "location query").last?.contains("location query handler") == true)
        // HeraldKit answered for the app once its handler returned.
        #expect(up.waitForLine(containing: "location query finished").last?.contains("finished after") == true)
        #expect(listener.finish().status == 0, "the app saw its three events and stopped")
        #expect(up.stop() == 0)
    }

    @Test func thePastedCurlPushArrivesIsTappedLaunchesTheAppAndRemovalGives410() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("herald-up-\(UUID())")
        let up = try Up(state: state)
        #expect(up.banner.contains { $0.hasPrefix("herald is up") })
        for key in [
            "providerURL", "developmentURL", "adminURL", "adminToken", "caCertificate", "teamID", "keyID", "p8",
            "topic", "environment", "deviceID", "deviceToken", "deviceAPI", "binaryAddress", "feedbackAddress",
            "binaryCertificate", "binaryPrivateKey",
        ] {
            #expect(up.info.fields[key]?.isEmpty == false, "up.json lacks \(key)")
        }
        #expect(up.info.deviceToken.count == 64)
        #expect(FileManager.default.fileExists(atPath: up.info.p8))

        // A second `herald up` on the same state is refused before it changes anything.
        let second = try up.herald(["up", "--state", state.path, "--port", "0", "--dev-port", "0"])
        #expect(second.status != 0)
        #expect(
            second.stderr.contains("is in use by herald up, pid \(up.process.processIdentifier)"), "\(second.stderr)")
        #expect(FileManager.default.fileExists(atPath: state.appendingPathComponent("gateway/gateway.json").path))

        // The curl command, pasted as printed: the user sees the status line and the apns-id.
        #expect(up.curlCommand.hasPrefix("curl -i "))
        let pasted = try run("/bin/sh", ["-c", up.curlCommand])
        let head = pasted.stdout.components(separatedBy: "\r\n")
        #expect(
            head.first?.trimmingCharacters(in: .whitespaces) == "HTTP/2 200",
            "\(up.curlCommand)\n\(pasted.stdout)\n\(pasted.stderr)")
        #expect(
            head.contains { $0.range(of: "^apns-id: [0-9a-f-]{36}$", options: .regularExpression) != nil },
            "\(pasted.stdout)")
        let shown = up.waitForLine(containing: "Hello — from Herald")
        #expect(shown.last == "[dev.herald.demo] Hello — from Herald (sound default, badge 1)", "\(shown)")

        // It is in the device's delivered list, and the badge follows it.
        let api = up.info.deviceAPI
        let delivered = try curl([api + "/apps/dev.herald.demo/delivered"])
        let list = try JSONSerialization.jsonObject(with: Data(delivered.body.utf8)) as? [[String: Any]]
        #expect(list?.first?["title"] as? String == "Hello")
        #expect(list?.first?["remote"] as? Bool == true)
        #expect(try curl([api + "/apps/dev.herald.demo/badge"]).json?["badge"] as? Int == 1)

        // Tapping it launches the (not running) demo app with the notification as launch options;
        // the app is told of the response and the device waits for it to finish.
        let id = try #require(list?.first?["identifier"] as? String)
        let tapped = try up.herald(["respond", "dev.herald.demo"] + up.device)
        #expect(tapped.status == 0, "\(tapped.stderr)")
        let afterTap = up.waitForLine(containing: "didReceive")
        #expect(
            afterTap.contains { $0.hasPrefix("launched \(id): Hello from Herald (state foreground)") }, "\(afterTap)")
        #expect(afterTap.last?.contains("action com.apple.UNNotificationDefaultActionIdentifier") == true)
        let finished = up.waitForLine(containing: "response finished")
        #expect(!finished.isEmpty)
        #expect(try curl([api + "/apps/dev.herald.demo/delivered"]).body.contains(id) == false)

        // A local notification from the shell, pending with its next fire date.
        let added = try up.herald(
            ["app", "dev.herald.demo", "add", "--id", "tea", "--title", "Tea", "--body", "Ready", "--in", "3600"]
                + up.device)
        #expect(added.status == 0, "\(added.stderr)")
        let pending = try up.herald(["app", "dev.herald.demo", "pending", "--json"] + up.device)
        let requests = try JSONSerialization.jsonObject(with: Data(pending.stdout.utf8)) as? [[String: Any]]
        #expect((requests?.first?["request"] as? [String: Any])?["identifier"] as? String == "tea")
        #expect(requests?.first?["nextFireDate"] is String)

        // herald push takes its defaults from up.json; an .apns file names its topic; --tokens sums up.
        let upFile = state.appendingPathComponent("up.json").path
        let pushed = try up.herald(["push", "--up", upFile, "--title", "Second", "--alert", "push", "--badge", "2"])
        #expect(pushed.status == 0 && pushed.stdout.hasPrefix("200 apns-id "), "\(pushed.stderr)")
        #expect(
            up.waitForLine(containing: "Second — push").last == "[dev.herald.demo] Second — push (sound none, badge 2)")
        let apns = state.appendingPathComponent("hello.apns")
        try Data(#"{"Simulator Target Bundle":"dev.herald.demo","aps":{"alert":"from a file"}}"#.utf8).write(to: apns)
        let fromFile = try up.herald(["push", "--up", upFile, apns.path])
        #expect(fromFile.status == 0, "\(fromFile.stderr)")
        #expect(up.waitForLine(containing: "from a file").last?.hasPrefix("[dev.herald.demo] from a file") == true)
        let tokens = state.appendingPathComponent("tokens.txt")
        try Data("\(up.info.deviceToken)\n# a comment\n\(String(repeating: "ab", count: 32))\n".utf8).write(
            to: tokens)
        let many = try up.herald(["push", "--up", upFile, "--tokens", tokens.path, "--alert", "many", "--json"])
        #expect(many.status == 1)
        let summary = try JSONSerialization.jsonObject(with: Data(many.stdout.utf8)) as? [String: Any]
        #expect(summary?["sent"] as? Int == 2)
        #expect(summary?["results"] as? [String: Int] == ["200": 1, "400 BadDeviceToken": 1], "\(many.stdout)")

        // A content-available push wakes the (not running) demo app in the background; the device
        // waits for it to finish its fetch.
        let background = state.appendingPathComponent("background.json")
        try Data(#"{"aps":{"content-available":1},"news":3}"#.utf8).write(to: background)
        let woke = try up.herald(
            ["push", "--up", upFile, "--payload", background.path, "--push-type", "background", "--priority", "5"])
        #expect(woke.status == 0, "\(woke.stderr)")
        let fetched = up.reader.lines(containing: ["remoteNotification", "background fetch finished"])
        #expect(fetched.contains { $0.contains("[dev.herald.demo] woken in the background for 30 s") }, "\(fetched)")
        #expect(fetched.contains { $0.contains("[dev.herald.demo] launched in the background") }, "\(fetched)")
        #expect(fetched.contains { $0.hasPrefix("remoteNotification ") }, "\(fetched)")
        #expect(fetched.contains { $0.contains("background fetch finished after") && $0.hasSuffix("(newData)") })

        // The legacy binary interface, with the demo app's certificate from up.json: commands 2 and 1
        // arrive; a bad token comes back as its error status.
        let binary = try up.herald(["push", "--up", upFile, "--binary", "--alert", "over the binary interface"])
        #expect(binary.stdout == "sent 1 over the binary interface (command 2, identifier 1)\n", "\(binary.stderr)")
        #expect(
            up.waitForLine(containing: "over the binary interface").last?.hasPrefix("[dev.herald.demo] over") == true)
        let enhanced = try up.herald(
            ["push", "--up", upFile, "--binary", "--binary-command", "1", "--alert", "enhanced", "--expiration", "0"])
        #expect(enhanced.status == 0, "\(enhanced.stderr)")
        #expect(up.waitForLine(containing: "enhanced").last?.hasPrefix("[dev.herald.demo] enhanced") == true)
        let refused = try up.herald(["push", "--up", upFile, "--binary", "--alert", "x", "--token", "00ff"])
        #expect(refused.status == 1)
        #expect(refused.stdout.contains("refused: identifier 1: status 5 (Invalid token size)"), "\(refused.stdout)")
        #expect(try up.herald(["feedback", "--up", upFile]).stdout == "the feedback list is empty\n")

        // Removing the app: the next push to its token answers 410 Unregistered, and the token is on
        // the feedback list once; a binary push to it is dropped without an error and lists it again.
        let removed = try up.herald(["device", "remove", "dev.herald.demo"] + up.device)
        #expect(removed.status == 0, "\(removed.stderr)")
        let gone = try run("/bin/sh", ["-c", up.curlCommand + " -sS -i"])
        #expect(gone.stdout.contains("HTTP/2 410"), "\(gone.stdout)")
        #expect(gone.stdout.contains(#""reason":"Unregistered""#))
        let feedback = try up.herald(["feedback", "--up", upFile, "--json"])
        let tuples = try JSONSerialization.jsonObject(with: Data(feedback.stdout.utf8)) as? [[String: Any]]
        #expect(
            tuples?.map { $0["token"] as? String } == [up.info.deviceToken], "\(feedback.stdout) \(feedback.stderr)")
        #expect(try up.herald(["feedback", "--up", upFile]).stdout == "the feedback list is empty\n")
        #expect(try up.herald(["push", "--up", upFile, "--binary", "--alert", "to nobody"]).status == 0)
        try eventually("the token listed again") {
            try up.herald(["feedback", "--up", upFile]).stdout.contains(up.info.deviceToken)
        }

        // SIGTERM stops the device and the gateway; the state is reused on the next start.
        #expect(up.stop() == 0)
        let keyID = up.info.keyID
        let again = try Up(state: state)
        #expect(again.info.keyID == keyID)
        #expect(again.info.deviceID == up.info.deviceID)
        let status = try curl([again.info.deviceAPI + "/status"])
        #expect(status.json?["gateway"] as? String == "connected")
        #expect(status.json?["timeZone"] as? String == "Europe/Paris")
        #expect(again.stop() == 0)
        try? FileManager.default.removeItem(at: state)
    }

    /// `herald up` killed with SIGKILL (no chance to stop anything): its gateway and device end too,
    /// with their state locks released, and the next `herald up` on the same directory starts. Its
    /// `--log-format json` reaches the children's logs.
    @Test func killingUpEndsItsChildren() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("herald-up-\(UUID())")
        defer { try? FileManager.default.removeItem(at: state) }
        let up = try Up(state: state, extra: ["--log-format", "json"])
        let locks = ["gateway", "device"].map { state.appendingPathComponent($0).appendingPathComponent("lock") }
        for lock in locks { #expect(Self.isHeld(lock), "\(lock.path) is held while up runs") }

        up.watchdog.cancel()
        kill(up.process.processIdentifier, SIGKILL)
        up.process.waitUntilExit()
        #expect(up.process.terminationReason == .uncaughtSignal)
        for lock in locks {
            #expect(Self.released(lock, within: 60), "\(lock.path) still held a minute after up was killed")
        }
        let log = try String(contentsOf: state.appendingPathComponent("gateway.log"), encoding: .utf8)
        let said = log.split(separator: "\n").first { $0.contains("herald up, which started this process, has ended") }
        let line = try #require(said, "\(log)")
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String]
        #expect(object?["message"] == "herald up, which started this process, has ended; stopping", "\(line)")
        #expect(object?["level"] == "notice")

        let again = try Up(state: state)
        #expect(again.info.keyID == up.info.keyID)
        let status = try curl([again.info.deviceAPI + "/status"])
        #expect(status.json?["gateway"] as? String == "connected")
        #expect(again.stop() == 0)
    }

    /// Whether some process holds the `flock` of a state directory's lock file.
    static func isHeld(_ lock: URL) -> Bool {
        let fd = open(lock.path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if flock(fd, LOCK_EX | LOCK_NB) == 0 { return false }
        return true
    }

    /// Waits until the holder of a lock file's `flock` lets go (its process ended): a blocking `flock`
    /// on a thread of its own, given up after `seconds`.
    static func released(_ lock: URL, within seconds: Double) -> Bool {
        let fd = open(lock.path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return false }
        let taken = DispatchSemaphore(value: 0)
        Thread {
            if flock(fd, LOCK_EX) == 0 {
                close(fd)
                taken.signal()
            }
        }.start()
        return taken.wait(timeout: .now() + seconds) == .success
    }
}
