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
    /// The user acts on a notification. `authenticated`: the user gave the passcode (or unlocked)
    /// for it; on a locked device an action that needs authentication is refused without it.
    case respond(app: String, identifier: String, actionIdentifier: String, text: String?, authenticated: Bool = false)
    /// The user answers a provisional notification's Keep or Turn Off.
    case provisionalChoice(app: String, choice: ProvisionalChoice)
    /// The user changes Notification Grouping for the app.
    case setGrouping(app: String, grouping: GroupingSetting)
    /// The device locks or unlocks.
    case setLocked(Bool)
    /// The user turns a Focus on or off, or changes the modes.
    case focus(FocusChange)
    /// The user changes Scheduled Summary.
    case updateSummary(SummarySettings)
    /// The user lets the app read whether a Focus is on (`INFocusStatusCenter`), or not.
    case setFocusStatusAuthorization(app: String, allowed: Bool)
    // The app, legacy
    /// `scheduleLocalNotification:` / `presentLocalNotificationNow:`: a `UILocalNotification`-style
    /// schedule whose dates the device computes on its own clock.
    case addLegacy(app: String, notification: LegacyNotification)
}

/// What the user chooses on a provisional notification (Keep → Deliver Prominently or Deliver
/// Quietly, or Turn Off).
public enum ProvisionalChoice: String, Sendable, Hashable, Codable, CaseIterable {
    /// Keep → Deliver Prominently: banners, sounds, badges, the lock screen.
    case deliverProminently = "prominently"
    /// Keep → Deliver Quietly: Notification Center only, decided.
    case deliverQuietly = "quietly"
    /// Turn Off: the app is denied.
    case turnOff = "off"
}

/// A change to the Focus modes or to which is on.
public enum FocusChange: Sendable, Hashable {
    /// Turns a mode on by hand, until a time or until turned off.
    case turnOn(String, until: Date?)
    /// Turns off the Focus that is on (a scheduled one until its interval ends).
    case turnOff
    /// Adds or replaces a mode.
    case put(FocusMode)
    /// Removes a mode the user added.
    case remove(String)
}

/// The device's notification center as a value-type state machine: it takes events and the current time and
/// returns actions; it does no I/O and reads no clock. `DeviceService` runs it with a store and a clock.
public struct DeviceEngine: Sendable {
    /// Tunables.
    public struct Configuration: Sendable {
        /// Pending local notifications kept per app (the seeds' 64).
        public var pendingLimit: Int = 64
        /// A notification processed this long after its fire date is marked late.
        public var lateTolerance: Duration = .seconds(5)
        /// The user's languages, for `loc-key`s.
        public var preferredLanguages: [String] = ["en"]
        /// The device's zone, for floating triggers.
        public var timeZone: TimeZone = TimeZone(identifier: "UTC")!
        /// Background time for `content-available` wakes and background actions.
        public var backgroundBudget: Duration = .seconds(30)
        /// Time a service extension gets for `mutable-content`.
        public var serviceExtensionBudget: Duration = .seconds(30)
        /// Live Activities an app may have active at once (Apple publishes no number; Herald's
        /// choice, docs/live-activities.md).
        public var activityLimit = 5
        /// Priority-10 updates an activity takes in an hour before the next waits (Apple publishes
        /// no number; Herald's choice).
        public var activityUpdateBudget = 10
        /// The same with `NSSupportsLiveActivitiesFrequentUpdates`.
        public var frequentActivityUpdateBudget = 60
        /// Notifications Notification Center keeps per app; the oldest go first (Apple publishes no
        /// number; Herald's choice, docs/device-engine.md). The same bound holds the notifications
        /// waiting for a Scheduled Summary.
        public var deliveredLimit = 100
        /// Requests pushed out by the pending limit that an app's record remembers (the newest).
        public var droppedLimit = 64
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
    /// Delivered or held notifications changed since the last ``takeChanges()``, per app: their rows
    /// are written from the record as it is (or deleted when gone).
    var changedNotifications: [String: Set<NotificationKey>] = [:]
    /// Whether ``device`` changed since the last ``takeChanges()``.
    var deviceChanged = false
    /// The `apns-id`s of the pushes handled since the last ``takeChanges()``: kept with the changes,
    /// so that a push sent again after a crash is known.
    var takenPushes: [String] = []
    /// The Focus modes, Scheduled Summary and the summaries delivered.
    public internal(set) var device = DeviceState()
    /// Whether the device is locked (runtime only: a restarted daemon starts unlocked).
    public internal(set) var locked = false
    /// The next arrival's place in the order of notifications.
    var nextSequence: Int64 = 1
    /// The Focus last announced (``DeviceAction/focusChanged(_:)``).
    var announcedFocus: ActiveFocus?
    /// When the Focus may change next, and when the next summary is due (with something held).
    var focusWake: Date?
    var summaryWake: Date?
    let policy: any UserDecisionPolicy
    var regions = RegionMonitor()
    var awaitingWillPresent: [Scheduler.Key: DeliveredNotification] = [:]
    /// Deadlines of the service extensions at work (the notifications themselves are in the app records).
    var extensionDeadlines = Scheduler()
    /// Each Live Activity's next stale date, dismissal or held update (the activities are in the app
    /// records).
    var activityTimers = Scheduler()

