import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import NIOCore

/// Today's iPhone in the device API (docs/device-api.md): Focus modes, Scheduled Summary,
/// Notification Center's stacks, and Keep or Turn Off on a provisional notification.
extension DeviceAPI {
    /// `PUT /focus`: turns a mode on (until a time, or until turned off), or off with `mode: null`.
    struct FocusBody: Codable {
        var mode: String?
        var until: Date?
    }

    /// `GET /focus`: the Focus on now and every mode.
    struct FocusView: Codable {
        var active: ActiveFocus?
        var modes: [FocusMode]
    }

    /// `PUT /focus/modes/{id}`: a mode's fields; a new mode needs a name, an existing one keeps what
    /// is not given.
    struct FocusModeBody: Codable {
        var name: String?
        var allowedApps: [String]?
        var allowsTimeSensitive: Bool?
        var schedules: [FocusSchedule]?
    }

    /// `PATCH /summary`: what changes.
    struct SummaryBody: Codable {
        var enabled: Bool?
        var times: [DayTime]?
        var apps: [String]?
    }

    /// `GET /summary`: the settings, when the next one is due, what waits for it, and the summaries
    /// delivered whose notifications are still listed.
    struct SummaryView: Codable {
        var settings: SummarySettings
        var next: Date?
        var held: [CenterNotification]
        var summaries: [CenterSummary]
    }

    /// `POST /apps/{app}/provisional`.
    struct ProvisionalBody: Codable { var choice: ProvisionalChoice }

    /// A notification as Notification Center and the lock screen show it.
    struct CenterNotification: Codable {
        var app: String
        var appName: String
        var identifier: String
        var title: String
        var subtitle: String
        var body: String
        var date: Date
        var threadIdentifier: String
        /// passive, active, time-sensitive or critical, as delivered.
        var level: InterruptionLevel
        /// Shown as "Time Sensitive".
        var timeSensitive: Bool
        /// The Focus that silenced it.
        var silencedBy: String?
        /// Delivered quietly: Keep and Turn Off are on it.
        var quiet: Bool
        /// In the lock screen's list (besides Notification Center).
        var lockScreen: Bool
        /// The Scheduled Summary it came in.
        var summaryID: String?
        /// `false`: legacy `hasAction = NO`, one OK button, never opens the app.
        var opensApp: Bool
        var summaryArgument: String?
        var relevanceScore: Double
    }

    /// A stack in Notification Center.
    struct CenterStack: Codable {
        var app: String
        var appName: String
        var thread: String
        var count: Int
        /// "and 3 more from Anna".
        var line: String?
        /// Newest first.
        var notifications: [CenterNotification]
    }

    /// A delivered summary with the notifications still in it.
    struct CenterSummary: Codable {
        var id: String
        var title: String
        var date: Date
        var notifications: [CenterNotification]
    }

    /// `GET /center`: Notification Center as the user sees it.
    struct CenterView: Codable {
        var locked: Bool
        var focus: ActiveFocus?
        var summaries: [CenterSummary]
        var stacks: [CenterStack]
        /// Notifications waiting for the next summary, and when it is due.
        var held: Int
        var nextSummary: Date?
    }

    static func addToday(to router: Router<BasicRequestContext>, service: DeviceService) {
        // The lock is the device's, whatever shows it: the web device, the desktop, the terminal.
        router.get("/lock") { _, _ in Self.json(LockBody(locked: await service.locked)) }
        router.put("/lock") { request, _ in
            let body = try await Self.decode(LockBody.self, request)
            try await Self.mapped { try await service.setLocked(body.locked) }
            return Self.json(LockBody(locked: await service.locked))
        }
        router.get("/focus") { _, _ in Self.json(await Self.focus(service)) }
        router.put("/focus") { request, _ in
            let body = try await Self.decode(FocusBody.self, request)
            try await Self.mapped {
                if let mode = body.mode {
                    try await service.apply(.focus(.turnOn(mode, until: body.until)))
                } else {
                    guard body.until == nil else {
                        throw HTTPError(.badRequest, message: "until: only with a mode to turn on")
                    }
                    try await service.apply(.focus(.turnOff))
                }
            }
            return Self.json(await Self.focus(service))
        }
        router.put("/focus/modes/{mode}") { request, context in
            let id = try context.parameters.require("mode")
            let body = try await Self.decode(FocusModeBody.self, request)
            let existing = await service.engine.device.focus.mode(id)
            guard let name = body.name ?? existing?.name else {
                throw HTTPError(.badRequest, message: "name: a new Focus needs one")
            }
            let mode = FocusMode(
                identifier: id, name: name, allowedApps: body.allowedApps ?? existing?.allowedApps ?? [],
                allowsTimeSensitive: body.allowsTimeSensitive ?? existing?.allowsTimeSensitive ?? true,
                schedules: body.schedules ?? existing?.schedules ?? [])
            try await Self.mapped { try await service.apply(.focus(.put(mode))) }
            return Self.json(await Self.focus(service))
        }
        router.delete("/focus/modes/{mode}") { _, context in
            let id = try context.parameters.require("mode")
            try await Self.mapped { try await service.apply(.focus(.remove(id))) }
            return Self.json(await Self.focus(service))
        }
        router.get("/summary") { _, _ in Self.json(await Self.summary(service)) }
        router.patch("/summary") { request, _ in
            let body = try await Self.decode(SummaryBody.self, request)
            var settings = await service.engine.device.summary
            if let enabled = body.enabled { settings.enabled = enabled }
            if let times = body.times { settings.times = times }
            if let apps = body.apps { settings.apps = apps }
            try await Self.mapped { try await service.apply(.updateSummary(settings)) }
            return Self.json(await Self.summary(service))
        }
        router.get("/center") { _, _ in Self.json(await Self.center(service)) }
        router.post("/apps/{app}/provisional") { request, context in
            let app = try context.parameters.require("app")
            _ = try await Self.record(app, service)
            let body = try await Self.decode(ProvisionalBody.self, request)
            try await Self.mapped { try await service.apply(.provisionalChoice(app: app, choice: body.choice)) }
            return Self.json(SettingsView(try await Self.record(app, service)))
        }
    }

