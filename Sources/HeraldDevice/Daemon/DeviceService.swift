import DequeModule
import Foundation
import HeraldCore
import HeraldRuntime
import Logging

/// The device daemon's heart: runs the `DeviceEngine` with its store and a clock and saves what
/// changed. Beside it in this folder: carrying out the engine's actions (`DeviceService+Actions`),
/// answering the apps' calls (`DeviceService+AppLink`), the manual clock (`DeviceService+Clock`), and
/// the link to the push service (`GatewaySession`). The app link server, the device API and
/// `herald device` are thin layers over it.
public actor DeviceService {
    /// How the daemon runs.
    public struct Configuration: Sendable {
        /// The state directory: database, identity, tokens, the app link socket.
        public var stateDirectory: String = ".herald/device"
        /// The engine's tunables (time zone, languages, budgets).
        public var engine = DeviceEngine.Configuration()
        /// The push service's device link (`ws://…` on loopback or `wss://…`); `nil`: no push service.
        public var gatewayURL: String?
        /// More device-link addresses of the same push service (a cluster's other nodes): when the
        /// link fails, the next address is tried, after the same jittered backoff.
        public var otherGatewayURLs: [String] = []
        /// The CA to trust for a `wss://` gateway (PEM file); `nil`: the system's roots.
        public var gatewayCAPath: String?
        /// First reconnect delay; it doubles up to ``reconnectMaximum``, with jitter.
        public var reconnectBase: Duration = .milliseconds(500)
        /// The longest reconnect delay.
        public var reconnectMaximum: Duration = .seconds(30)
        /// How long `registerForRemoteNotifications` waits for the push service before
        /// it fails with Cocoa's 3010 (Apple calls neither callback until the device is connected;
        /// Herald states a bound).
        public var registrationWait: Duration = .seconds(300)
        /// How long an app the daemon launched has to connect to the app link: one that has not
        /// connected by then is ended, as iOS's watchdog ends an app that does not finish launching,
        /// and the events that waited for it are dropped.
        public var launchWait: Duration = .seconds(20)
        /// The user's answer to first authorization requests.
        public var userAllows = true
        /// The user answers an app's first authorization request in the system's dialog on the web
        /// device (`--permission interactive`): the app's call waits for the answer. `userAllows`
        /// still answers location requests.
        public var asksUser = false
        /// Entries the presentation log keeps.
        public var logLimit = 1000
        /// The device's passcode: an answer to a notification that needs authentication on a locked
        /// device (opening the app, a foreground action, an action that requires it) needs it.
        public var passcode = "0000"

        /// The defaults.
        public init() {}

        /// The app link's socket.
        public var appLinkPath: String { (stateDirectory as NSString).appendingPathComponent(AppLink.socketName) }
    }

    /// The state of the link to the push service.
    public typealias GatewayState = GatewayLinkState

    /// A connected app process.
    struct Session {
        let id: Int
        let send: @Sendable (AppLinkFrame) -> Void
        /// Ends the connection from the daemon's side, after what was sent.
        let close: @Sendable () -> Void
    }

    /// Work an app was given time for: a background wake or a response.
    struct Outstanding {
        var started: Date
        var timer: Task<Void, Never>
    }

    public let configuration: Configuration
    let clock: any WallClock
    let store: any DeviceStore
    let launcher: any AppLauncher
    let presenters: [any Presenter]
    let logger: Logger
    /// The link to the push service, the apps' tokens and the pushes already taken.
    let gateway: GatewaySession
    var engine: DeviceEngine
    var sessions: [String: Session] = [:]
    var nextSession = 0
    /// Apps being launched: their events wait here until they connect.
    var waiting: [String: [AppLinkEvent]] = [:]
    /// The process of each app launched last, while the daemon knows it runs (for ``exited(_:pid:status:)``).
    var launchedPIDs: [String: Int32] = [:]
    /// The deadline of each launch not yet connected (``Configuration/launchWait``).
    var launchDeadlines: [String: Task<Void, Never>] = [:]
    var outstanding: [String: Outstanding] = [:]
    /// The presentation log, oldest first, at most ``Configuration/logLimit``.
    var entries = Deque<DeviceLogEntry>()
    var timer: Task<Void, Never>?
    var timerWake: Date?
    var lastSave: Task<Void, any Error>?
    /// The last location fix.
    public private(set) var location: LocationFix?
    /// Whether the device is locked: the web device shows the lock screen, what arrives lands there
    /// rather than in a banner, and an answer that needs authentication needs the passcode.
    public var locked: Bool { engine.locked }
    /// The app the screen shows in front, and what it was last told, from the moment a notification
    /// or its icon opened it until the user goes home.
    var front: FrontApp?
    /// Every log entry as it happens, for live views (the web device).
    public nonisolated let feed = DeviceFeed()
    /// Authorization requests shown to the user, by app, with the calls waiting for the answer.
    var prompts: [String: (prompt: PermissionPrompt, waiters: [CheckedContinuation<Void, any Error>])] = [:]
    /// Held for the service's life: one daemon per state directory.
    let lock: StateDirectoryLock

    /// Locks the state directory (another process using it is refused with
    /// ``StateDirectoryLock/Locked`` before anything in it is touched), opens the store in it and
    /// loads every app's record. `networkClock` times reconnects and the wait for the push service:
    /// it stays real time when the device's `clock` is manual, so a stopped clock never stalls the link.
    public init(
        configuration: Configuration, clock: any WallClock = SystemClock(),
        networkClock: any WallClock = SystemClock(), store: (any DeviceStore)? = nil,
        launcher: any AppLauncher = ProcessLauncher(),
        presenters: [any Presenter] = [], logger: Logger = .silent
    ) async throws {
        let directory = URL(fileURLWithPath: configuration.stateDirectory)
        lock = try StateDirectoryLock(directory: directory, role: "herald device")
        let store = try store ?? SQLiteDeviceStore(path: directory.appendingPathComponent("device.sqlite").path)
        self.configuration = configuration
        self.clock = clock
        self.store = store
        self.launcher = launcher
        self.presenters = presenters
        self.logger = logger
        let snapshot = try await store.load()
        engine = DeviceEngine(
            configuration: configuration.engine, policy: FixedDecision(allow: configuration.userAllows),
            records: snapshot.records, device: snapshot.device ?? DeviceState())
        let identity = try DeviceIdentity.loadOrCreate(at: directory.appendingPathComponent("identity.json").path)
        gateway = GatewaySession(
            configuration: .init(
                urls: configuration.gatewayURL.map { [$0] + configuration.otherGatewayURLs } ?? [],
                caPath: configuration.gatewayCAPath,
                reconnectBase: configuration.reconnectBase.timeInterval,
                reconnectMaximum: configuration.reconnectMaximum.timeInterval,
                stateDirectory: directory),
            identity: identity, clock: networkClock, logger: logger,
            taken: snapshot.taken)
        await gateway.attach(self)
    }

    /// Stops using the state directory: waits for the last save and releases its lock, so that
    /// another daemon (or another service in this process) may open it. The service must not be
    /// used afterwards.
    public func close() async {
        abandonPrompts()
        // No deadline of this service acts after it: no launch is ended, no budget runs out.
        for deadline in launchDeadlines.values { deadline.cancel() }
        launchDeadlines = [:]
        for work in outstanding.values { work.timer.cancel() }
        outstanding = [:]
        _ = await lastSave?.result
        lock.unlock()
    }

    // MARK: - Running

    /// Fires what fell due while the daemon was stopped (once, marked late) and starts the timer.
    public func start() async {
        do {
            _ = try await apply(.start)
        } catch {
            logger.error("starting the engine failed", metadata: ["error": "\(error)"])
        }
    }

    // MARK: - Engine

    /// Hands an event to the engine at the clock's time, saves what changed, carries out the
    /// actions and moves the timer. Throws `NotificationError` for the engine's refusals and the
    /// store's error when the change could not be saved.
    @discardableResult
    public func apply(_ event: DeviceEvent) async throws -> [DeviceAction] {
        try await carryOut(try engine.handle(event, now: clock.now()))
    }

    /// Hands a Live Activity event to the engine, saves what changed and carries out the actions.
    @discardableResult
    public func applyActivity(_ event: ActivityEvent) async throws -> [DeviceAction] {
        try await carryOut(try engine.handleActivity(event, now: clock.now()))
    }

    /// Saves what the engine changed, then carries out its actions and sets the timer for its next wake.
    private func carryOut(_ actions: [DeviceAction]) async throws -> [DeviceAction] {
        try await persist()
        perform(actions)
        rescheduleTimer()
        return actions
    }

    /// Runs the engine up to the clock's time: fires what is due.
    public func tick() async {
        let actions = engine.advance(to: clock.now())
        do {
            try await persist()
        } catch {
            logger.error("saving fired notifications failed", metadata: ["error": "\(error)"])
        }
        perform(actions)
        rescheduleTimer()
    }

    /// Saves what changed (``DeviceEngine/takeChanges()``, ``DeviceStore/save(_:)``); saves run one
    /// after another, in order, and a failed save leaves its changes marked for the next.
    func persist() async throws {
        let changes = engine.takeChanges()
        let previous = lastSave
        if changes.isEmpty {
            try await previous?.value
            return
        }
        let store = self.store
        let save = Task {
            _ = try? await previous?.value
            try await store.save(changes)
        }
        lastSave = save
        do {
            try await save.value
        } catch {
            engine.restore(changes)
            throw error
        }
    }

    func rescheduleTimer() {
        let wake = engine.nextWake
        guard wake != timerWake else { return }
        timer?.cancel()
        timerWake = wake
        guard let wake else {
            timer = nil
            return
        }
        let clock = self.clock
        timer = Task { [weak self] in
            do { try await clock.sleep(until: wake) } catch { return }
            await self?.timerFired(wake)
        }
    }

    func timerFired(_ wake: Date) async {
        guard timerWake == wake else { return }
        timerWake = nil
        await tick()
    }

    /// The time the timer waits for, if any.
    public var nextWake: Date? { timerWake }

    // MARK: - Apps (the system's side)

    /// Installs (or updates) an app, reading its strings from `<lang>.lproj/Localizable.strings` in its
    /// bundle directory; registers its topic with the push service when it has an `aps-environment`.
    public func install(_ app: InstalledApp) async throws {
        var app = app
        if app.localization == nil, let directory = app.bundleDirectory {
            app.localization = try LocalizationBundle.load(bundleDirectory: directory)
        }
        try await apply(.installApp(app))
        note(.system, app: app.bundleID, "installed")
        if app.apsEnvironment != nil { await gateway.registerAll() }
    }

    /// Removes an app and everything it had; its topic is unregistered (now, or at the next connect),
    /// so the push service answers 410 `Unregistered` to its token.
    public func remove(_ bundleID: String) async throws {
        let environment = engine.apps[bundleID]?.app.apsEnvironment
        try await apply(.removeApp(bundleID))
        if let session = sessions.removeValue(forKey: bundleID) {
            session.send(.event(event: .stateChanged(state: .notRunning)))
        }
        waiting[bundleID] = nil
        launchDeadlines.removeValue(forKey: bundleID)?.cancel()
        await gateway.removed(bundleID, environment: environment)
        note(.system, app: bundleID, "removed")
    }

    /// Every installed app's record.
    public var records: [AppRecord] { engine.apps.values.sorted { $0.app.bundleID < $1.app.bundleID } }

    /// One app's record.
    public func record(_ bundleID: String) -> AppRecord? { engine.apps[bundleID] }

    /// An app's current device token (hex), once registered.
    public func token(of bundleID: String) async -> String? { await gateway.token(of: bundleID) }

    /// The device's id at the push service, once known.
    public var deviceID: String? { get async { await gateway.deviceID } }

    /// The state of the push service link.
    public var gatewayState: GatewayState { get async { await gateway.state } }

    /// The newest `limit` log entries, oldest first.
    public func log(limit: Int = 100) -> [DeviceLogEntry] { Array(entries.suffix(max(0, limit))) }

    /// The device's time zone.
    public var timeZone: TimeZone { engine.configuration.timeZone }

    /// Moves the device to another time zone: floating triggers follow.
    public func setTimeZone(_ zone: TimeZone) async throws {
        try await apply(.timeZoneChanged(zone))
        note(.system, app: "device", "time zone \(zone.identifier)")
    }

    /// A location fix (from the device API, later gpsd): location triggers fire on region crossings.
    public func setLocation(_ fix: LocationFix) async throws {
        location = fix
        try await apply(.locationFix(fix))
    }

    /// Locks or unlocks the device (the web device's lock button, `PUT /lock`).
    public func setLocked(_ locked: Bool) async throws {
        try await apply(.setLocked(locked))
    }

    /// The user's answer to a notification, as every presenter gives it: on a locked device an
    /// answer that needs authentication needs `passcode` (``Configuration/passcode``); without it,
    /// or with a wrong one, it is refused (`passcodeRequired`) and nothing happens.
    @discardableResult
    public func respond(app: String, identifier: String, action: String, text: String? = nil, passcode: String? = nil)
        async throws -> [DeviceAction]
    {
        if let passcode, passcode != configuration.passcode {
            throw NotificationError(.passcodeRequired, "wrong passcode")
        }
        return try await apply(
            .respond(
                app: app, identifier: identifier, actionIdentifier: action, text: text,
                authenticated: passcode != nil))
    }

    /// Whether an app is running, and how.
    public func runState(of bundleID: String) -> AppRunState? { engine.apps[bundleID]?.runState }
}
