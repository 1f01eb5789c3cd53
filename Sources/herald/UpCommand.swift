import ArgumentParser
import Dispatch
import Foundation
import HeraldCore
import HeraldKit
import HeraldProvider
import HeraldRuntime
import Logging
import ServiceLifecycle

struct UpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "up",
        abstract: "Start a whole Herald on loopback: a push service, one device with a demo app, and a curl command.",
        discussion: """
            The first start makes a development CA, an admin token, a demo team, key (.p8) and app, and a \
            device with the demo app installed (it asks for alert, sound and badge and registers for remote \
            notifications). Later starts reuse all of it. Everything is written to <state>/up.json; the \
            processes' logs go to <state>/gateway.log and <state>/device.log. Presentations are printed here. \
            Ctrl-C stops everything.
            """)

    @Option(name: .long, help: "State directory (the gateway's and the device's live inside it).")
    var state = ".herald"
    @Option(name: .long, help: "Port of the gateway's TLS provider API (0 = any free port).")
    var port = 2197
    @Option(name: .long, help: "Port of the gateway's development listener, h2c and HTTP/1.1 (0 = any free port).")
    var devPort = 2198
    @Option(name: .long, help: "Port of the device link (0 = any free port).")
    var linkPort = 5223
    @Option(name: .long, help: "Port of the gateway's admin API (0 = any free port).")
    var adminPort = 8080
    @Option(name: .long, help: "Port of the legacy binary provider interface, on loopback (0 = any free port).")
    var binaryPort = 2195
    @Option(name: .long, help: "Port of the legacy feedback service, on loopback (0 = any free port).")
    var feedbackPort = 2196
    @Option(name: .long, help: "Port of the channel management API over TLS (0 = any free port).")
    var channelsPort = 2295
    @Option(name: .long, help: "Port of the channel management API in cleartext, on loopback (0 = any free port).")
    var channelsDevPort = 2296
    @Option(name: .long, help: "Port of the device API (0 = any free port).")
    var devicePort = 8081
    @Option(name: .long, help: "The demo app's bundle id (its topic).")
    var app = "dev.herald.demo"
    @Option(name: .long, help: "The device's time zone (default: the system's).")
    var timeZone: String?
    @Flag(
        name: .long,
        help: ArgumentHelp(
            "The device's clock stands still and moves only when told (herald device clock --advance): for tests "
                + "and demos of schedules, Focus and Scheduled Summary."))
    var manualClock = false
    @Option(name: .long, help: "With --manual-clock: the time the device starts at (ISO 8601 with offset).")
    var startTime: String?
    @Option(
        name: .customLong("install"),
        help: ArgumentHelp(
            "Also install an app of yours: BUNDLE=EXECUTABLE (repeatable). Its topic joins the demo team, so a push "
                + "signed with the demo key reaches it once it registers.", valueName: "bundle=executable"))
    var installs: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Gateway nodes to start, 1 to 9. More than one share a PostgreSQL database (--database, or a private "
                + "server in <state>/postgres); node k keeps its state in <state>/gateway-k and listens on each "
                + "port plus 10×(k−1). The device links to the last node.", valueName: "n"))
    var nodes = 1
    @Option(
        name: .long,
        help: ArgumentHelp(
            "PostgreSQL URL for the gateways (postgres://user[:password]@host[:port]/database). Default with "
                + "--nodes above 1: a private server started with initdb and pg_ctl in <state>/postgres.",
            valueName: "url"))
    var database: String?

    static let team = "HERALDDEMO"

    func validate() throws {
        guard (1...9).contains(nodes) else { throw ValidationError("--nodes: between 1 and 9, not \(nodes)") }
        if let timeZone, TimeZone(identifier: timeZone) == nil {
            throw ValidationError("--time-zone: unknown time zone '\(timeZone)'")
        }
        if let startTime {
            guard manualClock else { throw ValidationError("--start-time needs --manual-clock") }
            _ = try parseDate(startTime, field: "--start-time")
        }
        for install in installs {
            guard let (bundle, path) = Self.install(install), !bundle.isEmpty, !path.isEmpty else {
                throw ValidationError("--install: '\(install)' is not BUNDLE=EXECUTABLE")
            }
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw ValidationError("--install: \(path) is not an executable file")
            }
        }
    }

    /// `BUNDLE=EXECUTABLE`, the executable made absolute.
    static func install(_ text: String) -> (String, String)? {
        guard let equals = text.firstIndex(of: "=") else { return nil }
        let path = String(text[text.index(after: equals)...])
        return (String(text[..<equals]), URL(fileURLWithPath: path).standardizedFileURL.path)
    }

    func run() async throws {
        let root = URL(fileURLWithPath: state).standardizedFileURL
        // First of all: another `herald up` on this directory is refused before anything changes.
        let lock = try StateDirectoryLock(directory: root, role: "herald up")
        defer { withExtendedLifetime(lock) {} }
        let gatewayState = root.appendingPathComponent("gateway")
        let deviceState = root.appendingPathComponent("device")
        let executable = currentExecutable()
        let children = Children()

        // One service: start the children, set them up, watch them. On SIGINT/SIGTERM (graceful
        // shutdown of the group) it stops them in order, the device first; a child that stops by
        // itself ends `up` with an error.
        let (events, sink) = AsyncStream.makeStream(of: String.self)
        let up = UpService { [self] in
            try await self.start(
                root: root, gatewayState: gatewayState, deviceState: deviceState, executable: executable,
                children: children, events: events, sink: sink)
        } shutdown: {
            sink.yield(Self.shutdownEvent)
        }
        var logger = Logger(label: "herald.up")
        logger.logLevel = .warning
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: up)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }

    /// What the service's events carry when the group shuts down.
    static let shutdownEvent = "shutdown"

    func start(
        root: URL, gatewayState: URL, deviceState: URL, executable: String, children: Children,
        events: AsyncStream<String>, sink: AsyncStream<String>.Continuation
    ) async throws {
        let database = try await startDatabase(root: root, children: children)
        var nodeInfos: [[String: Any]] = []
        for node in 1...nodes {
            let state = node == 1 ? gatewayState : root.appendingPathComponent("gateway-\(node)")
            let log = root.appendingPathComponent(node == 1 ? "gateway.log" : "gateway-\(node).log")
            do {
                try FileManager.default.removeItem(at: state.appendingPathComponent("gateway.json"))
            } catch {}
            // Node k's ports are node 1's plus 10×(k−1); 0 stays "any free port".
            func shifted(_ port: Int) -> String { port == 0 ? "0" : String(port + 10 * (node - 1)) }
            let name = nodes == 1 ? "gateway" : "gateway node \(node)"
            // One after the other: the first node's secrets become the cluster's, the others take them.
            let gateway = try children.start(
                name, executable: executable,
                arguments: [
                    "gateway", "--state", state.path, "--port", shifted(port), "--dev-port", shifted(devPort),
                    "--link-port", shifted(linkPort), "--admin-port", shifted(adminPort), "--binary-port",
                    shifted(binaryPort), "--feedback-port", shifted(feedbackPort), "--channels-port",
                    shifted(channelsPort), "--channels-dev-port", shifted(channelsDevPort), "--log-level", "notice",
                ] + (database.map { ["--database", $0.url] } ?? []),
                log: log, stdout: false, events: sink)
            nodeInfos.append(
                try await Self.waitForRuntime(
                    state.appendingPathComponent("gateway.json"), process: gateway, name: name, log: log,
                    events: events, children: children))
        }
        do {
            try await run(
                root: root, nodeInfos: nodeInfos, database: database, deviceState: deviceState,
                executable: executable, children: children, events: events, sink: sink)
        } catch {
            await children.stopAll()
            throw error
        }
    }

    func run(
        root: URL, nodeInfos: [[String: Any]], database: UpDatabase?, deviceState: URL, executable: String,
        children: Children, events: AsyncStream<String>, sink: AsyncStream<String>.Continuation
    ) async throws {
        func info(_ key: String, node: Int = 1) throws -> String {
            guard let value = nodeInfos[node - 1][key] as? String else {
                throw ValidationError("the gateway's gateway.json has no \(key)")
            }
            return value
        }
        // The demo team, key and app, once.
        let admin = HTTPJSONClient(base: try info("adminURL"), bearer: try info("adminToken"))
        let previous = readRuntime(root.appendingPathComponent("up.json").path) ?? [:]
        let teams = try await admin.json("GET", "/teams") as? [[String: Any]] ?? []
        if !teams.contains(where: { $0["id"] as? String == Self.team }) {
            _ = try await admin.json("POST", "/teams", ["id": Self.team, "name": "Herald demo"])
        }
        let keys = try await admin.json("GET", "/keys") as? [[String: Any]] ?? []
        var keyID = previous["keyID"] as? String
        var p8 = previous["p8"] as? String
        if keyID == nil || p8 == nil || !FileManager.default.fileExists(atPath: p8!)
            || !keys.contains(where: { $0["keyID"] as? String == keyID && $0["revoked"] as? Bool != true })
        {
            let key = try await admin.json("POST", "/keys", ["teamID": Self.team]) as? [String: Any] ?? [:]
            guard let id = key["keyID"] as? String, let pem = key["privateKey"] as? String else {
                throw ValidationError("the gateway did not return a key")
            }
            let path = root.appendingPathComponent("AuthKey_\(id).p8").path
            guard
                FileManager.default.createFile(
                    atPath: path, contents: Data(pem.utf8), attributes: [.posixPermissions: 0o600])
            else { throw ValidationError("could not write \(path)") }
            keyID = id
            p8 = path
        }
        let apps = try await admin.json("GET", "/apps") as? [[String: Any]] ?? []
        let extra = installs.compactMap(Self.install)
        for bundle in [app] + extra.map(\.0) where !apps.contains(where: { $0["bundleID"] as? String == bundle }) {
            _ = try await admin.json("POST", "/apps", ["bundleID": bundle, "teamID": Self.team])
        }
        // The demo app's certificate for the legacy binary interface and feedback service, once.
        let binaryCertificate = root.appendingPathComponent("demo-app-cert.pem")
        let binaryKey = root.appendingPathComponent("demo-app-key.pem")
        if !FileManager.default.fileExists(atPath: binaryCertificate.path)
            || !FileManager.default.fileExists(atPath: binaryKey.path) || previous["topic"] as? String != app
        {
            let issued =
                try await admin.json("POST", "/apps/\(app)/certificates", ["environments": ["development"]])
                as? [String: Any] ?? [:]
            guard let certificate = issued["certificate"] as? String, let key = issued["privateKey"] as? String else {
                throw ValidationError("the gateway did not issue a certificate for \(app)")
            }
            try Data(certificate.utf8).write(to: binaryCertificate, options: .atomic)
            guard
                FileManager.default.createFile(
                    atPath: binaryKey.path, contents: Data(key.utf8), attributes: [.posixPermissions: 0o600])
            else { throw ValidationError("could not write \(binaryKey.path)") }
        }

        // The device, with the demo app.
        do {
            try FileManager.default.removeItem(at: deviceState.appendingPathComponent("device.json"))
        } catch {}
        var deviceArguments = [
            "device", "--state", deviceState.path, "--api-port", "\(devicePort)", "--no-banner", "--log-level",
            "notice", "--permission", "interactive",
        ]
        // The last node first; the others in turn if it goes away.
        for node in (1...nodes).reversed() {
            deviceArguments += ["--gateway", try info("linkDevelopmentURL", node: node)]
        }
        if let timeZone { deviceArguments += ["--time-zone", timeZone] }
        if manualClock { deviceArguments += ["--manual-clock"] }
        if let startTime { deviceArguments += ["--start-time", startTime] }
        let device = try children.start(
            "device", executable: executable, arguments: deviceArguments,
            log: root.appendingPathComponent("device.log"), stdout: true, events: sink)
        let deviceInfo = try await Self.waitForRuntime(
            deviceState.appendingPathComponent("device.json"), process: device, name: "device",
            log: root.appendingPathComponent("device.log"), events: events, children: children)
        guard let deviceAPI = deviceInfo["apiURL"] as? String, let socket = deviceInfo["appLink"] as? String else {
            throw ValidationError("the device's device.json has no apiURL or appLink")
        }
        // The demo app's executable: started by the device when a notification needs it, it prints
        // what it is told (launch options, the response) and exits.
        let demo = root.appendingPathComponent("demo-app.sh")
        let script = """
            #!/bin/sh
            # The demo app of `herald up`: prints what it is told, then exits.
            exec '\(executable)' app "$\(AppLink.Environment.bundleID)" listen --count 1

            """
        try Data(script.utf8).write(to: demo, options: .atomic)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: demo.path)
        _ = try await HTTPJSONClient(base: deviceAPI).json(
            "POST", "/apps",
            [
                "bundleID": app, "apsEnvironment": APNsEnvironment.development.rawValue, "executable": demo.path,
                // Allowed as if the user had said yes: the printed curl shows at once. Apps installed
                // with --install, or asking later, get the permission dialog on the web device.
                "authorized": ["alert", "sound", "badge"],
            ])
        for (bundle, path) in extra {
            _ = try await HTTPJSONClient(base: deviceAPI).json(
                "POST", "/apps",
                ["bundleID": bundle, "apsEnvironment": APNsEnvironment.development.rawValue, "executable": path])
        }
        // The demo app asks for alert, sound and badge and registers, as an app does at launch.
        let center = try await UserNotificationCenter.connect(bundleID: app, state: .background, socketPath: socket)
        let token: String
        do {
            _ = try await center.requestAuthorization(options: [.alert, .sound, .badge])
            token = try await center.registerForRemoteNotifications()
        } catch {
            await center.close()
            throw ValidationError("the demo app could not register: \(error)")
        }
        await center.close()
        let status = try await HTTPJSONClient(base: deviceAPI).json("GET", "/status") as? [String: Any] ?? [:]

        let jwt = try APNsSigningKey(p8File: p8!, keyID: keyID!, teamID: Self.team).token(issuedAt: Date())
        let development = try info("developmentURL")
        var up: [String: Any] = [
            "providerURL": try info("providerURL"), "developmentURL": development,
            "adminURL": try info("adminURL"), "adminToken": try info("adminToken"),
            "caCertificate": try info("caCertificate"), "teamID": Self.team, "keyID": keyID!, "p8": p8!,
            "topic": app, "environment": APNsEnvironment.development.rawValue, "deviceToken": token,
            "deviceAPI": deviceAPI, "appLink": socket, "linkURL": try info("linkDevelopmentURL", node: nodes),
            "binaryAddress": try info("binaryAddress"), "feedbackAddress": try info("feedbackAddress"),
            "binaryCertificate": binaryCertificate.path, "binaryPrivateKey": binaryKey.path,
            "consoleURL": try info("adminURL") + "/console",
            "channelsURL": try info("channelsURL"), "channelsDevelopmentURL": try info("channelsDevelopmentURL"),
        ]
        if let id = status["deviceID"] as? String { up["deviceID"] = id }
        // Flat keys, like the rest: node k's as node<k><Key>.
        up["nodes"] = String(nodes)
        if let database { up["database"] = database.shown }
        for node in stride(from: 2, through: nodes, by: 1) {
            for key in [
                "providerURL", "developmentURL", "adminURL", "linkDevelopmentURL", "binaryAddress", "feedbackAddress",
            ] {
                up["node\(node)" + key.prefix(1).uppercased() + key.dropFirst()] = try info(key, node: node)
            }
        }
        try JSONSerialization.data(withJSONObject: up, options: [.prettyPrinted, .sortedKeys])
            .write(to: root.appendingPathComponent("up.json"), options: .atomic)
        let payload = #"{"aps":{"alert":{"title":"Hello","body":"from Herald"},"sound":"default","badge":1}}"#
        let installed = extra.map { "  installed:                \($0.0)   \($0.1)\n" }.joined()
        var cluster = ""
        if nodes > 1 || database != nil {
            cluster =
                "  cluster:                  \(nodes) gateway node\(nodes == 1 ? "" : "s") on \(database?.shown ?? "")\n"
            for node in stride(from: 2, through: nodes, by: 1) {
                cluster +=
                    "  node \(node):                   development \(try info("developmentURL", node: node)), admin "
                    + "\(try info("adminURL", node: node)), state \(root.path)/gateway-\(node)\n"
            }
            if nodes > 1 {
                cluster +=
                    "  the device is linked to node \(nodes); the curl below goes to node 1, so the push crosses nodes\n"
            }
        }
        print(
            """
            herald is up
              the device (open it):     \(deviceAPI)/
              the push console:         \(up["consoleURL"]!)
                sign in with this link: \(up["consoleURL"]!)#token=\(up["adminToken"]!)
              provider API (TLS, h2):   \(up["providerURL"]!)   CA \(up["caCertificate"]!)
              development (h2c/HTTP1):  \(development)
              binary / feedback (TLS):  \(up["binaryAddress"]!) / \(up["feedbackAddress"]!)   certificate \(binaryCertificate.path)
              channel management:       \(up["channelsURL"]!) (TLS), \(up["channelsDevelopmentURL"]!) (development)
              admin API:                \(up["adminURL"]!)   (token in \(root.path)/gateway/admin-token)
              device API:               \(deviceAPI)
              demo app:                 \(app)   device token \(token)
            \(installed)\(cluster)  key:                      team \(Self.team), key \(keyID!), \(p8!)
              everything above:         \(root.path)/up.json

            Open the device in a browser, then send a push (the bearer token is valid for an hour;
            `herald push --alert Hi` signs its own); the answer is `HTTP/2 200` with its apns-id, and the
            notification appears on the device:

            curl -i --http2-prior-knowledge \(development)/3/device/\(token) \\
              -H 'apns-topic: \(app)' -H 'authorization: bearer \(jwt)' \\
              -d '\(payload)'

            Then: `herald respond \(app)` opens it, `herald app \(app) delivered` lists it,
            `herald app \(app) add --title Tea --body Ready --in 10` schedules one.
            `herald push --binary --alert Hi` sends over the legacy binary interface; `herald feedback` reads
            the feedback service. Ctrl-C stops everything.

            """)
        fflush(nil)

        // Until Ctrl-C, SIGTERM, or a child that stops by itself.
        for await event in events {
            if event == Self.shutdownEvent {
                FileHandle.standardError.write(
                    Data("stopping the device and the gateway\(nodes > 1 ? "s" : "")\n".utf8))
                await children.stopAll()
                return
            }
            await children.stopAll()
            throw ValidationError("\(event); see the logs in \(root.path)")
        }
    }

    /// Waits until a child has written its runtime file (with its own pid).
    static func waitForRuntime(
        _ file: URL, process: Process, name: String, log: URL, events: AsyncStream<String>, children: Children
    ) async throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(120)
        while true {
            if let info = readRuntime(file.path), info["pid"] as? String == String(process.processIdentifier) {
                return info
            }
            if !process.isRunning || Date() > deadline {
                await children.stopAll()
                let tail =
                    (try? String(contentsOf: log, encoding: .utf8))?.split(separator: "\n").suffix(5)
                    .joined(separator: "\n") ?? ""
                throw ValidationError(
                    "the \(name) did not start\(process.isRunning ? " within 120 s" : ""); \(log.path) ends with:\n\(tail)"
                )
            }
            // Polling another process's runtime file: it has no other way to say it is ready.
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}

