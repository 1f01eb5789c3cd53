import Foundation
import HeraldCore
import HeraldDevice
import HeraldKit
import HeraldRuntime
import Logging
import Synchronization

/// A Herald device in this process, for tests: the daemon (engine, store, app link, device API) in a
/// temporary directory, on a ``ManualClock`` that moves only when the test moves it, linked to a push
/// service. Apps connect to it with HeraldKit as they would on a real device; the test reads what the
/// device showed from ``next(_:within:)``.
public final class TestDevice: Sendable {
    /// The daemon's service: its records, its log, the engine's events.
    public let service: DeviceService
    /// The device's clock (the link to the push service keeps real time).
    public let clock: ManualClock
    /// The device API: `http://127.0.0.1:<port>`.
    public let apiURL: String
    /// The app link's socket, for ``UserNotificationCenter/connect(bundleID:state:socketPath:delegate:group:)``.
    public let appLinkPath: String
    let log: LogInbox
    let daemon: DeviceDaemon
    let task: Task<Void, any Error>
    let directory: URL

    private init(
        service: DeviceService, clock: ManualClock, apiURL: String, appLinkPath: String, log: LogInbox,
        daemon: DeviceDaemon, task: Task<Void, any Error>, directory: URL
    ) {
        self.daemon = daemon
        self.service = service
        self.clock = clock
        self.apiURL = apiURL
        self.appLinkPath = appLinkPath
        self.log = log
        self.task = task
        self.directory = directory
    }

    /// Starts a device in `stateDirectory`, linked to the push service at `gatewayURL` (`nil`: none;
    /// `otherGatewayURLs` are tried in turn when the link fails, as a cluster's other nodes),
    /// with `apps` installed for the development environment; its clock starts at `start`.
    /// `userAllows` is the device's user's answer to an app's first authorization request;
    /// `launcher` starts an app's process when a notification needs it (by default, the app's
    /// executable, when it has one).
    public static func start(
        name: String = "device", gatewayURL: String?, otherGatewayURLs: [String] = [], apps: [String],
        stateDirectory: URL? = nil,
        start: Date = Date(), userAllows: Bool = true, launcher: any AppLauncher = ProcessLauncher(),
        logLevel: Logger.Level = .warning
    ) async throws -> TestDevice {
        let directory =
            stateDirectory
            ?? Self.shortTemporaryDirectory.appendingPathComponent(
                "herald-device-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = DeviceService.Configuration()
        configuration.stateDirectory = directory.path
        configuration.gatewayURL = gatewayURL
        configuration.otherGatewayURLs = otherGatewayURLs
        configuration.reconnectBase = .milliseconds(50)
        configuration.userAllows = userAllows
        var logger = Logger(label: "herald.testing.\(name)")
        logger.logLevel = logLevel
        let clock = ManualClock(now: start)
        let log = LogInbox()
        let service = try await DeviceService(
            configuration: configuration, clock: clock, launcher: launcher, presenters: [log], logger: logger)
        for app in apps {
            try await service.install(InstalledApp(bundleID: app, apsEnvironment: .development))
        }
        let daemon = DeviceDaemon(service: service, apiPort: 0, logger: logger)
        let (ready, readySink) = AsyncStream.makeStream(of: [String: String].self)
        let task = Task {
            defer { readySink.finish() }
            try await daemon.run(signals: false) { readySink.yield($0) }
        }
        var info: [String: String]?
        for await ready in ready {
            info = ready
            break
        }
        guard let info, let apiURL = info["apiURL"], let appLink = info["appLink"] else {
            try await task.value
            throw TestingError("the device stopped before it was listening")
        }
        return TestDevice(
            service: service, clock: clock, apiURL: apiURL, appLinkPath: appLink, log: log, daemon: daemon,
            task: task, directory: directory)
    }

    /// Connects as `app`'s process (HeraldKit), running in `state`.
    public func app(
        _ app: String, state: AppRunState = .background, delegate: (any UserNotificationCenterDelegate)? = nil
    ) async throws -> UserNotificationCenter {
        try await UserNotificationCenter.connect(
            bundleID: app, state: state, socketPath: appLinkPath, delegate: delegate)
    }

    /// `app`'s device token, as the app gets it at launch: it asks for alerts, sounds and badges
    /// (the device's user allows) and registers for remote notifications.
    public func token(for app: String) async throws -> String {
        let center = try await self.app(app)
        do {
            _ = try await center.requestAuthorization(options: [.alert, .sound, .badge])
            let token = try await center.registerForRemoteNotifications()
            await center.close()
            return token
        } catch {
            await center.close()
            throw error
        }
    }

    /// The next entry of `kind` in the device's log (others are skipped), or `nil` when none comes
    /// within `within` (a guard against a test that would hang, not a wait for time to pass).
    public func next(_ kind: DeviceLogEntry.Kind, within: Duration = .seconds(10)) async -> DeviceLogEntry? {
        await log.next(kind, within: within)
    }

    /// What the device showed next: title, body, sound, badge, actions.
    public func nextPresentation(within: Duration = .seconds(10)) async -> PresentationSummary? {
        await next(.presented, within: within)?.presentation
    }

    /// Moves the device's clock on by `seconds`, firing what falls due on the way.
    public func advanceClock(by seconds: TimeInterval) async throws {
        try await service.advanceClock(to: clock.now().addingTimeInterval(seconds))
    }

    /// The device's state directory (database, identity, tokens, the app link's socket).
    public var stateDirectory: URL { directory }

    /// Stops the device (gracefully, as SIGTERM would) and removes its state, unless
    /// `keepingState` (another device may start on it: a restart).
    public func stop(keepingState: Bool = false) async {
        await daemon.shutdown()
        _ = await task.result
        if !keepingState { try? FileManager.default.removeItem(at: directory) }
    }

    /// A temporary directory with a short path: the app link is a Unix socket in the state directory,
    /// and a socket's path may be at most about a hundred bytes.
    static var shortTemporaryDirectory: URL {
        let temporary = FileManager.default.temporaryDirectory
        return temporary.path.count <= 40 ? temporary : URL(fileURLWithPath: "/tmp", isDirectory: true)
    }
}

/// The device's log as a test reads it: every entry, in order, kept until a test asks for it.
final class LogInbox: Presenter, Sendable {
    struct Waiter {
        var id: Int
        var kind: DeviceLogEntry.Kind
        var continuation: CheckedContinuation<DeviceLogEntry?, Never>
    }

