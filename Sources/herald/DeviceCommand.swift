import ArgumentParser
import Foundation
import HeraldCore
import HeraldDevice
import HeraldRuntime
import Logging

struct DeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device",
        abstract:
            "Run the device daemon, or manage a running one: apps, its log and clock, Focus, Scheduled Summary, "
            + "Notification Center, provisional apps, the lock.",
        subcommands: [
            DeviceRun.self, DeviceInstall.self, DeviceRemove.self, DeviceApps.self, DeviceSet.self,
            DeviceLog.self, DeviceClockCommand.self, DeviceFocus.self, DeviceSummary.self, DeviceCenter.self,
            DeviceProvisional.self, DeviceLock.self, DeviceUnlock.self,
        ],
        defaultSubcommand: DeviceRun.self)
}

struct DeviceRun: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the device daemon: notification center, app link, device API, and the link to a push service.",
        discussion: """
            The state directory holds the database (device.sqlite), the device's key (identity.json), its \
            tokens (link.json) and the app link socket (app.sock). Once listening, the daemon writes \
            device.json with the device API's URL. Every presentation is printed as one line.
            """)

    @Option(name: .long, help: "State directory.")
    var state = ".herald/device"
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The push service's device link: ws://127.0.0.1:5223/device/v1 or wss://host:5223/device/v1. Repeat it "
                + "for a cluster's other nodes: when the link fails, the next address is tried.",
            valueName: "url"))
    var gateway: [String] = []
    @Option(name: .long, help: "CA certificate (PEM) to trust for a wss:// gateway.")
    var gatewayCA: String?
    @Option(name: .long, help: "Address of the device API.")
    var apiHost = "127.0.0.1"
    @Option(name: .long, help: "Port of the device API (0 = any free port).")
    var apiPort = 8081
    @Option(name: .long, help: "The device's time zone (an identifier such as Europe/Paris). Default: the system's.")
    var timeZone: String?
    @Option(name: .long, parsing: .upToNextOption, help: "The user's languages, most preferred first (default en).")
    var language: [String] = []
    @Option(
        name: .long,
        help: ArgumentHelp(
            "How the user answers an app's first authorization request: allow, deny, or interactive (the web "
                + "device at the API's / shows the system's dialog and the app waits for the answer).",
            valueName: "allow|deny|interactive"))
    var permission: PermissionAnswer = .allow
    @Flag(name: .long, help: "The same as --permission deny.")
    var deny = false
    @Option(name: .long, help: "Seconds of background time for content-available pushes and background actions.")
    var backgroundBudget: Double = 30
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The device's passcode: on a locked device, opening an app from a notification, a foreground action "
                + "or an action that requires authentication needs it (the web device asks; herald respond --passcode)."
        ))
    var passcode = "0000"
    @Option(
        name: .long,
        help: "Seconds registerForRemoteNotifications waits for an unreachable push service before it fails (3010).")
    var registrationWait: Double = 300
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds an app the daemon launched has to connect to the app link before it is ended (as iOS's "
                + "watchdog ends an app that does not finish launching) and what waited for it is dropped."))
    var launchWait: Double = 20
    @Flag(
        name: .long,
        help: "The device's clock stands still and moves only when told (herald device clock --advance): for tests.")
    var manualClock = false
    @Option(name: .long, help: "With --manual-clock: the time it starts at (ISO 8601 with offset). Default: now.")
    var startTime: String?
    @Option(
        name: .long,
        help: ArgumentHelp(
            "What shows notifications, comma-separated: terminal (a line each), web (the page at the device API's /), "
                + "desktop (the notification server on the D-Bus session bus; actions come back as responses).",
            valueName: "terminal,web,desktop"))
    var presenter = "terminal,web"

    /// `--presenter`'s names.
    var presenters: Set<String> {
        Set(presenter.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
    }
    @Flag(name: .long, help: "Do not print the ready banner (presentations are still printed).")
    var noBanner = false
    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel = "notice"
    @OptionGroup var service: ServiceOptions

    func validate() throws {
        if let timeZone, TimeZone(identifier: timeZone) == nil {
            throw ValidationError("--time-zone: unknown time zone '\(timeZone)'")
        }
        for gateway in gateway where !(gateway.hasPrefix("ws://") || gateway.hasPrefix("wss://")) {
            throw ValidationError(
                "--gateway must be a ws:// or wss:// URL, such as ws://127.0.0.1:5223/device/v1, not '\(gateway)'")
        }
        // Written so that inf and nan, which the option parser takes, fail too; a duration far past a
        // year would overflow when turned into nanoseconds.
        for (name, seconds) in [
            ("--background-budget", backgroundBudget), ("--registration-wait", registrationWait),
            ("--launch-wait", launchWait),
        ] where !(seconds > 0 && seconds <= 31_536_000) {
            throw ValidationError("\(name) must be more than 0 seconds and at most a year (31536000)")
        }
        guard !passcode.isEmpty, passcode.allSatisfy(\.isNumber) else {
            throw ValidationError("--passcode: digits, such as 0000 or 482915")
        }
        if let startTime {
            guard manualClock else { throw ValidationError("--start-time needs --manual-clock") }
            _ = try parseDate(startTime, field: "--start-time")
        }
        try validateLogLevel(logLevel)
        for name in presenters.sorted() where !["terminal", "web", "desktop"].contains(name) {
            throw ValidationError("--presenter: unknown presenter '\(name)' (terminal, web, desktop)")
        }
        if deny, permission != .allow, permission != .deny {
            throw ValidationError("--deny and --permission \(permission.rawValue) contradict each other")
        }
    }

    func run() async throws {
        service.logFormat.bootstrap()
        var logger = Logger(label: "herald.device")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .notice
        ParentWatch.start(logger: logger)
        var configuration = DeviceService.Configuration()
        configuration.stateDirectory = state
        configuration.gatewayURL = gateway.first
        configuration.otherGatewayURLs = Array(gateway.dropFirst())
        configuration.gatewayCAPath = gatewayCA
        configuration.userAllows = !deny && permission != .deny
        configuration.asksUser = permission == .interactive
        configuration.engine.timeZone = timeZone.flatMap(TimeZone.init(identifier:)) ?? .current
        if !language.isEmpty { configuration.engine.preferredLanguages = language }
        configuration.engine.backgroundBudget = .seconds(backgroundBudget)
        configuration.passcode = passcode
        configuration.registrationWait = .seconds(registrationWait)
        configuration.launchWait = .seconds(launchWait)
        let clock: any WallClock =
            manualClock
            ? ManualClock(now: try startTime.map { try parseDate($0, field: "--start-time") } ?? Date())
            : SystemClock()
        let chosen = presenters
        var shown: [any Presenter] = chosen.contains("terminal") ? [TerminalPresenter()] : []
        let desktop = chosen.contains("desktop") ? DesktopPresenter(logger: logger) : nil
        if let desktop { shown.append(desktop) }
        let service = try await DeviceService(
            configuration: configuration, clock: clock, presenters: shown, logger: logger)
        // A click or an action on the desktop is the user's response, as `herald respond` gives it.
        try desktop?.start { [logger, desktop] app, identifier, action in
            do {
                try await service.respond(app: app, identifier: identifier, action: action)
            } catch let error as NotificationError where error.code == .passcodeRequired {
                // The desktop cannot take the passcode: the answer is refused, and the user told why.
                desktop?.tell(app: app, summary: "Locked", body: error.message + "; unlock the device first")
                logger.notice(
                    "a desktop response needs the passcode", metadata: ["app": "\(app)", "id": "\(identifier)"])
            } catch {
                logger.warning(
                    "a desktop response was refused",
                    metadata: ["app": "\(app)", "id": "\(identifier)", "error": "\(error)"])
            }
        }
        var daemon = DeviceDaemon(service: service, apiHost: apiHost, apiPort: apiPort, logger: logger)
        daemon.webDevice = chosen.contains("web")
        let banner = !noBanner
        try await daemon.run { info in
            guard banner else { return }
            var text = "herald device ready\n"
            for key in ["apiURL", "appLink", "deviceID"] {
                if let value = info[key] { text += "  \(key): \(value)\n" }
            }
            FileHandle.standardOutput.write(Data(text.utf8))
        }
    }
}