/// The processes `herald up` started.
final class Children: @unchecked Sendable {
    private let lock = NSLock()
    private var processes: [(String, Process)] = []
    private var stopping = false
    private var finally: [@Sendable () -> Void] = []

    /// Runs `work` once every child has stopped (a private database server's stop).
    func atStop(_ work: @escaping @Sendable () -> Void) { lock.withLock { finally.append(work) } }

    func start(
        _ name: String, executable: String, arguments: [String], log: URL, stdout: Bool,
        events: AsyncStream<String>.Continuation
    ) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !FileManager.default.fileExists(atPath: log.path) {
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        }
        let handle = try FileHandle(forWritingTo: log)
        handle.seekToEndOfFile()
        process.standardError = handle
        process.standardOutput = stdout ? FileHandle.standardOutput : FileHandle.nullDevice
        process.terminationHandler = { [weak self] process in
            guard let self, !self.isStopping else { return }
            events.yield("the \(name) stopped (exit \(process.terminationStatus))")
        }
        try process.run()
        lock.withLock { processes.append((name, process)) }
        return process
    }

    var isStopping: Bool { lock.withLock { stopping } }

    /// SIGTERM to each child, newest first, waiting for each to end; then what ``atStop(_:)`` asked.
    func stopAll() async {
        let (list, work) = lock.withLock { () -> ([(String, Process)], [@Sendable () -> Void]) in
            stopping = true
            defer { finally = [] }
            return (processes.reversed(), finally.reversed())
        }
        for (_, process) in list where process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            await Task.detached { process.waitUntilExit() }.value
        }
        for item in work { await Task.detached { item() }.value }
    }
}

/// `herald up` as the one service of its group: `body` starts and watches the children; `shutdown`
/// tells it to stop them.
struct UpService: Service {
    let body: @Sendable () async throws -> Void
    let shutdown: @Sendable () -> Void

    func run() async throws {
        try await withGracefulShutdownHandler(operation: body, onGracefulShutdown: shutdown)
    }
}
