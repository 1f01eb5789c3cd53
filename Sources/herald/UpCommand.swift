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
    @OptionGroup(title: "Gateway ports") var ports: GatewayPorts
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
    @Flag(
        name: .long,
        help: "The gateways refuse pushes Apple would handle quietly, naming the warning (herald gateway --strict).")
    var strict = false

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
    @OptionGroup var service: ServiceOptions

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
        let database = try await UpDatabase.start(database: database, nodes: nodes, root: root, children: children)
        var nodeInfos: [GatewayInfo] = []
        for node in 1...nodes {
            let state = node == 1 ? gatewayState : root.appendingPathComponent("gateway-\(node)")
            let log = root.appendingPathComponent(node == 1 ? "gateway.log" : "gateway-\(node).log")
            do {
                try FileManager.default.removeItem(at: state.appendingPathComponent(GatewayInfo.fileName))
            } catch {}
            let name = nodes == 1 ? "gateway" : "gateway node \(node)"
            // One after the other: the first node's secrets become the cluster's, the others take them.
            let gateway = try children.start(
                name, executable: executable,
                arguments: ["gateway", "--state", state.path] + ports.arguments(node: node) + [
                    "--log-level", "notice", "--log-format", service.logFormat.rawValue, "--test-api",
                ] + (database.map { ["--database", $0.url] } ?? []) + (strict ? ["--strict"] : []),
                log: log, stdout: false, events: sink)
            nodeInfos.append(
                try await Self.waitForRuntime(
                    GatewayInfo.self, in: state, process: gateway, name: name, log: log,
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
        root: URL, nodeInfos: [GatewayInfo], database: UpDatabase?, deviceState: URL, executable: String,
        children: Children, events: AsyncStream<String>, sink: AsyncStream<String>.Continuation
    ) async throws {
        let first = nodeInfos[0]
        let demo = UpDemo(root: root, app: app, installs: installs.compactMap(Self.install), executable: executable)
        let admin = AdminClient(url: first.adminURL, token: first.adminToken)
        let credentials = try await demo.provision(admin, previous: try? UpInfo.read(directory: root))
        // The console's Send form starts with the demo key's .p8 (the banner's console is node 1's).
        _ = try await admin.http.send(
            "PUT", "/console/keys/\(credentials.keyID)",
            body: try Data(contentsOf: URL(fileURLWithPath: credentials.p8)))
        let device = try await startDevice(
            root: root, nodeInfos: nodeInfos, deviceState: deviceState, executable: executable, children: children,
            events: events, sink: sink)
        try await demo.installApps(deviceAPI: device.apiURL)
        let token = try await demo.register(socket: device.appLink)
        let up = try UpInfo(
            gateways: nodeInfos, device: device, deviceID: try await UpDemo.deviceID(deviceAPI: device.apiURL),
            token: token, app: app, credentials: credentials, database: database?.shown)
        try up.write(to: root.appendingPathComponent(UpInfo.fileName).path)
        print(try demo.banner(up, credentials: credentials, database: database))
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
            throw CommandFailure("\(event); see the logs in \(root.path)")
        }
    }

    /// Starts the device, linked to the last node first (the others in turn if it goes away), and
    /// waits for its `device.json`.
    func startDevice(
        root: URL, nodeInfos: [GatewayInfo], deviceState: URL, executable: String, children: Children,
        events: AsyncStream<String>, sink: AsyncStream<String>.Continuation
    ) async throws -> DeviceInfo {
        do {
            try FileManager.default.removeItem(at: deviceState.appendingPathComponent(DeviceInfo.fileName))
        } catch {}
        var deviceArguments = [
            "device", "--state", deviceState.path, "--api-port", "\(devicePort)", "--no-banner", "--log-level",
            "notice", "--log-format", service.logFormat.rawValue, "--permission", "interactive",
        ]
        // The last node first; the others in turn if it goes away.
        for node in (1...nodes).reversed() {
            deviceArguments += ["--gateway", nodeInfos[node - 1].linkDevelopmentURL]
        }
        if let timeZone { deviceArguments += ["--time-zone", timeZone] }
        if manualClock { deviceArguments += ["--manual-clock"] }
        if let startTime { deviceArguments += ["--start-time", startTime] }
        let device = try children.start(
            "device", executable: executable, arguments: deviceArguments,
            log: root.appendingPathComponent("device.log"), stdout: true, events: sink)
        return try await Self.waitForRuntime(
            DeviceInfo.self, in: deviceState, process: device, name: "device",
            log: root.appendingPathComponent("device.log"), events: events, children: children)
    }

    /// Waits until a child has written its runtime file in `directory` (with its own pid).
    static func waitForRuntime<Info: RuntimeInfo & HasProcessID>(
        _ type: Info.Type, in directory: URL, process: Process, name: String, log: URL,
        events: AsyncStream<String>, children: Children
    ) async throws -> Info {
        let deadline = Date().addingTimeInterval(120)
        while true {
            if let info = try? Info.read(directory: directory), info.pid == String(process.processIdentifier) {
                return info
            }
            if !process.isRunning || Date() > deadline {
                await children.stopAll()
                let tail =
                    (try? String(contentsOf: log, encoding: .utf8))?.split(separator: "\n").suffix(5)
                    .joined(separator: "\n") ?? ""
                throw CommandFailure(
                    "the \(name) did not start\(process.isRunning ? " within 120 s" : ""); \(log.path) ends with:\n\(tail)"
                )
            }
            // Polling another process's runtime file: it has no other way to say it is ready.
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}

/// A runtime file that names the process that wrote it.
protocol HasProcessID { var pid: String { get } }
extension GatewayInfo: HasProcessID {}
extension DeviceInfo: HasProcessID {}

/// `herald up` as the one service of its group: `body` starts and watches the children; `shutdown`
/// tells it to stop them.
struct UpService: Service {
    let body: @Sendable () async throws -> Void
    let shutdown: @Sendable () -> Void

    func run() async throws {
        try await withGracefulShutdownHandler(operation: body, onGracefulShutdown: shutdown)
    }
}
