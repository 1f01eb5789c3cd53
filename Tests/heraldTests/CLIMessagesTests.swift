import Crypto
import Foundation
import Testing

/// What a person meets at the terminal: help examples that paste whole, and errors that say what is
/// missing, where it was looked for, and what to do about it.
@Suite(.ownThread) struct CLIMessagesTests {
    /// The commands whose help shows examples.
    static let helped: [[String]] = [
        ["push"], ["channel"], ["app"], ["respond"], ["feedback"], ["up"], ["gateway"], ["trigger", "next"],
        ["device", "focus"], ["device", "summary"], ["device", "clock"], ["keys", "new"],
    ]

    @Test func everyHelpExampleFitsEightyColumnsOrContinuesOnTheNextLine() throws {
        for command in Self.helped {
            // A wide terminal: the help comes as written, not wrapped by the parser.
            let help = try run("/usr/bin/env", ["COLUMNS=500", try heraldExecutable().path] + command + ["--help"])
            #expect(help.status == 0, "\(command): \(help.stderr)")
            var continued = false
            for line in help.stdout.split(separator: "\n", omittingEmptySubsequences: false) {
                let text = line.trimmingCharacters(in: .whitespaces)
                if continued || text.hasPrefix("herald ") {
                    #expect(
                        line.count <= 80,
                        "herald \(command.joined(separator: " ")) --help, \(line.count) columns: \(line)")
                }
                continued = text.hasSuffix("\\")
            }
        }
    }

    @Test func withoutUpJSONACommandSaysWhatIsMissingAndWhereItLooked() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-no-up-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let looked = "no \(directory.path)/.herald/up.json from `herald up`"
        for (arguments, missing) in [
            (["push", "--alert", "Hi"], "--topic is required"),
            (["push", "--alert", "Hi", "--topic", "com.example.app"], "--url is required"),
            (["channel", "list"], "--topic is required"),
            (["feedback"], "give the service's host:port"),
        ] {
            // Run in the empty directory, as a person who has not started `herald up` there.
            let result = try run(
                "/bin/sh",
                ["-c", #"cd "$1" && shift && exec "$@""#, "sh", directory.path, try heraldExecutable().path]
                    + arguments)
            #expect(result.status != 0)
            #expect(result.stderr.contains(missing), "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(looked), "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("run `herald up` in this directory, or pass --up"), "\(result.stderr)")
        }
    }

    /// A command for a running gateway, given a state directory where none runs: an error that names
    /// the file it looked for, with status 1 and without the usage text (its command line was right).
    @Test func withoutARunningGatewayACommandNamesTheFileItLookedFor() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("herald-no-gateway-\(UUID())")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: state) }
        let missing = "no running gateway found: \(state.path)/gateway.json is missing"
        for (arguments, hint) in [
            (["keys", "new", "--team", "T1", "--state", state.path], "pass --state or --admin-url"),
            (["test-device", "--gateway-state", state.path], "pass --gateway-state or --gateway"),
        ] {
            let result = try run(try heraldExecutable().path, arguments)
            #expect(result.status == 1, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("\(missing); \(hint)"), "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("Usage:"), "\(arguments): \(result.stderr)")
        }
        // With the gateway's address given but no token anywhere: the token file it looked for.
        let result = try run(
            try heraldExecutable().path,
            ["keys", "new", "--team", "T1", "--state", state.path, "--admin-url", "http://127.0.0.1:9"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr.contains("no admin token: \(state.path)/admin-token is missing; pass --admin-token"),
            "\(result.stderr)")
        #expect(!result.stderr.contains("Usage:"), "\(result.stderr)")
    }

    @Test func anAppThatIsNotInstalledIsNamedWithHowToInstallIt() throws {
        let device = try DeviceProcess()
        defer { _ = device.stop() }
        let result = try run(try heraldExecutable().path, ["app", "com.nope.app", "pending"] + device.location)
        #expect(result.status != 0)
        #expect(result.stderr.contains("com.nope.app is not installed"), "\(result.stderr)")
        #expect(result.stderr.contains("herald device install com.nope.app"), "\(result.stderr)")
        #expect(!result.stderr.contains("Herald 1"), "\(result.stderr)")
    }

    /// A file an option names that cannot be read is named with the option and why; one that is no
    /// key says so. Never Foundation's dump of an `NSError`.
    @Test func aFileThatCannotBeReadIsNamedWithItsOptionAndWhy() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-files-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let missing = directory.appendingPathComponent("missing.p8").path
        let notAKey = directory.appendingPathComponent("not-a-key.p8").path
        try Data("hello\n".utf8).write(to: URL(fileURLWithPath: notAKey))
        let key = directory.appendingPathComponent("key.p8").path
        try Data(P256.Signing.PrivateKey().pemRepresentation.utf8).write(to: URL(fileURLWithPath: key))
        // Nothing listens here: every case must fail on its file, before any connection.
        let push = [
            "push", "--url", "https://127.0.0.1:9", "--key-id", "ABC1234567", "--team", "DEF1234567", "--topic",
            "com.example.app", "--alert", "Hi",
        ]
        let token = ["--token", String(repeating: "ab", count: 32)]
        for (arguments, expected) in [
            (push + token + ["--p8", missing], "--p8: cannot read \(missing): no such file or directory"),
            (push + token + ["--p8", directory.path], "--p8: cannot read \(directory.path): is a directory"),
            (push + token + ["--p8", notAKey], "--p8: \(notAKey) is not a PEM P-256 private key"),
            (push + token + ["--p8", key, "--ca", missing], "--ca: cannot read \(missing): no such file or directory"),
            (push + ["--p8", key, "--tokens-file", missing], "--tokens-file: cannot read \(missing): no such"),
            (push + token + ["--p8", key, missing], "the .apns file: cannot read \(missing): no such file"),
            (
                ["keys", "token", "--p8", missing, "--key-id", "ABC1234567", "--team", "DEF1234567"],
                "--p8: cannot read"
            ),
            // A time no payload or token can carry is refused by name, not trapped on.
            (
                push + token + ["--p8", key, "--live-activity", "update", "--timestamp", "9223372036854775807"],
                "--timestamp must be UNIX seconds from 0 to 253402300799 (the end of 9999), not 9223372036854775807"
            ),
            (
                push + token + ["--p8", key, "--live-activity", "end", "--dismissal-date=-1"],
                "--dismissal-date must be"
            ),
            (
                push + token + ["--p8", key, "--live-activity", "update", "--stale-date", "253402300800"],
                "--stale-date must be"
            ),
            (
                [
                    "keys", "token", "--p8", key, "--key-id", "ABC1234567", "--team", "DEF1234567", "--issued-at",
                    "9223372036854775807",
                ],
                "--issued-at must be UNIX seconds from 0"
            ),
        ] {
            let result = try run(try heraldExecutable().path, arguments)
            #expect(result.status != 0, "\(arguments)")
            #expect(result.stderr.contains(expected), "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("Domain"), "\(arguments): \(result.stderr)")
        }
        // A key saved with a byte order mark is still a key: the push gets as far as connecting.
        let marked = directory.appendingPathComponent("marked.p8").path
        try Data([0xEF, 0xBB, 0xBF] + Array(P256.Signing.PrivateKey().pemRepresentation.utf8))
            .write(to: URL(fileURLWithPath: marked))
        let result = try run(try heraldExecutable().path, push + token + ["--p8", marked])
        #expect(result.status != 0)
        #expect(result.stderr.contains("could not connect to https://127.0.0.1:9"), "\(result.stderr)")
        // `keys token` reads its key the same way.
        let jwt = try run(
            try heraldExecutable().path,
            ["keys", "token", "--p8", marked, "--key-id", "ABC1234567", "--team", "DEF1234567"])
        #expect(jwt.status == 0, "\(jwt.stderr)")
        #expect(jwt.stdout.split(separator: ".").count == 3, "\(jwt.stdout)")
    }

    /// A gateway that cannot be reached is a failure of the run, not of the command line: the
    /// reason as a person reads it, and no usage after it.
    @Test func anUnreachableGatewayIsSaidPlainlyWithoutUsage() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-unreachable-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("key.p8").path
        try Data(P256.Signing.PrivateKey().pemRepresentation.utf8).write(to: URL(fileURLWithPath: key))
        // A free port below the ephemeral range: nothing listens on it.
        let port = try portOutsideTheEphemeralRange()
        let result = try run(
            try heraldExecutable().path,
            [
                "push", "--url", "https://127.0.0.1:\(port)", "--p8", key, "--key-id", "ABC1234567", "--team",
                "DEF1234567", "--topic", "com.example.app", "--token", String(repeating: "ab", count: 32), "--alert",
                "Hi",
            ])
        #expect(result.status == 1, "\(result)")
        #expect(
            result.stderr.contains("could not connect to https://127.0.0.1:\(port): connection refused"),
            "\(result.stderr)")
        #expect(!result.stderr.contains("Usage:"), "\(result.stderr)")
        #expect(!result.stderr.contains("SingleConnectionFailure"), "\(result.stderr)")
        // The admin API's client says it the same way, at once: it does not try again until the
        // request's timeout (it took a minute and a half).
        let started = Date()
        let admin = try run(
            try heraldExecutable().path,
            ["gateway", "faults", "list", "--admin-url", "http://127.0.0.1:\(port)", "--admin-token", "x"])
        #expect(admin.status == 1, "\(admin)")
        #expect(
            admin.stderr.contains("Error: GET http://127.0.0.1:\(port)/faults: connection refused"), "\(admin.stderr)")
        #expect(!admin.stderr.contains("Usage:"), "\(admin.stderr)")
        #expect(Date().timeIntervalSince(started) < 30)
    }
}
