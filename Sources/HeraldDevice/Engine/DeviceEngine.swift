import Foundation
import HeraldCore

/// What happens on the device, as input to the engine.
public enum DeviceEvent: Sendable {
    // The system
    case start
    case installApp(InstalledApp)
    case removeApp(String)
    case appStateChanged(app: String, state: AppRunState)
    case timeZoneChanged(TimeZone)
    case locationFix(LocationFix)
    // The app
    case requestAuthorization(app: String, options: AuthorizationOptions)
    /// The user answered the system's permission dialog for the app's request (the device asks the
    /// user itself rather than its policy: `herald device --permission interactive`).
    case authorizationAnswered(app: String, options: AuthorizationOptions, granted: Bool)
    case setCategories(app: String, categories: [NotificationCategory])
    case add(app: String, request: NotificationRequest)
    case removePending(app: String, identifiers: [String]?)
    /// Legacy `cancelLocalNotification:` / `cancelAllLocalNotifications`: removes the pending requests and
    /// also dismisses their notifications if shown.
    case cancelLegacy(app: String, identifiers: [String]?)
    case removeDelivered(app: String, identifiers: [String]?)
    case setBadge(app: String, badge: Int)
    case willPresentAnswered(app: String, identifier: String, options: PresentationOptions)
    case serviceExtensionFinished(app: String, identifier: String, content: NotificationContent?)
    // The push service
    case remoteNotification(
        app: String, payload: Payload, apnsID: String, collapseID: String?, pushType: PushType = .alert)
    // The user
    case updateSettings(app: String, settings: NotificationSettings)
    case setLocationAuthorization(app: String, allowed: Bool)
    case respond(app: String, identifier: String, actionIdentifier: String, text: String?)
}

/// The device's notification center as a value-type state machine: it takes events and the current time and
/// returns actions; it does no I/O and reads no clock. `DeviceService` runs it with a store and a clock.
public struct DeviceEngine: Sendable {
    /// Tunables.
    public struct Configuration: Sendable {
        /// Pending local notifications kept per app (the seeds' 64).
        public var pendingLimit: Int = 64
        /// A notification processed this long after its fire date is marked late.
        public var lateTolerance: TimeInterval = 5
        /// The user's languages, for `loc-key`s.
        public var preferredLanguages: [String] = ["en"]
        /// The device's zone, for floating triggers.
        public var timeZone: TimeZone = TimeZone(identifier: "UTC")!
        /// Background time for `content-available` wakes and background actions.
        public var backgroundBudget: TimeInterval = 30
        /// Time a service extension gets for `mutable-content`.
        public var serviceExtensionBudget: TimeInterval = 30
        /// Live Activities an app may have active at once (Apple publishes no number; Herald's
        /// choice, docs/live-activities.md).
        public var activityLimit = 5
        /// Priority-10 updates an activity takes in an hour before the next waits (Apple publishes
        /// no number; Herald's choice).
        public var activityUpdateBudget = 10
        /// The same with `NSSupportsLiveActivitiesFrequentUpdates`.
        public var frequentActivityUpdateBudget = 60
        /// Creates the defaults.
        public init() {}
    }

    public var configuration: Configuration
    /// Per app, by bundle id.
    public internal(set) var apps: [String: AppRecord] = [:]
    /// Every dated pending request.
    public internal(set) var scheduler = Scheduler()
    /// Apps changed since the last ``takeChanges()``: what the store must write.
    public internal(set) var changedApps: Set<String> = []
    /// Apps removed since the last ``takeChanges()``.
    public internal(set) var removedApps: Set<String> = []
    let policy: any UserDecisionPolicy
    var regions = RegionMonitor()
    var awaitingWillPresent: [Scheduler.Key: DeliveredNotification] = [:]
    /// Deadlines of the service extensions at work (the notifications themselves are in the app records).
    var extensionDeadlines = Scheduler()
    /// Each Live Activity's next stale date, dismissal or held update (the activities are in the app
    /// records).
    var activityTimers = Scheduler()

