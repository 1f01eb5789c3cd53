import ArgumentParser
import Crypto
import Foundation
import HeraldCore
import HeraldGateway
import HeraldRuntime
import HeraldProvider
import Logging
import NIOCore

extension APNsEnvironment: ExpressibleByArgument {}
extension SQLiteGatewayStore.Durability: ExpressibleByArgument {}

struct GatewayCommand: AsyncParsableCommand {
    @Option(name: .long, help: "State directory.")
    var state = ".herald/gateway"
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Address every listener binds (the development listener stays on loopback). Off loopback, network "
                + "clients get TLS only: the provider API, the device link, and the admin API (over TLS, with its token).",
            valueName: "address"))
    var listen = "127.0.0.1"
    @Flag(name: .long, help: "Do not open the development listener.")
    var noDev = false
    @OptionGroup(title: "Ports") var ports: GatewayPorts
    @Option(name: .long, help: "Environment of requests whose host names none (development or production).")
    var environment: APNsEnvironment = .development
    @Option(
        name: .long, help: "Pushes per second allowed to one device token before 429 TooManyRequests (0 = no limit).")
    var tokenRate: Double = 0
    @Option(name: .long, help: "Burst allowed to one device token.")
    var tokenBurst: Double = 100
    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Serve the test API on the admin listener (/test/…: wait for a push's state, what a device received, a reset "
                + "that erases devices, pushes and logs; docs/testing.md). For test gateways only."))
    var testApi = false
    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Refuse pushes Apple would accept and then handle quietly (a background push with an alert, a badge "
                + "as a string, …): 400 with the warning as the reason, instead of 200 with a herald-warnings header."))
    var strict = false
    @Option(name: .long, help: "Notifications kept per device and topic while the device is offline (APNs keeps 1).")
    var offlineDepth = 1
    @Option(
        name: .long,
        help: """
            How many provider requests may wait for the store at once (pushes to store for devices that are \
            offline or did not acknowledge in time); past it, or past 64 MiB of their payloads, a push that \
            must be stored is answered 503 ServiceUnavailable at once and kept nowhere, and the provider sends \
            it again later (0 = no limit on their number; the limit on their bytes stays).
            """)
    var storeQueue = GroupCommitter.Limits().requests
    @Option(name: .long, help: "SQLite durability: full (survives power loss) or normal (survives a killed process).")
    var durability: SQLiteGatewayStore.Durability = .full
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Where the gateway's data lives: sqlite (gateway.sqlite in the state directory) or a "
                + "postgres://user[:password]@host[:port]/database URL that the nodes of a cluster share "
                + "(docs/cluster.md). Default: $HERALD_DATABASE when set, else sqlite.",
            valueName: "sqlite|url"))
    var database: String?
    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --database postgres://…: the host name or IP address other nodes reach this node's TLS provider "
                + "API at, to forward pushes for devices linked here (default: the --listen address; loopback for "
                + "0.0.0.0).",
            valueName: "host"))
    var clusterAddress: String?
    @Flag(name: .long, help: "Do not open the legacy binary interface and feedback service.")
    var noLegacy = false
    @Flag(name: .long, help: "Do not open the channel management listeners.")
    var noChannels = false
    @Option(
        name: .long,
        help: "Seconds a provider's answer waits for a connected device's acknowledgement before the push is stored.")
    var ackTimeout: Double = 2
    @Option(name: .long, help: "Seconds a priority-5 push may wait to go to a device with others (0 = at once).")
    var batchWindow: Double = 1
    @Option(name: .long, help: "Background pushes per app per device per hour; more are held back.")
    var backgroundBudget = 3
    @Option(
        name: .long,
        help: """
            Seconds a provider connection (HTTP/2, HTTP/1.1 or binary) may stay idle (nothing from the client, \
            no request in flight) before the gateway closes it, over HTTP/2 with GOAWAY {"reason":"IdleTimeout"} \
            (0 = never). Until its provider authenticates (a usable client certificate, an accepted token or \
            the cluster's credential), nothing a connection sends counts, PINGs included, but an answer a fault \
            rule gives, so one that never does is closed this long after it opened.
            """)
    var idleTimeout: Double = 3600
    @Option(
        name: .long,
        help: """
            Seconds a new connection on any listener has to send its first complete request (TLS handshake, \
            protocol, request head; device link: the signed hello) before it is closed; also the time a \
            started HTTP/1.1 request or binary frame has to arrive whole.
            """)
    var firstBytesTimeout: Double = 10
    @Option(
        name: .long,
        help: """
            Seconds a device link may be silent: after half of it the gateway pings the device, after all of it \
            the link is closed (0 = never).
            """)
    var linkIdleTimeout: Double = 600
    @Option(
        name: .long,
        help: """
            How many connections one IPv4 address or IPv6 /64 prefix may hold open on each provider listener \
            (provider API, channel management, binary and feedback; not the loopback-only development \
            listeners); one more is closed at once (0 = no limit). On a cluster, allow other nodes their \
            --threads (summed for nodes that share an address or /64 prefix).
            """)
    var maxConnectionsPerAddress = 0
    @Option(
        name: .long,
        help: """
            How many connections one IPv4 address or IPv6 /64 prefix may hold open on the device link; one \
            more is closed at once and logged (0 = no limit; devices behind one NAT, or in one IPv6 network, \
            share it).
            """)
    var linkMaxConnectionsPerAddress = 0
    @Option(
        name: .long,
        help: """
            Hours a device's resumption ticket is accepted in place of a signature when it connects again \
            (0 = no tickets: every device signs); renewed tickets end four times this after the device \
            last signed.
            """)
    var linkTicketHours: Double = 168
    @Option(
        name: .long,
        help: """
            Seconds over which the devices of a stopping gateway are told to come back (each waits a random \
            part of it, then connects to another node if it knows one; 0 = at once).
            """)
    var drainWindow: Double = 10
    @Option(name: .long, help: "Seconds an admin API connection may stay idle between requests (0 = never).")
    var adminIdleTimeout: Double = 60
    @Option(name: .long, help: "Event-loop threads for provider connections (default: one per core).")
    var threads = Gateway.Configuration().providerThreads
    @Option(
        name: .long,
        help: "Event-loop threads for device links, apart from --threads (default: half the cores, at least 1).")
    var linkThreads = Gateway.Configuration().linkThreads
    @Option(
        name: .long,
        help: "Days the delivery log keeps each push (the console's history); older ones are purged hourly.")
    var logRetentionDays: Double = 30
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Write the provider API's traffic, after TLS, to this file as a packet capture for tshark or Wireshark.",
            discussion:
                "For debugging a provider's client. The file holds tokens and payloads; it is readable by its owner only.",
            valueName: "file"))
    var capture: String?
    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel = "info"
    @OptionGroup var service: ServiceOptions

    func validate() throws {
        guard logRetentionDays > 0 else { throw ValidationError("--log-retention-days must be more than 0") }
        guard ackTimeout > 0 else { throw ValidationError("--ack-timeout must be more than 0 seconds") }
        guard batchWindow >= 0 else { throw ValidationError("--batch-window must not be negative") }
        guard backgroundBudget >= 0 else { throw ValidationError("--background-budget must not be negative") }
        guard offlineDepth >= 1 else { throw ValidationError("--offline-depth must be at least 1") }
        guard storeQueue >= 0 else { throw ValidationError("--store-queue must not be negative") }
        guard tokenRate >= 0 else { throw ValidationError("--token-rate must not be negative") }
        guard idleTimeout >= 0 else { throw ValidationError("--idle-timeout must not be negative") }
        guard firstBytesTimeout > 0 else { throw ValidationError("--first-bytes-timeout must be more than 0 seconds") }
        guard linkIdleTimeout >= 0 else { throw ValidationError("--link-idle-timeout must not be negative") }
        guard maxConnectionsPerAddress >= 0 else {
            throw ValidationError("--max-connections-per-address must not be negative")
        }
        guard linkMaxConnectionsPerAddress >= 0 else {
            throw ValidationError("--link-max-connections-per-address must not be negative")
        }
        guard linkTicketHours >= 0 else { throw ValidationError("--link-ticket-hours must not be negative") }
        guard linkTicketHours == 0 || linkTicketHours * 3600 >= 1 else {
            throw ValidationError("--link-ticket-hours must be 0 (no tickets) or at least a second (0.0003)")
        }
        // Durations past a century are refused rather than turned into nanoseconds that overflow;
        // `!(x <= limit)` also catches inf and nan, which the option parser takes.
        for (name, seconds) in [
            ("--ack-timeout", ackTimeout), ("--batch-window", batchWindow), ("--idle-timeout", idleTimeout),
            ("--first-bytes-timeout", firstBytesTimeout), ("--link-idle-timeout", linkIdleTimeout),
            ("--link-ticket-hours", linkTicketHours * 3600), ("--drain-window", drainWindow),
            ("--admin-idle-timeout", adminIdleTimeout), ("--log-retention-days", logRetentionDays * 86400),
        ] where !(seconds <= Self.longestDuration) {
            throw ValidationError("\(name) must be at most a century")
        }
        guard drainWindow >= 0 else { throw ValidationError("--drain-window must not be negative") }
        guard adminIdleTimeout >= 0 else { throw ValidationError("--admin-idle-timeout must not be negative") }
        guard !listen.isEmpty else { throw ValidationError("--listen needs an address, such as 127.0.0.1 or 0.0.0.0") }
        if let clusterAddress, clusterAddress.isEmpty || clusterAddress.contains(where: { $0 == "/" || $0 == " " }) {
            throw ValidationError(
                "--cluster-address needs a host name or IP address, such as 10.0.0.7, not '\(clusterAddress)'")
        }
        if let capture, capture.isEmpty { throw ValidationError("--capture needs a file path") }
        guard threads >= 1 else { throw ValidationError("--threads must be at least 1") }
        guard linkThreads >= 1 else { throw ValidationError("--link-threads must be at least 1") }
        try validateLogLevel(logLevel)
        _ = try databaseURL()
    }

    /// The PostgreSQL URL to use, or `nil` for SQLite: `--database` (which `$HERALD_DATABASE` sets
    /// like every `HERALD_` variable, ``ConfiguredArguments``).
    func databaseURL() throws -> String? {
        let value = database ?? "sqlite"
        if value == "sqlite" { return nil }
        guard value.hasPrefix("postgres://") || value.hasPrefix("postgresql://") else {
            throw ValidationError("--database must be sqlite or a postgres:// URL, not \(PostgresURL.redacted(value))")
        }
        return value
    }

    func run() async throws {
        service.logFormat.bootstrap()
        var logger = Logger(label: "herald.gateway")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        ParentWatch.start(logger: logger)
        var configuration = Gateway.Configuration()
        configuration.stateDirectory = state
        configuration.listenAddress = listen
        configuration.port = ports.port
        configuration.developmentPort = noDev ? nil : ports.devPort
        configuration.adminPort = ports.adminPort
        configuration.environment = environment
        configuration.provider.tokenRate = tokenRate
        configuration.provider.tokenBurst = tokenBurst
        configuration.provider.strict = strict
        configuration.testAPI = testApi
        configuration.provider.idleTimeout = Self.seconds(idleTimeout)
        configuration.firstBytesTimeout = Self.seconds(firstBytesTimeout) ?? .seconds(10)
        configuration.link.firstBytesTimeout = configuration.firstBytesTimeout
        configuration.link.idleTimeout = Self.seconds(linkIdleTimeout)
        configuration.maxConnectionsPerAddress = maxConnectionsPerAddress
        configuration.link.maxConnectionsPerAddress = linkMaxConnectionsPerAddress
        configuration.link.ticketLifetime = Self.seconds(linkTicketHours * 3600)
        configuration.link.drainWindow = .milliseconds(Int64((drainWindow * 1000).rounded()))
        configuration.adminIdleTimeout = Self.seconds(adminIdleTimeout)
        configuration.offline = OfflinePolicy(depth: offlineDepth)
        configuration.storeQueue.requests = storeQueue
        configuration.durability = durability
        configuration.database = try databaseURL()
        configuration.clusterAddress = clusterAddress
        configuration.logRetention = .seconds(logRetentionDays * 86400)
        configuration.providerThreads = threads
        configuration.linkThreads = linkThreads
        configuration.linkPort = ports.linkPort
        configuration.capturePath = capture
        configuration.binaryPort = noLegacy ? nil : ports.binaryPort
        configuration.feedbackPort = noLegacy ? nil : ports.feedbackPort
        configuration.channelsPort = noChannels ? nil : ports.channelsPort
        configuration.channelsDevelopmentPort = noChannels ? nil : ports.channelsDevPort
        configuration.link.acknowledgementTimeout = .nanoseconds(Int64(ackTimeout * 1e9))
        // Sockets systemd handed over (socket activation); the variables are not passed on to any
        // process the gateway starts.
        configuration.inheritedSockets = try InheritedSockets(
            environment: ProcessInfo.processInfo.environment, processID: getpid())
        for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(name) }
        configuration.link.qos = LinkQoS.Configuration(
            batchWindow: .nanoseconds(Int64((batchWindow * 1e9).rounded())), backgroundBudget: backgroundBudget)
        let gateway = try await Gateway.open(configuration, logger: logger)
        try await gateway.run { info in
            var text = "herald gateway ready\n"
            for key in [
                "providerURL", "developmentURL", "linkURL", "linkDevelopmentURL", "binaryAddress", "feedbackAddress",
                "channelsURL", "channelsDevelopmentURL", "adminURL", "caCertificate", "nodeID", "clusterURL",
            ] {
                if let value = info[key] { text += "  \(key): \(value)\n" }
            }
            text += "  admin token: \(gateway.state.adminTokenPath)\n"
            FileHandle.standardOutput.write(Data(text.utf8))
        }
    }
}