    static func focus(_ service: DeviceService) async -> FocusView {
        let engine = await service.engine
        return FocusView(active: engine.activeFocus(at: await service.now), modes: engine.device.focus.modes)
    }

    static func summary(_ service: DeviceService) async -> SummaryView {
        let engine = await service.engine
        let held = engine.heldNotifications.sorted {
            ($0.notification.placement?.sequence ?? 0) > ($1.notification.placement?.sequence ?? 0)
        }
        return SummaryView(
            settings: engine.device.summary, next: engine.nextSummary(after: await service.now),
            held: held.compactMap { item in engine.apps[item.app].map { Self.shown(item.notification, of: $0, engine) }
            },
            summaries: Self.summaries(engine))
    }

    static func summaries(_ engine: DeviceEngine) -> [CenterSummary] {
        engine.summaries.map { summary in
            CenterSummary(
                id: summary.id, title: summary.title, date: summary.date,
                notifications: summary.items.compactMap { item in
                    guard let record = engine.apps[item.app],
                        let n = record.delivered.first(where: { $0.identifier == item.identifier })
                    else { return nil }
                    return Self.shown(n, of: record, engine)
                })
        }
    }

    static func center(_ service: DeviceService) async -> CenterView {
        let engine = await service.engine
        let now = await service.now
        return CenterView(
            locked: engine.locked, focus: engine.activeFocus(at: now), summaries: Self.summaries(engine),
            stacks: Self.stacks(engine), held: engine.heldNotifications.count,
            nextSummary: engine.nextSummary(after: now))
    }

    /// Every app's stacks (notifications that came in a summary are in the summary instead), the
    /// newest stack first.
    static func stacks(_ engine: DeviceEngine) -> [CenterStack] {
        let inSummary = Set(engine.summaries.flatMap { s in s.items.map { "\($0.app)\n\($0.identifier)" } })
        var stacks: [(Int64, CenterStack)] = []
        for record in engine.apps.values {
            let app = record.app.bundleID
            let listed = record.delivered.filter { !inSummary.contains("\(app)\n\($0.identifier)") }
            for stack in NotificationStack.stacks(app: app, listed, grouping: record.settings.grouping) {
                let top = stack.notifications[0].placement?.sequence ?? 0
                stacks.append(
                    (
                        top,
                        CenterStack(
                            app: app, appName: InstalledApp.displayName(of: app), thread: stack.thread,
                            count: stack.count, line: stack.line,
                            notifications: stack.notifications.map { Self.shown($0, of: record, engine) })
                    ))
            }
        }
        return stacks.sorted { $0.0 > $1.0 }.map(\.1)
    }

    /// A notification as the screens show it: localized, with previews hidden as the settings say.
    static func shown(_ n: DeliveredNotification, of record: AppRecord, _ engine: DeviceEngine) -> CenterNotification {
        let content = engine.localized(record, n.request.content)
        let category = record.categories[content.categoryIdentifier]
        let text = Self.preview(content, category: category, settings: record.settings, locked: engine.locked)
        let placement = n.placement ?? NotificationPlacement()
        return CenterNotification(
            app: record.app.bundleID, appName: InstalledApp.displayName(of: record.app.bundleID),
            identifier: n.identifier, title: text.title, subtitle: text.subtitle, body: text.body, date: n.date,
            threadIdentifier: content.threadIdentifier,
            level: placement.critical
                ? .critical
                : placement.timeSensitive ? .timeSensitive : content.interruptionLevel == .passive ? .passive : .active,
            timeSensitive: placement.timeSensitive, silencedBy: placement.silencedBy, quiet: placement.quiet,
            lockScreen: placement.lockScreen, summaryID: placement.summaryID, opensApp: content.opensApp,
            summaryArgument: content.summaryArgument, relevanceScore: content.relevanceScore)
    }
}
