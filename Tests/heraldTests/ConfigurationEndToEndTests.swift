import Foundation
import HeraldRuntime
import Testing

/// The configuration file, the environment and the flags of `herald gateway`, `herald device` and
/// `herald up`, through the real executable: what wins, what `--print-config` says, and how a bad
/// setting is refused.
@Suite(.serialized, .ownThread) struct ConfigurationEndToEndTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-config-\(UUID())")

    /// Writes `text` as a configuration file; returns its path.
    func file(_ text: String, name: String = "gateway.toml") throws -> String {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The line `--print-config` printed for `key`.
    func line(_ key: String, in output: String) -> String? {
        output.split(separator: "\n").map(String.init).first {
            $0.hasPrefix("\(key) = ") || $0 == "# \(key): not set"
        }
    }

    @Test func flagsWinOverTheEnvironmentWhichWinsOverTheFile() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let state = directory.appendingPathComponent("state").path
        let config = try file(
            """
            # Herald's gateway
            state = "\(state)"
            port = 3197
            admin-port = 9000
            no-dev = true
            link-ticket-hours = 24
            database = "postgres://herald:s3cret@db.example:5432/herald"
            """)
        let printed = try run(
            try heraldExecutable().path, ["gateway", "--config", config, "--admin-port", "9090", "--print-config"],
            environment: ["HERALD_PORT": "4197", "HERALD_THREADS": "3", "HERALD_NO_DEV": "false"])
        #expect(printed.status == 0, "\(printed.stderr)")
        let out = printed.stdout
        #expect(out.contains("# configuration file: \(config)"))
        #expect(line("state", in: out)?.hasSuffix("# file \(config):2") == true, "\(out)")
        #expect(line("port", in: out)?.hasPrefix("port = 4197 ") == true, "the environment over the file: \(out)")
        #expect(line("port", in: out)?.hasSuffix("# environment HERALD_PORT") == true)
        #expect(line("admin-port", in: out)?.hasSuffix("= 9090") == false)
        #expect(line("admin-port", in: out)?.hasPrefix("admin-port = 9090 ") == true, "the flag over the file")
        #expect(line("admin-port", in: out)?.hasSuffix("# command line") == true)
        #expect(line("no-dev", in: out)?.hasPrefix("no-dev = false ") == true, "HERALD_NO_DEV=false over the file")
        #expect(line("link-ticket-hours", in: out)?.hasPrefix("link-ticket-hours = 24 ") == true)
        #expect(line("link-ticket-hours", in: out)?.hasSuffix("# file \(config):6") == true)
        #expect(line("threads", in: out)?.hasSuffix("# environment HERALD_THREADS") == true)
        #expect(line("listen", in: out)?.hasPrefix("listen = \"127.0.0.1\" ") == true)
        #expect(line("listen", in: out)?.hasSuffix("# default") == true)
        #expect(line("cluster-address", in: out) == "# cluster-address: not set")
        #expect(!out.contains("s3cret"), "the database password is hidden")
        #expect(line("database", in: out)?.contains("postgres://herald:***@db.example:5432/herald") == true, "\(out)")
        #expect(!FileManager.default.fileExists(atPath: state), "printing the configuration starts nothing")
    }

    /// Settings from `HERALD_CONFIG`'s file and the environment alone take effect in a running gateway.
    @Test func aGatewayRunsOnTheFileAndTheEnvironment() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = try file(
            """
            log-format = "json"
            no-legacy = true
            """)
        let gateway = try GatewayProcess(
            environment: ["HERALD_CONFIG": config, "HERALD_NO_CHANNELS": "yes"])
        #expect(gateway.info.binaryAddress == nil, "no-legacy from the file")
        #expect(gateway.info.channelsURL == nil, "HERALD_NO_CHANNELS")
        #expect(gateway.info.developmentURL != nil)
        #expect(gateway.stop() == 0)
        let first = try #require(gateway.log.split(separator: "\n").first)
        #expect(first.hasPrefix("{\"time\":"), "log-format json from the file: \(first)")
    }

    @Test(arguments: [
        ("prot = 1", "gateway.toml:2: unknown key 'prot': herald gateway has no --prot (did you mean port?)"),
        (#"threads = "two""#, #"gateway.toml:2: threads: expected an integer, found a string ("two")"#),
        ("threads = 0", "gateway.toml:2: threads: --threads must be at least 1"),
        ("idle-timeout = -1", "gateway.toml:2: idle-timeout: --idle-timeout must not be negative"),
        (#"log-format = "xml""#, "gateway.toml:2: log-format: The value 'xml' is invalid for '--log-format"),
        ("no-dev = 1", "gateway.toml:2: no-dev: expected true or false, found an integer (1)"),
        (#"listen = ["0.0.0.0"]"#, "gateway.toml:2: listen: takes one value, a string, not a list"),
        ("[gateway]\nport = 1", "gateway.toml:2: gateway: tables are not used"),
        ("port = ", "gateway.toml:2:8: "),
    ])
    func aBadFileIsRefusedNamingTheLineAndTheKey(setting: String, message: String) throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let state = directory.appendingPathComponent("state").path
        let config = try file("state = \"\(state)\"\n\(setting)\n")
        let result = try run(try heraldExecutable().path, ["gateway", "--config", config])
        #expect(result.status != 0)
        #expect(result.stderr.hasPrefix("Error: \(directory.path)/\(message)"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: state), "refused before anything was created")
    }

    @Test(arguments: [
        ("HERALD_THREADS", "two", "HERALD_THREADS: expected an integer, not 'two'"),
        ("HERALD_THREADS", "0", "HERALD_THREADS: --threads must be at least 1"),
        ("HERALD_NO_DEV", "maybe", "HERALD_NO_DEV: expected true or false, not 'maybe'"),
        ("HERALD_ACK_TIMEOUT", "soon", "HERALD_ACK_TIMEOUT: expected a number, not 'soon'"),
        ("HERALD_CONFIG", "/nonexistent/gateway.toml", "/nonexistent/gateway.toml: cannot read the configuration file"),
    ])
    func aBadVariableIsRefusedByName(variable: String, value: String, message: String) throws {
        let state = directory.appendingPathComponent("state").path
        let result = try run(
            try heraldExecutable().path, ["gateway", "--state", state], environment: [variable: value])
        #expect(result.status != 0)
        #expect(result.stderr.hasPrefix("Error: \(message)"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: state))
    }

    /// The device's lists come from one comma-separated variable; its passcode is a secret.
    @Test func theDeviceReadsListsAndHidesItsPasscode() throws {
        let result = try run(
            try heraldExecutable().path, ["device", "--print-config"],
            environment: [
                "HERALD_GATEWAY": "ws://127.0.0.1:5223/device/v1, ws://127.0.0.1:5233/device/v1",
                "HERALD_PASSCODE": "482915",
            ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            line("gateway", in: result.stdout)?.hasPrefix(
                #"gateway = ["ws://127.0.0.1:5223/device/v1", "ws://127.0.0.1:5233/device/v1"]"#) == true,
            "\(result.stdout)")
        #expect(!result.stdout.contains("482915"))
        #expect(line("passcode", in: result.stdout)?.contains("(secret hidden)") == true)
    }

    /// `herald up`'s variables are its own: its gateway and device do not read them (a
    /// `HERALD_LINK_TICKET_HOURS` the gateway would refuse does not stop them), and a file sets up's
    /// options.
    @Test func upKeepsItsVariablesFromItsChildren() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = try file(#"app = "dev.herald.configured""#, name: "up.toml")
        let state = directory.appendingPathComponent("up")
        let up = try UpEndToEndTests.Up(
            state: state, environment: ["HERALD_CONFIG": config, "HERALD_LINK_TICKET_HOURS": "never"])
        #expect(up.info.topic == "dev.herald.configured", "\(up.banner)")
        #expect(up.stop() == 0)
    }

    /// The example configuration the packages install is valid as it is, and with every default it
    /// shows in comments turned on.
    @Test func theExampleConfigurationIsValid() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("packaging/gateway.toml").path
        let asShipped = try run(try heraldExecutable().path, ["gateway", "--config", example, "--print-config"])
        #expect(asShipped.status == 0, "\(asShipped.stderr)")
        #expect(line("state", in: asShipped.stdout)?.hasPrefix(#"state = "/var/lib/herald""#) == true)
        // `# key = value` lines are the defaults, commented out: each is a real key of the right kind.
        let text = try String(contentsOfFile: example, encoding: .utf8)
        var turnedOn = 0
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard line.wholeMatch(of: /# [a-z][a-z-]* = .*/) != nil else { return String(line) }
            turnedOn += 1
            return String(line.dropFirst(2))
        }
        #expect(turnedOn >= 25)
        let everything = try file(lines.joined(separator: "\n"))
        let all = try run(try heraldExecutable().path, ["gateway", "--config", everything, "--print-config"])
        #expect(all.status == 0, "\(all.stderr)")
        #expect(line("port", in: all.stdout)?.hasSuffix("# file \(everything):18") == true, "\(all.stdout)")
    }
}