/// `herald device --permission`.
enum PermissionAnswer: String, ExpressibleByArgument, CaseIterable {
    case allow, deny, interactive
}

struct DeviceInstall: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "Install (or update) an app on a running device.",
        discussion: """
            An app with --aps-environment is registered with the push service at once and gets a token. \
            Strings for loc-keys are read from <bundle-dir>/<lang>.lproj/Localizable.strings.
            """)

    @Argument(help: "The app's bundle id (its topic).")
    var bundleID: String
    @Option(name: .long, help: "The program to start when the app must be launched.")
    var executable: String?
    @Option(name: .long, help: "The app's bundle directory (sounds and strings).")
    var bundleDir: String?
    @Option(name: .long, help: "The app's Library directory (Library/Sounds).")
    var libraryDir: String?
    @Option(name: .long, help: "The aps-environment entitlement: development or production.")
    var apsEnvironment: APNsEnvironment?
    @Flag(
        name: .long,
        help: "NSSupportsLiveActivitiesFrequentUpdates: 60 priority-10 activity updates an hour instead of 10.")
    var frequentActivityUpdates = false
    @OptionGroup var device: DeviceLocation
    @Flag(name: .long, help: "Print the result as JSON.")
    var json = false

    func run() async throws {
        func path(_ text: String) -> JSONValue { .string(URL(fileURLWithPath: text).standardizedFileURL.path) }
        var body: [String: JSONValue] = ["bundleID": .string(bundleID)]
        if let executable { body["executable"] = path(executable) }
        if let bundleDir { body["bundleDirectory"] = path(bundleDir) }
        if let libraryDir { body["libraryDirectory"] = path(libraryDir) }
        if let apsEnvironment { body["apsEnvironment"] = .string(apsEnvironment.rawValue) }
        if frequentActivityUpdates { body["supportsFrequentActivityUpdates"] = .bool(true) }
        let app = try await device.client().json("POST", "/apps", body) ?? .null
        if json { return try printJSONObject(app) }
        print("installed \(bundleID)" + ((app["token"]?.stringValue).map { "; device token \($0)" } ?? ""))
    }
}