    /// Creates an engine, optionally with records loaded from a store.
    public init(configuration: Configuration = .init(), policy: any UserDecisionPolicy, records: [AppRecord] = []) {
        self.configuration = configuration
        self.policy = policy
        for var record in records {
            record.runState = .notRunning
            apps[record.app.bundleID] = record
            for (id, pending) in record.pending {
                if let date = pending.nextFireDate {
                    scheduler.schedule(.init(app: record.app.bundleID, id: id), at: date)
                }
            }
            for (id, waiting) in record.awaitingExtension {
                extensionDeadlines.schedule(.init(app: record.app.bundleID, id: id), at: waiting.deadline)
            }
            for id in record.liveActivities.activities.keys { scheduleActivityTimer(record.app.bundleID, id) }
        }
    }

    /// The earliest time the engine must be called again (`advance`), if any.
    public var nextWake: Date? {
        [scheduler.nextWake, extensionDeadlines.nextWake, activityTimers.nextWake].compactMap { $0 }.min()
    }

    /// What changed since the last call, for the store to write (``DeviceStore/save(_:)``); the
    /// changes are no longer marked.
    public mutating func takeChanges() -> DeviceChanges {
        defer {
            changedApps = []
            removedApps = []
        }
        return DeviceChanges(
            records: changedApps.sorted().compactMap { apps[$0] }, removed: removedApps.sorted())
    }

    /// Marks ``takeChanges()``'s answer as changed again after its write failed, so the next write
    /// retries it (an app removed since is not marked).
    public mutating func restore(_ changes: DeviceChanges) {
        changedApps.formUnion(changes.records.map(\.app.bundleID).filter { apps[$0] != nil })
        removedApps.formUnion(changes.removed.filter { apps[$0] == nil })
    }

    // MARK: - Events

    /// Handles one event at `now`. Throws Apple's error codes for the app-facing calls.
    public mutating func handle(_ event: DeviceEvent, now: Date) throws(NotificationError) -> [DeviceAction] {
        switch event {
        case .start:
            return expireExtensions(now: now) + fireDue(now: now, starting: true) + fireActivityTimers(now: now)
        case .installApp(let app):
            removedApps.remove(app.bundleID)  // reinstalled before the removal was saved: keep the new record
            if apps[app.bundleID] == nil {
                apps[app.bundleID] = AppRecord(app: app)
            } else {
                apps[app.bundleID]!.app = app
            }
            changedApps.insert(app.bundleID)
            return []
        case .removeApp(let id):
            guard let record = apps.removeValue(forKey: id) else { throw unknownApp(id) }
            for key in record.pending.keys { scheduler.remove(.init(app: id, id: key)) }
            for key in record.awaitingExtension.keys { extensionDeadlines.remove(.init(app: id, id: key)) }
            for key in record.pending.keys { regions.forget(regionKey(id, key)) }
            for key in record.liveActivities.activities.keys { activityTimers.remove(.init(app: id, id: key)) }
            awaitingWillPresent = awaitingWillPresent.filter { $0.key.app != id }
            changedApps.remove(id)
            removedApps.insert(id)
            return []
        case .appStateChanged(let app, let state):
            try modify(app) { $0.runState = state }
            return []
        case .timeZoneChanged(let zone):
            configuration.timeZone = zone
            rescheduleFloatingTriggers(now: now)
            return []
        case .locationFix(let fix):
            return locationFix(fix, now: now)
        case .requestAuthorization(let app, let options):
            return try requestAuthorization(app, options)
        case .authorizationAnswered(let app, let options, let granted):
            return try requestAuthorization(app, options, answer: granted)
        case .setCategories(let app, let categories):
            try modify(app) { record in
                record.categories = Dictionary(categories.map { ($0.identifier, $0) }, uniquingKeysWith: { $1 })
            }
            return []
        case .add(let app, let request):
            return try add(app, request, now: now)
        case .removePending(let app, let identifiers):
            guard var record = apps[app] else { throw unknownApp(app) }
            let ids = identifiers ?? Array(record.pending.keys)
            for id in ids where record.pending.removeValue(forKey: id) != nil {
                scheduler.remove(.init(app: app, id: id))
                regions.forget(regionKey(app, id))
            }
            apps[app] = record
            changedApps.insert(app)
            return []
        case .cancelLegacy(let app, let identifiers):
            _ = try handle(.removePending(app: app, identifiers: identifiers), now: now)
            return try handle(.removeDelivered(app: app, identifiers: identifiers), now: now)
        case .removeDelivered(let app, let identifiers):
            var removed: [String] = []
            try modify(app) { record in
                let ids = Set(identifiers ?? record.delivered.map(\.identifier))
                removed = record.delivered.map(\.identifier).filter(ids.contains)
                record.delivered.removeAll { ids.contains($0.identifier) }
            }
            return removed.isEmpty ? [] : [.removeFromScreen(app: app, identifiers: removed)]
        case .setBadge(let app, let badge):
            guard badge >= 0 else {
                throw NotificationError(.badgeInputInvalid, "badge: must be 0 or more, not \(badge)")
            }
            try modify(app) { $0.badge = badge }
            return [.setBadge(app: app, badge: badge)]
        case .willPresentAnswered(let app, let identifier, let options):
            guard let notification = awaitingWillPresent.removeValue(forKey: .init(app: app, id: identifier)) else {
                throw .invalid("willPresent", "no notification \(identifier) of \(app) is waiting for an answer")
            }
            return present(app, notification, allowed: options, foreground: true)
        case .serviceExtensionFinished(let app, let identifier, let content):
            guard var record = apps[app], var waiting = record.awaitingExtension.removeValue(forKey: identifier) else {
                throw .invalid(
                    "serviceExtension", "no notification \(identifier) of \(app) is waiting for its extension")
            }
            apps[app] = record
            changedApps.insert(app)
            extensionDeadlines.remove(.init(app: app, id: identifier))
            if let content { waiting.notification.request.content = content }
            return deliver(app, waiting.notification)
        case .remoteNotification(let app, let payload, let apnsID, let collapseID, let pushType):
            return try remote(app, payload, apnsID: apnsID, collapseID: collapseID, pushType: pushType, now: now)
        case .updateSettings(let app, let settings):
            try modify(app) { $0.settings = settings }
            return []
        case .setLocationAuthorization(let app, let allowed):
            try modify(app) {
                $0.locationAuthorized = allowed
                $0.locationDecided = true
            }
            return []
        case .respond(let app, let identifier, let actionIdentifier, let text):
            return try respond(app, identifier, actionIdentifier, text)
        }
    }