    struct State {
        var buffer: [DeviceLogEntry] = []
        var waiter: Waiter?
        var nextID = 0
    }

    private let state = Mutex(State())

    func show(_ entry: DeviceLogEntry) {
        let woken = state.withLock { state -> (CheckedContinuation<DeviceLogEntry?, Never>)? in
            guard let waiter = state.waiter else {
                state.buffer.append(entry)
                return nil
            }
            // Someone waits for a kind: other kinds are skipped.
            guard waiter.kind == entry.kind else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        woken?.resume(returning: entry)
    }

    /// The next entry of `kind`, skipping others; `nil` after `within`.
    func next(_ kind: DeviceLogEntry.Kind, within: Duration) async -> DeviceLogEntry? {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        let timeout = Task {
            try await Task.sleep(for: within)
            let waiting = self.state.withLock { state -> (CheckedContinuation<DeviceLogEntry?, Never>)? in
                guard state.waiter?.id == id else { return nil }
                defer { state.waiter = nil }
                return state.waiter?.continuation
            }
            waiting?.resume(returning: nil)
        }
        defer { timeout.cancel() }
        return await withCheckedContinuation { continuation in
            let found = state.withLock { state -> DeviceLogEntry?? in
                if let index = state.buffer.firstIndex(where: { $0.kind == kind }) {
                    let entry = state.buffer[index]
                    state.buffer.removeFirst(index + 1)
                    return .some(entry)
                }
                state.buffer = []
                state.waiter = Waiter(id: id, kind: kind, continuation: continuation)
                return nil
            }
            if let found { continuation.resume(returning: found) }
        }
    }
}