struct DeviceRemove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Remove an app from a running device: its notifications go, and its token answers 410 Unregistered.")

    @Argument(help: "The app's bundle id.")
    var bundleID: String
    @OptionGroup var device: DeviceLocation

    func run() async throws {
        _ = try await device.client().send("DELETE", "/apps/\(bundleID)")
        print("removed \(bundleID)")
    }
}

struct DeviceApps: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apps", abstract: "List the apps installed on a running device.")

    @OptionGroup var device: DeviceLocation
    @Flag(name: .long, help: "Print JSON.")
    var json = false

    func run() async throws {
        let apps = try await device.client().json("GET", "/apps")?.arrayValue ?? []
        if json { return try printJSONObject(apps) }
        if apps.isEmpty { print("no apps installed") }
        for app in apps {
            let id = app["bundleID"]?.stringValue ?? "?"
            let state = app["state"]?.stringValue ?? "?"
            let badge = app["badge"]?.intValue ?? 0
            let token = app["token"]?.stringValue
            print(
                "\(id)  \(state)  badge \(badge)  pending \(app["pending"]?.intValue ?? 0)  delivered \(app["delivered"]?.intValue ?? 0)"
                    + (token.map { "  token \($0)" } ?? ""))
        }
    }
}

struct DeviceSet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Change a running device's time zone (floating triggers follow) or location (region triggers fire).")

    @Option(name: .long, help: "A time zone identifier, such as Asia/Tokyo.")
    var timeZone: String?
    @Option(name: .long, help: "A location fix: latitude,longitude in degrees.")
    var location: String?
    @OptionGroup var device: DeviceLocation

    func validate() throws {
        if timeZone == nil && location == nil { throw ValidationError("give --time-zone, --location or both") }
        if let timeZone, TimeZone(identifier: timeZone) == nil {
            throw ValidationError("--time-zone: unknown time zone '\(timeZone)'")
        }
        if let location, Self.fix(location) == nil {
            throw ValidationError("--location: '\(location)' is not latitude,longitude (for example 48.8584,2.2945)")
        }
    }

    static func fix(_ text: String) -> (Double, Double)? {
        let parts = text.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 2, let latitude = parts[0], let longitude = parts[1] else { return nil }
        return (latitude, longitude)
    }

    func run() async throws {
        let client = try device.client()
        if let timeZone {
            _ = try await client.json("PUT", "/time-zone", ["identifier": .string(timeZone)])
            print("time zone \(timeZone)")
        }
        if let location, let (latitude, longitude) = Self.fix(location) {
            _ = try await client.json(
                "PUT", "/location", ["latitude": .double(latitude), "longitude": .double(longitude)])
            print("location \(latitude),\(longitude)")
        }
    }
}

