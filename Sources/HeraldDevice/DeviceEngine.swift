import Foundation
import HeraldCore

/// Answers the first authorization request of an app, as the device's user would.
public protocol UserDecisionPolicy: Sendable {
    /// Whether the user allows `app` to use `options`.
    func decide(app: String, options: AuthorizationOptions) -> Bool
}

/// A policy with a fixed answer.
public struct FixedDecision: UserDecisionPolicy {
    public var allow: Bool
    /// Creates the policy.
    public init(allow: Bool) { self.allow = allow }
    /// Returns the fixed answer.
    public func decide(app: String, options: AuthorizationOptions) -> Bool { allow }
}

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
    case remoteNotification(app: String, payload: Payload, apnsID: String, collapseID: String?)
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
        /// Creates the defaults.
        public init() {}
    }

    public var configuration: Configuration
    /// Per app, by bundle id.
    public private(set) var apps: [String: AppRecord] = [:]
    /// Every dated pending request.
    public private(set) var scheduler = Scheduler()
    /// Apps changed since the last `takeChangedApps()`: what the store must write.
    public private(set) var changedApps: Set<String> = []
    /// Apps removed since the last `takeChangedApps()`.
    public private(set) var removedApps: Set<String> = []
    let policy: any UserDecisionPolicy
    var regions = RegionMonitor()
    var awaitingWillPresent: [Scheduler.Key: DeliveredNotification] = [:]
    /// Deadlines of the service extensions at work (the notifications themselves are in the app records).
    var extensionDeadlines = Scheduler()

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
        }
    }

    /// The earliest time the engine must be called again (`advance`), if any.
    public var nextWake: Date? {
        switch (scheduler.nextWake, extensionDeadlines.nextWake) {
        case (let a?, let b?): return min(a, b)
        case (let a, let b): return a ?? b
        }
    }

    /// Returns and clears the set of apps whose records changed (and those removed).
    public mutating func takeChangedApps() -> (changed: Set<String>, removed: Set<String>) {
        defer {
            changedApps = []
            removedApps = []
        }
        return (changedApps, removedApps)
    }

    /// Marks apps as changed again after a write of ``takeChangedApps()``'s answer failed, so the
    /// next write retries them (an app removed since is not marked).
    public mutating func restoreChanges(changed: Set<String>, removed: Set<String>) {
        changedApps.formUnion(changed.filter { apps[$0] != nil })
        removedApps.formUnion(removed.filter { apps[$0] == nil })
    }

    // MARK: - Events

    /// Handles one event at `now`. Throws Apple's error codes for the app-facing calls.
    public mutating func handle(_ event: DeviceEvent, now: Date) throws(NotificationError) -> [DeviceAction] {
        switch event {
        case .start:
            return expireExtensions(now: now) + fireDue(now: now, starting: true)
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
        case .remoteNotification(let app, let payload, let apnsID, let collapseID):
            return try remote(app, payload, apnsID: apnsID, collapseID: collapseID, now: now)
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
        expireExtensions(now: now) + fireDue(now: now, starting: false)
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

    mutating func requestAuthorization(_ app: String, _ options: AuthorizationOptions) throws(NotificationError)
        -> [DeviceAction]
    {
        guard var record = apps[app] else { throw unknownApp(app) }
        let status = record.settings.authorizationStatus
        let asks = status == .notDetermined || (status == .provisional && !options.contains(.provisional))
        if asks {
            // Provisional authorization is granted quietly; everything else asks the user once.
            let granted =
                options.contains(.provisional) && status == .notDetermined
                ? true : policy.decide(app: app, options: options)
            record.settings = .after(decision: granted, options: options)
            record.requestedOptions = options
            apps[app] = record
            changedApps.insert(app)
        }
        return [.authorizationResult(app: app, granted: record.settings.isAllowed, settings: record.settings)]
    }

    // MARK: - Scheduling

    mutating func add(_ app: String, _ request: NotificationRequest, now: Date) throws(NotificationError)
        -> [DeviceAction]
    {
        guard var record = apps[app] else { throw unknownApp(app) }
        if record.settings.authorizationStatus == .denied {
            throw NotificationError(.notificationsNotAllowed, "\(app): the user has not allowed notifications")
        }
        try request.validate()
        let key = Scheduler.Key(app: app, id: request.identifier)
        guard let trigger = request.trigger else {
            // No trigger: deliver now (and replace a pending request of the same identifier).
            if record.pending.removeValue(forKey: request.identifier) != nil { scheduler.remove(key) }
            apps[app] = record
            changedApps.insert(app)
            return deliver(app, DeliveredNotification(request: request, date: now, isRemote: false, late: false))
        }
        var next: Date?
        if case .location = trigger {
            next = nil
        } else {
            next = trigger.nextFireDate(after: now, anchor: now, deviceTimeZone: configuration.timeZone)
            guard next != nil else {
                throw NotificationError(.notificationInvalidNoDate, "trigger: matches no date after \(now)")
            }
        }
        record.pending[request.identifier] = PendingRequest(request: request, addedAt: now, nextFireDate: next)
        if let next { scheduler.schedule(key, at: next) } else { scheduler.remove(key) }
        regions.forget(regionKey(app, request.identifier))
        apps[app] = record
        changedApps.insert(app)
        return enforceLimit(app, now: now)
    }

    /// Keeps the `pendingLimit` requests that fire soonest (a repeating request counts once; location
    /// requests, having no date, count as firing last) and reports the rest.
    mutating func enforceLimit(_ app: String, now: Date) -> [DeviceAction] {
        guard var record = apps[app], record.pending.count > configuration.pendingLimit else { return [] }
        let ordered = record.pending.values.sorted { a, b in
            switch (a.nextFireDate, b.nextFireDate) {
            case (let x?, let y?): x != y ? x < y : a.addedAt < b.addedAt
            case (.some, nil): true
            case (nil, .some): false
            case (nil, nil): a.addedAt < b.addedAt
            }
        }
        let dropped = ordered.dropFirst(configuration.pendingLimit)
        for pending in dropped {
            record.pending[pending.request.identifier] = nil
            scheduler.remove(.init(app: app, id: pending.request.identifier))
            record.dropped.append(
                DroppedRequest(
                    request: pending.request, droppedAt: now,
                    reason: "more than \(configuration.pendingLimit) pending; this one fires later than the rest"))
        }
        apps[app] = record
        return [.pendingDropped(app: app, identifiers: dropped.map(\.request.identifier))]
    }

    /// Recomputes the next fire date of every calendar trigger in floating time after the device's zone changed.
    mutating func rescheduleFloatingTriggers(now: Date) {
        for (app, record) in apps {
            var changed = record
            for (id, pending) in record.pending {
                guard let trigger = pending.request.trigger, case .calendar(let c) = trigger, c.timeZone == .floating
                else { continue }
                let next = trigger.nextFireDate(
                    after: now, anchor: pending.addedAt, deviceTimeZone: configuration.timeZone)
                let key = Scheduler.Key(app: app, id: id)
                if let next {
                    changed.pending[id]?.nextFireDate = next
                    scheduler.schedule(key, at: next)
                } else if c.repeats {
                    // No date left in the new zone (a bounded repetition): it is over.
                    changed.pending[id] = nil
                    scheduler.remove(key)
                } else {
                    // The one-shot's wall time has already passed in the new zone: like a legacy fire date in
                    // the past, it is delivered now rather than kept pending forever.
                    changed.pending[id]?.nextFireDate = now
                    scheduler.schedule(key, at: now)
                }
            }
            if changed != record {
                apps[app] = changed
                changedApps.insert(app)
            }
        }
    }

    // MARK: - Firing

    mutating func fireDue(now: Date, starting: Bool) -> [DeviceAction] {
        var actions: [DeviceAction] = []
        for (key, date) in scheduler.takeDue(now: now) {
            guard var record = apps[key.app], var pending = record.pending[key.id] else { continue }
            let late = starting ? date < now : now.timeIntervalSince(date) > configuration.lateTolerance
            let request = pending.request
            if request.trigger?.repeats == true {
                // Missed repetitions fire once: the next date is after now, not after the missed one.
                let next = request.trigger?.nextFireDate(
                    after: now, anchor: pending.addedAt, deviceTimeZone: configuration.timeZone)
                pending.nextFireDate = next
                record.pending[key.id] = pending
                if let next { scheduler.schedule(key, at: next) } else { record.pending[key.id] = nil }
            } else {
                record.pending[key.id] = nil
            }
            apps[key.app] = record
            changedApps.insert(key.app)
            actions += deliver(key.app, DeliveredNotification(request: request, date: now, isRemote: false, late: late))
        }
        return actions
    }

    func regionKey(_ app: String, _ id: String) -> String { "\(app)\u{1F}\(id)" }

    mutating func locationFix(_ fix: LocationFix, now: Date) -> [DeviceAction] {
        var actions: [DeviceAction] = []
        for (app, record) in apps where record.locationAuthorized {
            for (id, pending) in record.pending {
                guard case .location(let trigger) = pending.request.trigger else { continue }
                var region = trigger.region
                region.identifier = regionKey(app, id)
                for crossing in regions.process([fix], regions: [region]) {
                    let wanted = crossing.kind == .entry ? trigger.region.notifyOnEntry : trigger.region.notifyOnExit
                    guard wanted else { continue }
                    if !trigger.repeats {
                        apps[app]?.pending[id] = nil
                        regions.forget(region.identifier)
                    }
                    changedApps.insert(app)
                    actions += deliver(
                        app, DeliveredNotification(request: pending.request, date: now, isRemote: false, late: false))
                }
            }
        }
        return actions
    }

    // MARK: - Remote notifications

    mutating func remote(_ app: String, _ payload: Payload, apnsID: String, collapseID: String?, now: Date)
        throws(NotificationError) -> [DeviceAction]
    {
        guard let record = apps[app] else { throw unknownApp(app) }
        let content = NotificationContent(payload: payload)
        let request = NotificationRequest(identifier: collapseID ?? apnsID, content: content, trigger: nil)
        let notification = DeliveredNotification(
            request: request, date: now, isRemote: true, late: false, apnsID: apnsID)
        let visible = payload.aps.hasUserVisibleContent
        var actions: [DeviceAction] = []
        if payload.aps.contentAvailable {
            // Launch first, so that the wake waits for the launched app to connect.
            if record.runState == .notRunning {
                actions.append(.launchApp(app: app, mode: .background, launchOptions: notification))
            }
            actions.append(
                .backgroundWake(app: app, notification: notification, budget: configuration.backgroundBudget))
            if !visible { return actions }
        }
        let settings = record.settings
        let anyTypes =
            settings.isAllowed
            && [
                settings.alertSetting, settings.soundSetting, settings.badgeSetting, settings.notificationCenterSetting,
            ]
            .contains(.enabled)
        if !anyTypes {
            // No notification types registered: the push reaches the app silently, without any UI.
            return actions + [.deliverSilently(app: app, notification: notification)]
        }
        if payload.aps.mutableContent && payload.aps.alert != nil {
            let deadline = now.addingTimeInterval(configuration.serviceExtensionBudget)
            apps[app]?.awaitingExtension[request.identifier] = AwaitingExtension(
                notification: notification, deadline: deadline)
            changedApps.insert(app)
            extensionDeadlines.schedule(.init(app: app, id: request.identifier), at: deadline)
            return actions + [.runServiceExtension(app: app, notification: notification, deadline: deadline)]
        }
        return actions + deliver(app, notification)
    }

    // MARK: - Presentation

    /// Records a delivery and decides its presentation by app state and settings.
    mutating func deliver(_ app: String, _ notification: DeliveredNotification) -> [DeviceAction] {
        guard var record = apps[app] else { return [] }
        guard record.settings.isAllowed else { return [] }  // never presented without authorization
        // Same identifier: replaces the delivered entry and moves it to the top.
        record.delivered.removeAll { $0.identifier == notification.identifier }
        record.delivered.insert(notification, at: 0)
        apps[app] = record
        changedApps.insert(app)
        if record.runState == .foreground {
            awaitingWillPresent[.init(app: app, id: notification.identifier)] = notification
            return [.askWillPresent(app: app, notification: notification)]
        }
        return present(app, notification, allowed: .all, foreground: false)
    }

    /// The presentation `options` ∩ the user's settings allow.
    mutating func present(
        _ app: String, _ notification: DeliveredNotification, allowed options: PresentationOptions,
        foreground: Bool
    ) -> [DeviceAction] {
        guard var record = apps[app] else { return [] }
        let s = record.settings
        let content = notification.request.content
        let provisional = s.authorizationStatus == .provisional
        let alertStyle: AlertStyle =
            options.contains(.banner) && s.alertSetting == .enabled && !provisional ? s.alertStyle : .none
        let inList = options.contains(.list) && s.notificationCenterSetting == .enabled
        var sound: PresentedSound?
        if options.contains(.sound), s.soundSetting == .enabled, !provisional, let requested = content.sound {
            switch requested {
            case .default: sound = .default
            case .named(let name): sound = .named(name)
            case .critical(let name, let volume):
                sound =
                    s.criticalAlertSetting == .enabled
                    ? .critical(name: name, volume: volume) : name.map { .named($0) } ?? .default
            }
        }
        var badge: Int?
        if options.contains(.badge), s.badgeSetting == .enabled, !provisional, let requested = content.badge {
            badge = requested
            record.badge = requested
            apps[app] = record
            changedApps.insert(app)
        }
        let category = record.categories[content.categoryIdentifier]
        var localized = notification
        localized.request.content = content.localized(
            with: record.app.localization, preferredLanguages: configuration.preferredLanguages)
        let presentation = Presentation(
            app: app, notification: localized, alertStyle: alertStyle, inList: inList,
            onLockScreen: s.lockScreenSetting == .enabled && alertStyle != .none, sound: sound, badge: badge,
            actions: category?.actions(for: .default) ?? [], minimalActions: category?.actions(for: .minimal) ?? [],
            requestedByForegroundApp: foreground)
        var actions: [DeviceAction] = []
        if alertStyle != .none || inList || sound != nil || badge != nil { actions.append(.present(presentation)) }
        if let badge { actions.append(.setBadge(app: app, badge: badge)) }
        return actions
    }

    // MARK: - Responses

    mutating func respond(_ app: String, _ identifier: String, _ actionIdentifier: String, _ text: String?)
        throws(NotificationError) -> [DeviceAction]
    {
        guard var record = apps[app] else { throw unknownApp(app) }
        guard let index = record.delivered.firstIndex(where: { $0.identifier == identifier }) else {
            throw .invalid("respond.identifier", "\(app) has no delivered notification \(identifier)")
        }
        let notification = record.delivered[index]
        let category = record.categories[notification.request.content.categoryIdentifier]
        let mode: LaunchMode
        var userText: String?
        var tell = true
        switch actionIdentifier {
        case StandardAction.defaultIdentifier:
            mode = .foreground
        case StandardAction.dismissIdentifier:
            mode = .background
            tell = category?.options.contains(.customDismissAction) == true
        default:
            guard let action = category?.action(withIdentifier: actionIdentifier) else {
                let known = (category?.actions.map(\.identifier) ?? []).joined(separator: ", ")
                throw .invalid(
                    "respond.action",
                    "\(actionIdentifier) is not an action of category '\(notification.request.content.categoryIdentifier)'"
                        + (known.isEmpty ? "" : " (actions: \(known))"))
            }
            mode = action.options.contains(.foreground) ? .foreground : .background
            if action.textInput != nil { userText = text ?? "" }
        }
        // Acting on a notification takes it out of the list.
        record.delivered.remove(at: index)
        apps[app] = record
        changedApps.insert(app)
        var actions: [DeviceAction] = [.removeFromScreen(app: app, identifiers: [identifier])]
        guard tell else { return actions }
        switch (record.runState, mode) {
        case (.notRunning, _):
            actions.append(.launchApp(app: app, mode: mode, launchOptions: notification))
        case (.background, .foreground):
            actions.append(.bringToForeground(app: app))
        default:
            break
        }
        actions.append(
            .tellApp(
                app: app,
                response: NotificationResponse(
                    notification: notification, actionIdentifier: actionIdentifier, userText: userText)))
        return actions
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
