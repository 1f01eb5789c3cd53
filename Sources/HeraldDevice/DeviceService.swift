import Foundation
import HeraldCore
import HeraldRuntime
import Logging

/// The device daemon's heart: runs the `DeviceEngine` with its store and a clock, carries out the
/// engine's actions (presenters, app link, launching), keeps the link to the push service and the
/// apps' tokens. The app link server, the device API and `herald device` are thin layers over it.
public actor DeviceService {
    /// How the daemon runs.
    public struct Configuration: Sendable {
        /// The state directory: database, identity, tokens, the app link socket.
        public var stateDirectory: String = ".herald/device"
        /// The engine's tunables (time zone, languages, budgets).
        public var engine = DeviceEngine.Configuration()
        /// The push service's device link (`ws://…` on loopback or `wss://…`); `nil`: no push service.
        public var gatewayURL: String?
        /// The CA to trust for a `wss://` gateway (PEM file); `nil`: the system's roots.
        public var gatewayCAPath: String?
        /// First reconnect delay, in seconds; it doubles up to ``reconnectMaximum``, with jitter.
        public var reconnectBase: TimeInterval = 0.5
        /// The longest reconnect delay, in seconds.
        public var reconnectMaximum: TimeInterval = 30
        /// How long `registerForRemoteNotifications` waits for the push service, in seconds.
        public var registrationWait: TimeInterval = 10
        /// The user's answer to first authorization requests.
        public var userAllows = true
        /// Entries the presentation log keeps.
        public var logLimit = 1000

        /// The defaults.
        public init() {}

        /// The app link's socket.
        public var appLinkPath: String { (stateDirectory as NSString).appendingPathComponent(AppLink.socketName) }
    }

    /// The state of the link to the push service.
    public enum GatewayState: String, Sendable, Codable {
        /// No push service configured.
        case none
        /// Connecting, or waiting to reconnect.
        case disconnected
        /// Connected and authenticated.
        case connected
    }

    /// What the daemon keeps about the push service beside the engine's records (`link.json`).
    struct LinkState: Codable {
        /// Current tokens by bundle id, as hex.
        var tokens: [String: String] = [:]
        /// Topics to unregister once connected (apps removed while offline).
        var unregister: [LinkTopic] = []
    }

    struct LinkTopic: Codable, Hashable {
        var topic: String
        var environment: APNsEnvironment
    }

    /// A connected app process.
    struct Session {
        let id: Int
        let send: @Sendable (AppLinkFrame) -> Void
    }

    /// Work an app was given time for: a background wake or a response.
    struct Outstanding {
        var started: Date
        var timer: Task<Void, Never>
    }

    public let configuration: Configuration
    let clock: any DeviceClock
    /// Real time for the network: reconnect delays and the wait for the push service. It stays the
    /// system's clock when the device's clock is manual, so a stopped device clock never stalls the link.
    let networkClock: any DeviceClock
    let store: any DeviceStore
    let launcher: any AppLauncher
    let presenters: [any DevicePresenter]
    let logger: Logger
    var engine: DeviceEngine
    var identity: DeviceIdentity
    var linkState: LinkState
    var sessions: [String: Session] = [:]
    var nextSession = 0
    /// Apps being launched: their events wait here until they connect.
    var waiting: [String: [AppLinkEvent]] = [:]
    var outstanding: [String: Outstanding] = [:]
    var entries: [DeviceLogEntry] = []
    var gateway: GatewayLinkClient?
    var linkWaiters: [Int: CheckedContinuation<Bool, Never>] = [:]
    var nextWaiter = 0
    var timer: Task<Void, Never>?
    var timerWake: Date?
    var lastSave: Task<Void, any Error>?
    /// `apns-id`s of pushes already taken, newest last.
    var seen: Set<String> = []
    var seenOrder: [String] = []
    /// The last location fix.
    public private(set) var location: LocationFix?
    /// Held for the service's life: one daemon per state directory.
    let lock: StateDirectoryLock

    /// Locks the state directory (another process using it is refused with
    /// ``StateDirectoryLock/Locked`` before anything in it is touched), opens the store in it and
    /// loads every app's record.
    public init(
        configuration: Configuration, clock: any DeviceClock = SystemDeviceClock(),
        networkClock: any DeviceClock = SystemDeviceClock(), store: (any DeviceStore)? = nil,
        launcher: any AppLauncher = ProcessLauncher(),
        presenters: [any DevicePresenter] = [], logger: Logger = Logger(label: "herald.device")
    ) async throws {
        let directory = URL(fileURLWithPath: configuration.stateDirectory)
        lock = try StateDirectoryLock(directory: directory, role: "herald device")
        let store = try store ?? SQLiteDeviceStore(path: directory.appendingPathComponent("device.sqlite").path)
        self.configuration = configuration
        self.clock = clock
        self.networkClock = networkClock
        self.store = store
        self.launcher = launcher
        self.presenters = presenters
        self.logger = logger
        let records = try await store.loadAll()
        engine = DeviceEngine(
            configuration: configuration.engine, policy: FixedDecision(allow: configuration.userAllows),
            records: records)
        identity = try DeviceIdentity.loadOrCreate(at: directory.appendingPathComponent("identity.json").path)
        linkState =
            (try? JSONDecoder().decode(
                LinkState.self, from: Data(contentsOf: directory.appendingPathComponent("link.json")))) ?? LinkState()
        for record in records {
            for notification in record.delivered.reversed() {
                if let id = notification.apnsID { remember(id) }
            }
        }
    }

    /// Stops using the state directory: waits for the last save and releases its lock, so that
    /// another daemon (or another service in this process) may open it. The service must not be
    /// used afterwards.
    public func close() async {
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

    /// Keeps the link to the push service until cancelled: connects, registers the apps' topics,
    /// takes pushes, and reconnects after a failure with exponential backoff and jitter.
    public func runGatewayLink() async {
        guard let url = configuration.gatewayURL else { return }
        let ca = configuration.gatewayCAPath.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }
        var failures = 0
        while !Task.isCancelled {
            do {
                let client = try await GatewayLinkClient.connect(
                    url: url, identity: identity, caCertificatePEM: ca, autoAcknowledge: false)
                failures = 0
                await linked(client)
                for await event in client.events {
                    switch event {
                    case .pushes(let pushes):
                        for push in pushes { await take(push, from: client) }
                    case .reset: await registerAll(client)
                    case .closed(let reason):
                        logger.notice("device link closed", metadata: ["reason": "\(reason ?? "none")"])
                    }
                }
                await unlinked(client)
            } catch is CancellationError {
                break
            } catch {
                logger.warning("device link failed", metadata: ["url": "\(url)", "error": "\(error)"])
            }
            if Task.isCancelled { break }
            failures += 1
            let delay = Self.reconnectDelay(
                failures: failures, base: configuration.reconnectBase, maximum: configuration.reconnectMaximum,
                jitter: Double.random(in: 0...1))
            logger.info("reconnecting to the push service", metadata: ["in": "\(String(format: "%.2f", delay)) s"])
            do { try await networkClock.sleep(until: networkClock.now().addingTimeInterval(delay)) } catch { break }
        }
        await gateway?.close()
    }

    /// The wait before reconnect attempt `failures` (1, 2, …): `base · 2^(failures-1)`, at most
    /// `maximum`, then scaled by a jitter between 50% and 100% (`jitter` is 0…1).
    public static func reconnectDelay(failures: Int, base: Double, maximum: Double, jitter: Double) -> Double {
        let raw = min(maximum, base * pow(2, Double(max(0, min(failures - 1, 30)))))
        return raw * (0.5 + 0.5 * min(max(jitter, 0), 1))
    }

    func linked(_ client: GatewayLinkClient) async {
        gateway = client
        if identity.deviceID != client.deviceID {
            identity.deviceID = client.deviceID
            do {
                try identity.save(
                    to: URL(fileURLWithPath: configuration.stateDirectory).appendingPathComponent("identity.json").path
                )
            } catch {
                logger.error("could not save the device identity", metadata: ["error": "\(error)"])
            }
        }
        note(.system, app: "device", "connected to the push service as device \(client.deviceID)")
        for topic in linkState.unregister {
            do {
                try await client.unregister(topic: topic.topic, environment: topic.environment)
                linkState.unregister.removeAll { $0 == topic }
            } catch {
                logger.warning("unregistering a removed app failed", metadata: ["topic": "\(topic.topic)"])
            }
        }
        saveLinkState()
        await registerAll(client)
        let waiters = linkWaiters
        linkWaiters = [:]
        for (_, waiter) in waiters { waiter.resume(returning: true) }
    }

    func unlinked(_ client: GatewayLinkClient) async {
        if gateway === client { gateway = nil }
        await client.close()
    }

    /// Registers every app that has an `aps-environment` and tells apps whose token changed.
    func registerAll(_ client: GatewayLinkClient) async {
        for record in engine.apps.values.sorted(by: { $0.app.bundleID < $1.app.bundleID }) {
            guard let environment = record.app.apsEnvironment else { continue }
            do {
                let token = try await client.register(topic: record.app.bundleID, environment: environment)
                updateToken(record.app.bundleID, token.hex)
            } catch {
                logger.warning(
                    "registering an app with the push service failed",
                    metadata: ["app": "\(record.app.bundleID)", "error": "\(error)"])
            }
        }
    }

    func updateToken(_ app: String, _ token: String) {
        guard linkState.tokens[app] != token else { return }
        let had = linkState.tokens[app] != nil
        linkState.tokens[app] = token
        saveLinkState()
        note(.system, app: app, "device token \(token)")
        if had { sessions[app]?.send(.event(event: .tokenChanged(token: token))) }
    }

    func saveLinkState() {
        let url = URL(fileURLWithPath: configuration.stateDirectory).appendingPathComponent("link.json")
        do {
            try JSONEncoder().encode(linkState).write(to: url, options: .atomic)
        } catch {
            logger.error("could not save link.json", metadata: ["error": "\(error)"])
        }
    }

    /// Takes one push: hands it to the engine, saves, then acknowledges it. A push whose `apns-id`
    /// was already taken is acknowledged again and dropped.
    func take(_ push: LinkPush, from client: GatewayLinkClient) async {
        if seen.contains(push.apnsID) {
            client.acknowledge([push.apnsID])
            return
        }
        guard let app = engine.apps[push.topic] ?? Self.baseApp(of: push.topic, in: engine.apps) else {
            refuse(push, app: push.topic, reason: "the app \(push.topic) is not installed", client: client)
            return
        }
        let payload: Payload
        do {
            payload = try Payload(data: push.payload)
        } catch {
            refuse(push, app: app.app.bundleID, reason: "\(error)", client: client)
            return
        }
        do {
            _ = try await apply(
                .remoteNotification(
                    app: app.app.bundleID, payload: payload, apnsID: push.apnsID, collapseID: push.collapseID))
        } catch let error as NotificationError {
            refuse(push, app: app.app.bundleID, reason: "\(error)", client: client)
            return
        } catch {
            // Not saved: not acknowledged, so the push service keeps it and sends it again.
            logger.error("push not saved; not acknowledged", metadata: ["error": "\(error)"])
            return
        }
        remember(push.apnsID)
        client.acknowledge([push.apnsID])
    }

    /// A push the device cannot use: acknowledged (sending it again would not help), shown in the
    /// device's log and on its presenters, and reported to the push service for its delivery log.
    func refuse(_ push: LinkPush, app: String, reason: String, client: GatewayLinkClient) {
        logger.notice(
            "push refused", metadata: ["apns-id": "\(push.apnsID)", "topic": "\(push.topic)", "reason": "\(reason)"])
        note(.refused, app: app, push.apnsID, "refused push \(push.apnsID): \(reason)")
        remember(push.apnsID)
        client.acknowledge([push.apnsID])
        client.refused(push.apnsID, reason: reason)
    }

    /// `com.example.app.voip` and the like belong to `com.example.app`.
    static func baseApp(of topic: String, in apps: [String: AppRecord]) -> AppRecord? {
        for suffix in [".voip", ".complication", ".pushkit.fileprovider", ".push-type.liveactivity"]
        where topic.hasSuffix(suffix) {
            return apps[String(topic.dropLast(suffix.count))]
        }
        return nil
    }

    func remember(_ apnsID: String) {
        guard seen.insert(apnsID).inserted else { return }
        seenOrder.append(apnsID)
        if seenOrder.count > 20_000 {
            for id in seenOrder.prefix(10_000) { seen.remove(id) }
            seenOrder.removeFirst(10_000)
        }
    }

    /// Whether the push service link is up, waiting up to `seconds` for it.
    func waitForLink(seconds: TimeInterval) async -> Bool {
        if gateway != nil { return true }
        guard configuration.gatewayURL != nil, seconds > 0 else { return false }
        nextWaiter += 1
        let id = nextWaiter
        let clock = self.networkClock
        let deadline = clock.now().addingTimeInterval(seconds)
        let timeout = Task { [weak self] in
            try? await clock.sleep(until: deadline)
            await self?.endWait(id)
        }
        let linked = await withCheckedContinuation { linkWaiters[id] = $0 }
        timeout.cancel()
        return linked
    }

    func endWait(_ id: Int) {
        linkWaiters.removeValue(forKey: id)?.resume(returning: false)
    }

    // MARK: - Engine

    /// Hands an event to the engine at the clock's time, saves what changed, carries out the
    /// actions and moves the timer. Throws `NotificationError` for the engine's refusals and the
    /// store's error when the change could not be saved.
    @discardableResult
    public func apply(_ event: DeviceEvent) async throws -> [DeviceAction] {
        let actions = try engine.handle(event, now: clock.now())
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

    /// Saves changed records; saves run one after another, in order.
    func persist() async throws {
        let (changed, removed) = engine.takeChangedApps()
        let previous = lastSave
        if changed.isEmpty && removed.isEmpty {
            try await previous?.value
            return
        }
        let records = changed.compactMap { engine.apps[$0] }
        let store = self.store
        let save = Task {
            _ = try? await previous?.value
            try await store.save(records, removing: Array(removed))
        }
        lastSave = save
        do {
            try await save.value
        } catch {
            engine.restoreChanges(changed: changed, removed: removed)
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

    // MARK: - Actions

    func perform(_ actions: [DeviceAction]) {
        for action in actions {
            switch action {
            case .authorizationResult:
                break
            case .present(let presentation):
                let summary = PresentationSummary(presentation)
                note(
                    .presented, app: presentation.app, presentation.notification.identifier, summary.line,
                    presentation: summary)
            case .askWillPresent(let app, let notification):
                note(.willPresent, app: app, notification.identifier, "asking the foreground app how to present it")
                deliverEvent(app, .willPresent(notification: notification))
            case .deliverSilently(let app, let notification):
                note(.silent, app: app, notification.identifier, "delivered to the app without UI")
                deliverEvent(app, .remoteNotification(notification: notification))
            case .backgroundWake(let app, let notification, let budget):
                note(
                    .backgroundWake, app: app, notification.identifier,
                    "woken in the background for \(Int(budget)) s")
                if deliverEvent(app, .backgroundWake(notification: notification, budget: budget)) {
                    track(app, notification.identifier, kind: "background fetch", budget: budget)
                }
            case .runServiceExtension(let app, let notification, let deadline):
                note(.serviceExtension, app: app, notification.identifier, "given to the app's service extension")
                deliverEvent(app, .serviceExtension(notification: notification, deadline: deadline))
            case .launchApp(let app, let mode, let launchOptions):
                launch(app, mode: mode, launchOptions: launchOptions)
            case .bringToForeground(let app):
                note(.broughtForward, app: app, "brought to the foreground")
                _ = try? engine.handle(.appStateChanged(app: app, state: .foreground), now: clock.now())
                deliverEvent(app, .stateChanged(state: .foreground))
            case .tellApp(let app, let response):
                let id = response.notification.identifier
                note(
                    .response, app: app, id,
                    "response \(Self.actionName(response.actionIdentifier))"
                        + (response.userText.map { " with text \"\($0)\"" } ?? ""))
                if deliverEvent(app, .didReceive(response: response)) {
                    track(app, id, kind: "response", budget: configuration.engine.backgroundBudget)
                }
            case .setBadge(let app, let badge):
                note(.badge, app: app, "badge \(badge)")
            case .pendingDropped(let app, let identifiers):
                note(
                    .dropped, app: app,
                    "pending limit: dropped \(identifiers.joined(separator: ", "))")
            case .removeFromScreen(let app, let identifiers):
                note(.removed, app: app, "removed from the screen: \(identifiers.joined(separator: ", "))")
            }
        }
    }

    static func actionName(_ identifier: String) -> String {
        switch identifier {
        case StandardAction.defaultIdentifier: "default"
        case StandardAction.dismissIdentifier: "dismiss"
        default: identifier
        }
    }

    /// Sends an event to the app's process; while the app is being launched it waits for the app to
    /// connect. Returns whether the event will reach the app.
    @discardableResult
    func deliverEvent(_ app: String, _ event: AppLinkEvent) -> Bool {
        if let session = sessions[app] {
            session.send(.event(event: event))
        } else if waiting[app] != nil {
            waiting[app]!.append(event)
        } else {
            logger.debug("app not running; event not delivered", metadata: ["app": "\(app)"])
            return false
        }
        return true
    }

    func launch(_ app: String, mode: LaunchMode, launchOptions: DeliveredNotification?) {
        guard let record = engine.apps[app] else { return }
        if sessions[app] != nil || waiting[app] != nil { return }
        do {
            let pid = try launcher.launch(
                record.app, mode: mode, launchOptions: launchOptions, appLinkPath: configuration.appLinkPath)
            waiting[app] = []
            note(
                .launched, app: app, launchOptions?.identifier,
                "launched in the \(mode.rawValue) (pid \(pid))"
                    + (launchOptions.map { " with launch options for \($0.identifier)" } ?? ""))
        } catch {
            note(.launchFailed, app: app, launchOptions?.identifier, "could not launch: \(error)")
        }
    }

    func track(_ app: String, _ identifier: String, kind: String, budget: TimeInterval) {
        let key = "\(app)\n\(identifier)\n\(kind)"
        outstanding[key]?.timer.cancel()
        let clock = self.clock
        let started = clock.now()
        let deadline = started.addingTimeInterval(budget)
        let timer = Task { [weak self] in
            do { try await clock.sleep(until: deadline) } catch { return }
            await self?.expire(key, app: app, identifier: identifier, kind: kind, budget: budget)
        }
        outstanding[key] = Outstanding(started: started, timer: timer)
    }

    func expire(_ key: String, app: String, identifier: String, kind: String, budget: TimeInterval) {
        guard outstanding.removeValue(forKey: key) != nil else { return }
        note(.budgetExceeded, app: app, identifier, "\(kind) did not finish within \(Int(budget)) s")
    }

    func finish(_ app: String, _ identifier: String, kind: String, detail: String) -> Bool {
        let key = "\(app)\n\(identifier)\n\(kind)"
        guard let work = outstanding.removeValue(forKey: key) else { return false }
        work.timer.cancel()
        let seconds = clock.now().timeIntervalSince(work.started)
        note(
            .finished, app: app, identifier, "\(kind) finished after \(String(format: "%.1f", seconds)) s\(detail)")
        return true
    }

    func note(_ kind: DeviceLogEntry.Kind, app: String, _ text: String) {
        note(kind, app: app, nil, text)
    }

    func note(
        _ kind: DeviceLogEntry.Kind, app: String, _ identifier: String?, _ text: String,
        presentation: PresentationSummary? = nil
    ) {
        let entry = DeviceLogEntry(
            date: clock.now(), app: app, kind: kind, identifier: identifier, text: text, presentation: presentation)
        entries.append(entry)
        if entries.count > configuration.logLimit { entries.removeFirst(entries.count - configuration.logLimit) }
        logger.info(
            "\(kind.rawValue)", metadata: ["app": "\(app)", "id": "\(identifier ?? "-")", "text": "\(text)"])
        for presenter in presenters { presenter.show(entry) }
    }

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
        if app.apsEnvironment != nil, let gateway {
            await registerAll(gateway)
        }
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
        linkState.tokens[bundleID] = nil
        if let environment {
            let topic = LinkTopic(topic: bundleID, environment: environment)
            do {
                guard let gateway else { throw GatewayLinkClient.Failure(code: "Offline", message: "not connected") }
                try await gateway.unregister(topic: bundleID, environment: environment)
            } catch {
                linkState.unregister.append(topic)
                logger.notice(
                    "the app's topic will be unregistered when the push service is reachable",
                    metadata: ["app": "\(bundleID)", "error": "\(error)"])
            }
        }
        saveLinkState()
        note(.system, app: bundleID, "removed")
    }

    /// Every installed app's record.
    public var records: [AppRecord] { engine.apps.values.sorted { $0.app.bundleID < $1.app.bundleID } }

    /// One app's record.
    public func record(_ bundleID: String) -> AppRecord? { engine.apps[bundleID] }

    /// An app's current device token (hex), once registered.
    public func token(of bundleID: String) -> String? { linkState.tokens[bundleID] }

    /// The device's id at the push service, once known.
    public var deviceID: String? { identity.deviceID }

    /// The state of the push service link.
    public var gatewayState: GatewayState {
        configuration.gatewayURL == nil ? .none : gateway == nil ? .disconnected : .connected
    }

    /// The newest `limit` log entries, oldest first.
    public func log(limit: Int = 100) -> [DeviceLogEntry] { Array(entries.suffix(max(0, limit))) }

    /// The device's time zone.
    public var timeZone: TimeZone { engine.configuration.timeZone }

    /// The device's time.
    public var now: Date { clock.now() }

    /// Whether the device's clock moves only when told (``advanceClock(to:)``).
    public nonisolated var clockIsManual: Bool { clock is ManualDeviceClock }

    /// Moves a manual clock forward to `date` and fires what fell due on the way, in order, before it
    /// returns. Each wake on the way is a step of its own, so a repeating trigger fires once per
    /// occurrence, and a notification scheduled by an app in between (a snooze) fires in its turn.
    public func advanceClock(to date: Date) async throws(ClockError) {
        guard let manual = clock as? ManualDeviceClock else { throw .notManual }
        guard date >= manual.now() else { throw .backwards(now: manual.now()) }
        while let wake = engine.nextWake, wake <= date, wake > manual.now() {
            manual.advance(to: wake)
            await tick()
        }
        manual.advance(to: date)
        await tick()
        note(.system, app: "device", "clock advanced to \(Self.clockText(date))")
    }

    static func clockText(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }

    /// Why the clock could not be moved.
    public enum ClockError: Error, CustomStringConvertible, Sendable {
        /// The device runs on the system's clock.
        case notManual
        /// The clock never goes back.
        case backwards(now: Date)

        public var description: String {
            switch self {
            case .notManual: "the device runs on the system clock; start it with --manual-clock to move time"
            case .backwards(let now): "the clock never goes back; it is \(DeviceService.clockText(now))"
            }
        }
    }

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

    /// Whether an app is running, and how.
    public func runState(of bundleID: String) -> AppRunState? { engine.apps[bundleID]?.runState }

    // MARK: - App link

    /// An app process connected (`hello`): it is running, in `state`; events held for it go out now.
    func connect(_ bundleID: String, state: AppRunState, send: @escaping @Sendable (AppLinkFrame) -> Void)
        async throws -> Int
    {
        guard engine.apps[bundleID] != nil else {
            throw AppLinkFailure.protocolError("\(bundleID) is not installed on this device")
        }
        guard state != .notRunning else {
            throw AppLinkFailure.protocolError("state: an app that connects is running (foreground or background)")
        }
        if let previous = sessions[bundleID] {
            previous.send(.event(event: .stateChanged(state: .notRunning)))
        }
        nextSession += 1
        sessions[bundleID] = Session(id: nextSession, send: send)
        try await apply(.appStateChanged(app: bundleID, state: state))
        for event in waiting.removeValue(forKey: bundleID) ?? [] { send(.event(event: event)) }
        return nextSession
    }

    /// The app's connection closed: it is not running any more.
    func disconnect(_ bundleID: String, session: Int) async {
        guard sessions[bundleID]?.id == session else { return }
        sessions[bundleID] = nil
        if engine.apps[bundleID] != nil {
            _ = try? await apply(.appStateChanged(app: bundleID, state: .notRunning))
        }
    }

    /// Carries out one call of a connected app.
    func call(_ bundleID: String, _ call: AppLinkCall) async throws -> AppLinkResult {
        do {
            return try await answer(bundleID, call)
        } catch let error as NotificationError {
            throw AppLinkFailure(error)
        } catch let error as AppLinkFailure {
            throw error
        } catch {
            throw AppLinkFailure(domain: AppLink.heraldErrorDomain, code: 2, message: "the device failed: \(error)")
        }
    }

    func answer(_ app: String, _ call: AppLinkCall) async throws -> AppLinkResult {
        switch call {
        case .hello:
            throw AppLinkFailure.protocolError("hello: the app has already said who it is")
        case .setState(let state):
            guard state != .notRunning else {
                throw AppLinkFailure.protocolError("state: close the connection to stop running")
            }
            try await apply(.appStateChanged(app: app, state: state))
            return .done
        case .requestAuthorization(let options):
            let actions = try await apply(.requestAuthorization(app: app, options: options))
            for case .authorizationResult(_, let granted, let settings) in actions {
                note(.system, app: app, "authorization \(granted ? "granted" : "denied")")
                return .authorization(granted: granted, settings: settings)
            }
            throw AppLinkFailure.protocolError("requestAuthorization: the engine gave no answer")
        case .notificationSettings:
            return .settings(settings: try need(app).settings)
        case .setCategories(let categories):
            try await apply(.setCategories(app: app, categories: categories))
            return .done
        case .categories:
            return .categories(categories: try need(app).categories.values.sorted { $0.identifier < $1.identifier })
        case .add(let request):
            try await apply(.add(app: app, request: request))
            return .done
        case .pending:
            let pending = try need(app).pending.values.sorted {
                ($0.nextFireDate ?? .distantFuture, $0.request.identifier)
                    < ($1.nextFireDate ?? .distantFuture, $1.request.identifier)
            }
            return .pending(requests: pending)
        case .removePending(let identifiers):
            try await apply(.removePending(app: app, identifiers: identifiers))
            return .done
        case .delivered:
            return .delivered(notifications: try need(app).delivered)
        case .requestLocationAuthorization:
            if try need(app).locationDecided != true {
                try await apply(.setLocationAuthorization(app: app, allowed: configuration.userAllows))
                note(.system, app: app, "location \(configuration.userAllows ? "allowed" : "denied")")
            }
            return .locationAuthorization(granted: try need(app).locationAuthorized)
        case .removeDelivered(let identifiers):
            try await apply(.removeDelivered(app: app, identifiers: identifiers))
            return .done
        case .setBadge(let badge):
            try await apply(.setBadge(app: app, badge: badge))
            return .done
        case .registerForRemoteNotifications:
            return .token(token: try await register(app))
        case .unregisterForRemoteNotifications:
            let record = try need(app)
            if let environment = record.app.apsEnvironment, let gateway {
                try await gateway.unregister(topic: app, environment: environment)
            }
            linkState.tokens[app] = nil
            saveLinkState()
            return .done
        case .willPresentAnswer(let identifier, let options):
            try await apply(.willPresentAnswered(app: app, identifier: identifier, options: options))
            return .done
        case .responseHandled(let identifier):
            guard finish(app, identifier, kind: "response", detail: "") else {
                throw AppLinkFailure.protocolError("responseHandled: no response \(identifier) is waiting")
            }
            return .done
        case .backgroundFinished(let identifier, let result):
            guard finish(app, identifier, kind: "background fetch", detail: " (\(result.rawValue))") else {
                throw AppLinkFailure.protocolError("backgroundFinished: no background work \(identifier) is waiting")
            }
            return .done
        case .serviceExtensionFinished(let identifier, let content):
            try await apply(.serviceExtensionFinished(app: app, identifier: identifier, content: content))
            return .done
        }
    }

    func need(_ app: String) throws -> AppRecord {
        guard let record = engine.apps[app] else { throw NotificationError.invalid("app", "\(app) is not installed") }
        return record
    }

    /// `registerForRemoteNotifications`: the app's token from the push service.
    func register(_ app: String) async throws -> String {
        let record = try need(app)
        guard let environment = record.app.apsEnvironment else {
            throw AppLinkFailure(
                domain: AppLink.cocoaErrorDomain, code: 3000,
                message: "no valid \"aps-environment\" entitlement string found for application \(app)")
        }
        guard configuration.gatewayURL != nil else {
            throw AppLinkFailure(
                domain: AppLink.cocoaErrorDomain, code: 3010,
                message: "remote notifications are not supported: this device has no push service (--gateway)")
        }
        if gateway == nil, !(await waitForLink(seconds: configuration.registrationWait)) {
            if let token = linkState.tokens[app] { return token }
            throw AppLinkFailure(
                domain: AppLink.heraldErrorDomain, code: 3,
                message: "the push service is not reachable; registration will work once the device is connected")
        }
        guard let gateway else { throw AppLinkFailure.protocolError("the push service link closed") }
        let token = try await gateway.register(topic: app, environment: environment)
        updateToken(app, token.hex)
        return token.hex
    }
}

extension LocalizationBundle {
    /// Reads `<lang>.lproj/Localizable.strings` (or `Localizable.json`) from an app's bundle directory;
    /// `nil` when it has none. A table that cannot be read is an error.
    public static func load(bundleDirectory: String) throws -> LocalizationBundle? {
        let fm = FileManager.default
        guard let names = try? fm.contentsOfDirectory(atPath: bundleDirectory) else { return nil }
        var tables: [String: StringsTable] = [:]
        for name in names.sorted() where name.hasSuffix(".lproj") {
            let language = String(name.dropLast(".lproj".count))
            for file in ["Localizable.strings", "Localizable.json"] {
                let path = (bundleDirectory as NSString).appendingPathComponent("\(name)/\(file)")
                guard let data = fm.contents(atPath: path) else { continue }
                tables[language] = try StringsTable(data: data)
                break
            }
        }
        return tables.isEmpty ? nil : LocalizationBundle(tables: tables)
    }
}