struct DeviceLog: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log", abstract: "Print a running device's presentation log, oldest first.")

    @Option(name: .long, help: "How many entries.")
    var limit = 50
    @OptionGroup var device: DeviceLocation
    @Flag(name: .long, help: "Print JSON.")
    var json = false

    func run() async throws {
        let entries = try await device.client().json("GET", "/log?limit=\(limit)")?.arrayValue ?? []
        if json { return try printJSONObject(entries) }
        for entry in entries {
            print(
                "\(entry["date"]?.stringValue ?? "")  [\(entry["app"]?.stringValue ?? "")] \(entry["text"]?.stringValue ?? "")"
            )
        }
    }
}

struct DeviceClockCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clock",
        abstract: "Show a running device's clock, or move a manual one forward (firing what falls due).",
        discussion: """
            Only a device started with --manual-clock can be moved. Moving fires every notification that \
            falls due on the way, in order, before the command returns.
              herald device clock --advance 90        # 90 seconds
              herald device clock --advance 2h        # also s, m, h, d
              herald device clock --to 2026-12-24T09:00:00+01:00
            """)

    @Option(name: .long, help: "Move forward by this long: seconds, or a number with s, m, h or d.")
    var advance: String?
    @Option(name: .long, help: "Move forward to this instant (ISO 8601 with offset).")
    var to: String?
    @OptionGroup var device: DeviceLocation
    @Flag(name: .long, help: "Print JSON.")
    var json = false

    func validate() throws {
        if advance != nil && to != nil { throw ValidationError("give --advance or --to, not both") }
        if let advance, DeviceLocation.seconds(advance) == nil {
            throw ValidationError("--advance: '\(advance)' is not a duration such as 90, 15m, 2h or 1d")
        }
        if let to { _ = try parseDate(to, field: "--to") }
    }

    func run() async throws {
        let client = try device.client()
        let answer: JSONValue?
        if let advance, let seconds = DeviceLocation.seconds(advance) {
            answer = try await client.json("POST", "/clock", ["advance": .double(seconds)])
        } else if let to {
            answer = try await client.json("POST", "/clock", ["to": .string(to)])
        } else {
            answer = try await client.json("GET", "/clock")
        }
        let clock = answer ?? .null
        if json { return try printJSONObject(clock) }
        print(
            "\(clock["now"]?.stringValue ?? "?")  \(clock["timeZone"]?.stringValue ?? "")  "
                + ((clock["manual"]?.boolValue ?? false) ? "manual" : "system clock")
                + ((clock["nextWake"]?.stringValue).map { "  next wake \($0)" } ?? ""))
    }
}
