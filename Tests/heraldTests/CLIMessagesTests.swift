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

    @Test func anAppThatIsNotInstalledIsNamedWithHowToInstallIt() throws {
        let device = try DeviceProcess()
        defer { _ = device.stop() }
        let result = try run(try heraldExecutable().path, ["app", "com.nope.app", "pending"] + device.location)
        #expect(result.status != 0)
        #expect(result.stderr.contains("com.nope.app is not installed"), "\(result.stderr)")
        #expect(result.stderr.contains("herald device install com.nope.app"), "\(result.stderr)")
        #expect(!result.stderr.contains("Herald 1"), "\(result.stderr)")
    }
}