    /// Fires everything due at `now` and shows originals whose service extension ran out of time.
    public mutating func advance(to now: Date) -> [DeviceAction] {
        expireExtensions(now: now) + fireDue(now: now, starting: false) + fireActivityTimers(now: now)
    }

    /// Shows the original content of notifications whose service extension did not finish in time.
    mutating func expireExtensions(now: Date) -> [DeviceAction] {
        var actions: [DeviceAction] = []
        for (key, _) in extensionDeadlines.takeDue(now: now) {
            guard let waiting = apps[key.app]?.awaitingExtension.removeValue(forKey: key.id) else { continue }
            changedApps.insert(key.app)
            actions += deliver(key.app, waiting.notification)
        }
        return actions
    }

    // MARK: - Authorization

    /// Whether a request for `options` would put the system's dialog in front of the user: the app has
    /// not been answered yet (or holds only provisional authorization and now asks for more), and
    /// does not ask for provisional authorization, which is granted quietly.
    public func asksUser(_ app: String, for options: AuthorizationOptions) -> Bool {
        guard let status = apps[app]?.settings.authorizationStatus else { return false }
        if options.contains(.provisional) { return false }
        return status == .notDetermined || status == .provisional
    }

    /// The answer to an authorization request: the user is asked once (`answer`, or the policy's
    /// answer without one); later requests get what was decided.
    mutating func requestAuthorization(
        _ app: String, _ options: AuthorizationOptions, answer: Bool? = nil
    ) throws(NotificationError) -> [DeviceAction] {
        guard var record = apps[app] else { throw unknownApp(app) }
        // Provisional authorization is granted quietly; everything else asks the user once.
        let quiet = options.contains(.provisional) && record.settings.authorizationStatus == .notDetermined
        if quiet || asksUser(app, for: options) {
            let granted = quiet ? true : answer ?? policy.decide(app: app, options: options)
            record.settings = .after(decision: granted, options: options)
            record.requestedOptions = options
            apps[app] = record
            changedApps.insert(app)
        }
        return [.authorizationResult(app: app, granted: record.settings.isAllowed, settings: record.settings)]
    }

    // MARK: - Helpers

    mutating func modify(_ app: String, _ change: (inout AppRecord) -> Void) throws(NotificationError) {
        guard var record = apps[app] else { throw unknownApp(app) }
        change(&record)
        apps[app] = record
        changedApps.insert(app)
    }

    func unknownApp(_ app: String) -> NotificationError { .invalid("app", "\(app) is not installed") }
}