    /// Creates an engine, optionally with records and the device's state loaded from a store.
    public init(
        configuration: Configuration = .init(), policy: any UserDecisionPolicy, records: [AppRecord] = [],
        device: DeviceState = DeviceState()
    ) {
        self.configuration = configuration
        self.policy = policy
        self.device = device
        for var record in records {
            record.runState = .notRunning
            apps[record.app.bundleID] = record
            for notification in record.delivered + (record.held ?? []) {
                nextSequence = max(nextSequence, (notification.placement?.sequence ?? 0) + 1)
            }
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
        [scheduler.nextWake, extensionDeadlines.nextWake, activityTimers.nextWake, focusWake, summaryWake]
            .compactMap { $0 }.min()
    }

    /// What changed since the last call, for the store to write (``DeviceStore/save(_:)``); the
    /// changes are no longer marked.
    public mutating func takeChanges() -> DeviceChanges {
        var rows: [NotificationRow] = []
        for (app, keys) in changedNotifications.sorted(by: { $0.key < $1.key }) {
            guard let record = apps[app] else { continue }
            for key in keys.sorted(by: { ($0.held ? 1 : 0, $0.identifier) < ($1.held ? 1 : 0, $1.identifier) }) {
                let list = key.held ? (record.held ?? []) : record.delivered
                rows.append(
                    NotificationRow(
                        app: app, identifier: key.identifier, held: key.held,
                        notification: list.first { $0.identifier == key.identifier }))
            }
        }
        defer {
            changedApps = []
            removedApps = []
            changedNotifications = [:]
            deviceChanged = false
            takenPushes = []
        }
        return DeviceChanges(
            records: changedApps.sorted().compactMap { apps[$0] }, removed: removedApps.sorted(),
            notifications: rows, device: deviceChanged ? device : nil, taken: takenPushes)
    }

    /// Marks ``takeChanges()``'s answer as changed again after its write failed, so the next write
    /// retries it (what belongs to an app removed since is not marked; a removal is kept, since a
    /// reinstalled app's record is written after it).
    public mutating func restore(_ changes: DeviceChanges) {
        changedApps.formUnion(changes.records.map(\.app.bundleID).filter { apps[$0] != nil })
        removedApps.formUnion(changes.removed)
        // An app removed and installed again meanwhile: a later write may already hold its new record,
        // which the removal written again would delete; its record and every row are written after it.
        for app in changes.removed {
            guard let record = apps[app] else { continue }
            changedApps.insert(app)
            for n in record.delivered { mark(app, n.identifier, held: false) }
            for n in record.held ?? [] { mark(app, n.identifier, held: true) }
        }
        for row in changes.notifications where apps[row.app] != nil {
            changedNotifications[row.app, default: []].insert(
                NotificationKey(identifier: row.identifier, held: row.held))
        }
        if changes.device != nil { deviceChanged = true }
        takenPushes = changes.taken + takenPushes
    }

    // MARK: - Events

    /// Handles one event at `now`. Throws Apple's error codes for the app-facing calls.
    public mutating func handle(_ event: DeviceEvent, now: Date) throws(NotificationError) -> [DeviceAction] {
        switch event {
        case .start:
            return expireExtensions(now: now) + fireDue(now: now, starting: true) + fireActivityTimers(now: now)
                + deviceTimers(now: now, starting: true)
        case .installApp(let app):
            // Reinstalled before the removal was saved: the removal stays marked (it clears what the old
            // install left in the store) and the new record is written after it.
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
            changedNotifications[id] = nil
            removedApps.insert(id)
            if device.summary.apps.contains(id) || record.held?.isEmpty == false {
                device.summary.apps.removeAll { $0 == id }
                deviceChanged = true
                refreshSummaryWake(now: now)
            }
            return []
        case .appStateChanged(let app, let state):
            try modify(app) { $0.runState = state }
            guard state != .foreground else { return [] }
            // Asked while the app was in the foreground and not answered before it left (it went to
            // the background, or its process closed the link): the system decides, as for an app in
            // the background, in the order they arrived. Otherwise they would wait for an answer that
            // can no longer come.
            let unanswered = awaitingWillPresent.filter { $0.key.app == app }
            guard !unanswered.isEmpty else { return [] }
            for key in unanswered.keys { awaitingWillPresent[key] = nil }
            return unanswered.values.sorted { ($0.date, $0.identifier) < ($1.date, $1.identifier) }
                .flatMap { present(app, $0, allowed: .all, foreground: false, now: now) }
        case .timeZoneChanged(let zone):
            configuration.timeZone = zone
            rescheduleFloatingTriggers(now: now)
            return deviceTimers(now: now, starting: false)
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
            // The legacy calls also take what is on the screen away: the notification in the list, an
            // alert still up, a notification held for the summary.
            _ = try handle(.removePending(app: app, identifiers: identifiers), now: now)
            if let identifiers {
                for id in identifiers where removeHeld(app, id) {}
            } else {
                for id in apps[app]?.held?.map(\.identifier) ?? [] where removeHeld(app, id) {}
            }
            return try handle(.removeDelivered(app: app, identifiers: identifiers), now: now)
        case .removeDelivered(let app, let identifiers):
            guard let record = apps[app] else { throw unknownApp(app) }
            let ids = identifiers.map(Set.init) ?? Set(record.delivered.map(\.identifier))
            let removed = record.delivered.map(\.identifier).filter(ids.contains)
            removeDelivered(app, Set(removed))
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
            return present(app, notification, allowed: options, foreground: true, now: now)
        case .serviceExtensionFinished(let app, let identifier, let content):
            guard var record = apps[app], var waiting = record.awaitingExtension.removeValue(forKey: identifier) else {
                throw .invalid(
                    "serviceExtension", "no notification \(identifier) of \(app) is waiting for its extension")
            }
            apps[app] = record
            changedApps.insert(app)
            extensionDeadlines.remove(.init(app: app, id: identifier))
            if let content { waiting.notification.request.content = content }
            return deliver(app, waiting.notification, now: now)
        case .remoteNotification(let app, let payload, let apnsID, let collapseID, let pushType):
            return try remote(app, payload, apnsID: apnsID, collapseID: collapseID, pushType: pushType, now: now)
        case .updateSettings(let app, let settings):
            try modify(app) { $0.settings = settings }
            return []
        case .setGrouping(let app, let grouping):
            try modify(app) { $0.settings.groupingSetting = grouping }
            return []
        case .provisionalChoice(let app, let choice):
            return try provisionalChoice(app, choice)
        case .setLocked(let locked):
            guard locked != self.locked else { return [] }
            self.locked = locked
            return [.lockChanged(locked: locked)]
        case .focus(let change):
            return try changeFocus(change, now: now)
        case .updateSummary(let summary):
            return try updateSummary(summary, now: now)
        case .setFocusStatusAuthorization(let app, let allowed):
            try modify(app) { $0.focusStatusAuthorized = allowed }
            return []
        case .addLegacy(let app, let notification):
            return try add(app, try notification.request(now: now), now: now)
        case .setLocationAuthorization(let app, let allowed):
            try modify(app) {
                $0.locationAuthorized = allowed
                $0.locationDecided = true
            }
            return []
        case .respond(let app, let identifier, let actionIdentifier, let text, let authenticated):
            return try respond(app, identifier, actionIdentifier, text, authenticated: authenticated, now: now)
        }
    }

    /// Fires everything due at `now`, shows originals whose service extension ran out of time, turns
    /// Focus modes on and off by their schedules and delivers a Scheduled Summary that is due.
    public mutating func advance(to now: Date) -> [DeviceAction] {
        expireExtensions(now: now) + fireDue(now: now, starting: false) + fireActivityTimers(now: now)
            + deviceTimers(now: now, starting: false)
    }

    /// Shows the original content of notifications whose service extension did not finish in time.
    mutating func expireExtensions(now: Date) -> [DeviceAction] {
        var actions: [DeviceAction] = []
        for (key, _) in extensionDeadlines.takeDue(now: now) {
            guard let waiting = apps[key.app]?.awaitingExtension.removeValue(forKey: key.id) else { continue }
            changedApps.insert(key.app)
            actions += deliver(key.app, waiting.notification, now: now)
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
