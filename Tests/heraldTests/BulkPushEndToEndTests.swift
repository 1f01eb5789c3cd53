import Foundation
import HeraldTesting
import Testing

/// `herald push` to many tokens, the real executable against a gateway on real sockets: the summary
/// by answer, the tokens to drop, the progress a person sees on a terminal and the lines a log gets.
@Suite(.serialized, .ownThread) struct BulkPushEndToEndTests {
    static let app = "com.example.bulk"
    /// The gateway's (manual) clock: now, to the second, so that the real clock `herald push` signs
    /// its provider token with is within the token's hour.
    static let start = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))

    /// A gateway with 10,000 devices that have the app (one token each, offline, so every push is
    /// stored), 100 of which have removed it since; the key's .p8 and the tokens in files.
    struct Fixture {
        let gateway: TestGateway
        let tokens: [String]
        let removed: Set<String>
        let directory: URL
        let p8: URL

        init() async throws {
            gateway = try await TestGateway.start(apps: [BulkPushEndToEndTests.app], clock: ManualClock(now: start))
            tokens = try await gateway.tokens(for: BulkPushEndToEndTests.app, devices: 10_000)
            var removed: Set<String> = []
            for i in stride(from: 37, to: 10_000, by: 100) {
                _ = try await gateway.gateway.directory.unregisterApp(
                    device: "bulk-\(i)", bundleID: BulkPushEndToEndTests.app, environment: .development,
                    now: BulkPushEndToEndTests.start)
                removed.insert(tokens[i])
            }
            self.removed = removed
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bulk-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            p8 = directory.appendingPathComponent("AuthKey_\(TestGateway.keyID).p8")
            try gateway.p8.write(to: p8, atomically: true, encoding: .utf8)
        }

        /// `count` of the tokens in a file (with a comment line and a blank one, which are skipped,
        /// and the first token between spaces and a tab, ending in CRLF, which are trimmed).
        func tokensFile(_ count: Int) throws -> URL {
            let file = directory.appendingPathComponent("tokens-\(count).txt")
            var lines = ["# the bulk test's devices", "  "] + tokens.prefix(count)
            lines[2] = " \t" + lines[2] + "  \r"
            try lines.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
            return file
        }

        func arguments(_ file: URL, _ extra: [String]) throws -> [String] {
            [
                "push", "--url", gateway.providerURL, "--ca", gateway.info["caCertificate"] ?? "", "--p8", p8.path,
                "--key-id", TestGateway.keyID, "--team", TestGateway.teamID, "--topic", BulkPushEndToEndTests.app,
                "--tokens-file", file.path, "--alert", "Sale", "--up", directory.appendingPathComponent("none").path,
            ] + extra
        }

        func stop() async {
            await gateway.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    @Test func tenThousandTokensGiveTheirSummaryAndTheTokensToDropWithTheirTimestamps() async throws {
        let f = try await Fixture()
        let run = try await runOffThread(
            try heraldExecutable().path, try f.arguments(try f.tokensFile(10_000), ["--json", "--concurrency", "200"]))
        // Some answered 410: the command says so with its status.
        #expect(run.status == 1, "\(run.stderr)")
        let summary = try #require(
            try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
        #expect(summary["sent"] as? Int == 10_000)
        #expect(summary["results"] as? [String: Int] == ["200": 9_900, "410 Unregistered": 100], "\(summary)")
        let drops = try #require(summary["drop"] as? [[String: Any]])
        #expect(Set(drops.compactMap { $0["token"] as? String }) == f.removed)
        // Each with the time the app was removed, as APNs gives it: milliseconds since 1970.
        #expect(
            drops.allSatisfy {
                $0["timestamp"] as? Int64 == Int64(Self.start.timeIntervalSince1970) * 1000
                    && $0["reason"] as? String == "Unregistered"
            })
        #expect((summary["perSecond"] as? Double ?? 0) > 0)
        // --json keeps standard error free of progress.
        #expect(!run.stderr.contains("sent "), "\(run.stderr)")
        // Every 200 is a push the gateway keeps for its offline device.
        #expect(try await f.gateway.gateway.router.offline.store.storedCount() == 9_900)
        await f.stop()
    }

    @Test func aTokensFileThatCannotBeReadOrHoldsNoTokenIsRefused() async throws {
        let f = try await Fixture()
        let missing = f.directory.appendingPathComponent("missing.txt")
        let unread = try await runOffThread(try heraldExecutable().path, try f.arguments(missing, []))
        #expect(unread.status != 0 && unread.stderr.contains("--tokens-file: cannot read \(missing.path)"), "\(unread)")
        // Comments, blank lines and lines of spaces, with every line ending the reader knows.
        let empty = f.directory.appendingPathComponent("empty.txt")
        try Data("# none yet\r\n \t \n\r\u{0B}\u{0C}  # nor here\n".utf8).write(to: empty)
        let none = try await runOffThread(try heraldExecutable().path, try f.arguments(empty, []))
        #expect(none.status != 0 && none.stderr.contains("\(empty.path) has no tokens"), "\(none)")
        // Lines ended by CR alone and by FF, the last by nothing: three tokens.
        let mixed = f.directory.appendingPathComponent("mixed.txt")
        try Data((f.tokens[0] + "\r" + f.tokens[1] + "\u{0C}" + f.tokens[2]).utf8).write(to: mixed)
        let three = try await runOffThread(try heraldExecutable().path, try f.arguments(mixed, ["--json"]))
        let summary = try #require(
            try JSONSerialization.jsonObject(with: Data(three.stdout.utf8)) as? [String: Any], "\(three)")
        #expect(summary["results"] as? [String: Int] == ["200": 3], "\(summary)")
        await f.stop()
    }

    @Test func aTerminalGetsABarWithRateAndTimeLeftAndALogGetsLines() async throws {
        let f = try await Fixture()
        let file = try f.tokensFile(1_000)
        // On a pseudo-terminal: the bar, redrawn in place, ending at 1000/1000.
        let terminal = try await runOffThread(
            "/usr/bin/python3", [Self.pty, try heraldExecutable().path] + (try f.arguments(file, [])))
        #expect(terminal.status == 1)
        let screen = terminal.stdout
        let frames = screen.components(separatedBy: "\r").filter { $0.hasPrefix("[") }
        #expect(!frames.isEmpty, "\(screen)")
        let last = try #require(frames.last)
        #expect(last.hasPrefix("[" + String(repeating: "#", count: 30) + "] 1000/1000  100%  "), "\(last)")
        #expect(last.range(of: #"  \d+/s  ETA 0s\x{1B}\[K"#, options: .regularExpression) != nil, "\(last)")
        #expect(screen.contains("sent 1000 in "), "\(screen)")
        #expect(screen.contains("  990  200") && screen.contains("  10  410 Unregistered"), "\(screen)")
        #expect(screen.contains("tokens to drop (410: the app is gone from the device), 10:"))
        let dropped = f.tokens.prefix(1_000).filter { f.removed.contains($0) }
        let since = Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(Self.start)
        #expect(dropped.allSatisfy { screen.contains("  \($0)  Unregistered since \(since)") }, "\(screen)")

        // Not a terminal: a plain line at each tenth, on standard error; the summary on standard output.
        let log = try await runOffThread(try heraldExecutable().path, try f.arguments(file, []))
        let lines = log.stderr.split(separator: "\n")
        #expect(lines.count == 10 && !log.stderr.contains("\r"), "\(log.stderr)")
        #expect(lines.first?.hasPrefix("sent 100/1000  10%  ") == true, "\(log.stderr)")
        #expect(lines.last?.hasPrefix("sent 1000/1000  100%  ") == true, "\(log.stderr)")
        #expect(log.stdout.hasPrefix("sent 1000 in "), "\(log.stdout)")

        // --rate caps the pace: 100 pushes at 100 a second take at least the 99 intervals between them.
        let paced = try await runOffThread(
            try heraldExecutable().path, try f.arguments(try f.tokensFile(100), ["--rate", "100", "--json"]))
        let pacedSummary = try #require(
            try JSONSerialization.jsonObject(with: Data(paced.stdout.utf8)) as? [String: Any], "\(paced.stdout)")
        #expect((pacedSummary["seconds"] as? Double ?? 0) >= 0.99, "\(pacedSummary)")
        #expect(pacedSummary["results"] as? [String: Int] == ["200": 99, "410 Unregistered": 1], "\(pacedSummary)")
        await f.stop()
    }

    @Test func deviceAllSendsToEveryDeviceThatStillHasTheAppAndDeviceIDToOne() async throws {
        let gateway = try await TestGateway.start(apps: [Self.app])
        let tokens = try await gateway.tokens(for: Self.app, devices: 5)
        _ = try await gateway.gateway.directory.unregisterApp(
            device: "bulk-0", bundleID: Self.app, environment: .development, now: gateway.clock.now())
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-device-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let p8 = directory.appendingPathComponent("key.p8")
        try gateway.p8.write(to: p8, atomically: true, encoding: .utf8)
        let adminToken = directory.appendingPathComponent("admin-token")
        try gateway.gateway.adminToken.write(to: adminToken, atomically: true, encoding: .utf8)
        func push(_ device: String) async throws -> (status: Int32, stdout: String, stderr: String) {
            try await runOffThread(
                try heraldExecutable().path,
                [
                    "push", "--url", gateway.providerURL, "--ca", gateway.info["caCertificate"] ?? "", "--p8", p8.path,
                    "--key-id", TestGateway.keyID, "--team", TestGateway.teamID, "--topic", Self.app, "--alert", "Hi",
                    "--device", device, "--admin", gateway.info["adminURL"] ?? "", "--admin-token-file",
                    adminToken.path, "--up", directory.appendingPathComponent("none").path, "--json",
                ])
        }
        // Every device whose registration is valid: the four that kept the app.
        let all = try await push("all")
        #expect(all.status == 0, "\(all)")
        let summary = try JSONSerialization.jsonObject(with: Data(all.stdout.utf8)) as? [String: Any]
        #expect(summary?["sent"] as? Int == 4 && summary?["results"] as? [String: Int] == ["200": 4], "\(all)")
        // One device: its token.
        let one = try await push("bulk-3")
        let answer = try JSONSerialization.jsonObject(with: Data(one.stdout.utf8)) as? [String: Any]
        #expect(one.status == 0 && answer?["status"] as? Int == 200, "\(one)")
        // A device that removed the app has no token to send to.
        let none = try await push("bulk-0")
        #expect(none.status != 0 && none.stderr.contains("device bulk-0 does not have \(Self.app)"), "\(none)")
        // Each of the four offline devices keeps its newest push (APNs keeps one per app).
        #expect(try await gateway.gateway.router.offline.store.storedCount() == 4)
        #expect(tokens.count == 5)
        await gateway.stop()
    }

    @Test func aBulkSendRefusesWhatItCannotDo() async throws {
        for (arguments, message) in [
            (["--token", "ab", "--tokens-file", "x"], "give one of --token, --tokens-file and --device"),
            (["--device", "all", "--token", "ab"], "give one of --token, --tokens-file and --device"),
            (["--rate=-1"], "--rate must not be negative"),
            (["--rate=1e-10"], "--rate must be 0 (no limit) or at least 0.001 a second"),
            (["--timeout=1e16"], "--timeout must be more than 0 seconds and at most a year"),
            (["--concurrency", "0"], "--concurrency must be at least 1"),
            (["--connections", "0"], "--connections must be at least 1"),
            (["--admin", "http://127.0.0.1:1"], "--admin and --admin-token-file go with --device"),
        ] {
            let run = try await runOffThread(try heraldExecutable().path, ["push", "--alert", "x"] + arguments)
            #expect(run.status != 0 && run.stderr.contains(message), "\(arguments): \(run.stderr) \(run.stdout)")
        }
    }

    static let pty = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Clients/pty_run.py").path
}

/// `run`, on a thread of its own: a test that waits for a process on one of Swift concurrency's few
/// threads would starve the gateway it runs in the same process.
func runOffThread(_ executable: String, _ arguments: [String]) async throws
    -> (status: Int32, stdout: String, stderr: String)
{
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try run(executable, arguments) }) }
    }
}