extension GatewayCommand {
    /// The longest duration an option may give, in seconds: a hundred years.
    static let longestDuration: Double = 100 * 365.25 * 86400

    /// Seconds from the command line as a duration; 0 is `nil` (never).
    static func seconds(_ value: Double) -> Duration? {
        value > 0 ? .nanoseconds(Int64(value * 1e9)) : nil
    }
}

struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "Provider signing keys.", subcommands: [KeysNew.self, KeysToken.self])
}

struct KeysNew: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "new",
        abstract: "Create a provider key: write its .p8 file and register its public half with a running gateway.",
        discussion:
            "The gateway is found through gateway.json in its state directory (or --admin-url and --admin-token).")

    @Option(name: .long, help: "Team id (10 letters or digits). The team is created if it does not exist.")
    var team: String
    @Option(name: .long, help: "Key id (10 letters or digits); generated when absent.")
    var keyId: String?
    @Option(name: .long, parsing: .upToNextOption, help: "Limit the key to these bundle ids.")
    var topics: [String] = []
    @Option(name: .long, help: "Limit the key to one environment (development or production).")
    var environment: APNsEnvironment?
    @Option(name: .long, help: "Where to write the private key (default AuthKey_<key id>.p8).")
    var out: String?
    @Option(name: .long, help: "The gateway's state directory.")
    var state = ".herald/gateway"
    @Option(name: .long, help: "Admin API URL (overrides gateway.json).")
    var adminURL: String?
    @Option(name: .long, help: "Admin token (overrides the state directory's admin-token).")
    var adminToken: String?
    @Flag(name: .long, help: "Print the result as JSON.")
    var json = false

    func run() async throws {
        let admin = try AdminClient(state: state, url: adminURL, token: adminToken)
        if try await !admin.teams().contains(where: { $0.id == team }) {
            _ = try await admin.createTeam(.init(id: team))
        }
        let key = try await admin.createKey(
            .init(teamID: team, keyID: keyId, topics: topics.isEmpty ? nil : topics, environment: environment))
        guard let pem = key.privateKey else { throw ValidationError("the gateway did not return a key") }
        let keyID = key.keyID
        let path = out ?? "AuthKey_\(keyID).p8"
        guard
            FileManager.default.createFile(
                atPath: path, contents: Data(pem.utf8), attributes: [.posixPermissions: 0o600])
        else { throw ValidationError("could not write \(path)") }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            print(String(decoding: try encoder.encode(["keyID": keyID, "teamID": team, "p8": path]), as: UTF8.self))
        } else {
            print("key \(keyID) for team \(team) registered; private key written to \(path)")
        }
    }
}

struct KeysToken: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print a provider authentication token (ES256 JWT) signed with a .p8 key, for curl and other clients."
    )

    @Option(name: .long, help: "The .p8 private key file.")
    var p8: String
    @Option(name: .long, help: "Key id (10 letters or digits).")
    var keyId: String
    @Option(name: .long, help: "Team id (10 letters or digits).")
    var team: String
    @Option(name: .long, help: "Issued-at time in seconds since 1970 (default now).")
    var issuedAt: Int64?

    func run() throws {
        let pem = try CLIFile.text(p8, for: "--p8")
        let key: P256.Signing.PrivateKey
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw ValidationError("--p8: \(p8) is not a PEM P-256 private key")
        }
        let iat = try issuedAt.map { try unixTime($0, option: "--issued-at") } ?? Date()
        let signing = APNsSigningKey(keyID: keyId, teamID: team, privateKey: key)
        print(try signing.token(issuedAt: iat))
    }
}

/// Checks a `--log-level` option.
func validateLogLevel(_ level: String) throws {
    guard Logger.Level(rawValue: level) != nil else {
        throw ValidationError("--log-level must be trace, debug, info, notice, warning, error or critical")
    }
}
