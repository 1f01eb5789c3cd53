import Foundation
import HeraldCore
import HeraldRuntime
import Logging
import Synchronization

/// Shows notifications on the desktop through the freedesktop Notifications interface
/// (`org.freedesktop.Notifications` on the session bus; `herald device --presenter desktop`):
/// app name and icon, summary and body, the default action and the category's actions for the context,
/// urgency from `interruption-level`, the resolved sound as `sound-file` (or `suppress-sound`), and
/// `replaces_id` when a notification replaces one on screen. The server's `ActionInvoked` and
/// `NotificationClosed` signals become the user's response through ``DeviceService/apply(_:)``, the
/// path `herald respond` takes. See docs/presenters.md.
public final class DesktopPresenter: Presenter {
    /// What the worker thread has to do.
    enum Job {
        case show(DeviceLogEntry)
        case activity(LiveActivity)
        case activityAlert(LiveActivity)
        case summary(SummaryEntry)
        case notice(app: String, summary: String, body: String)
        case close([UInt32])
    }

    struct State {
        var jobs: [Job] = []
        /// On screen: the server's id → the app and notification.
        var shown: [UInt32: Key] = [:]
        /// Ids the user already answered (or the engine removed): their closing is not a dismiss.
        var answered: Set<UInt32> = []
        var running = false
        var capabilities: [String] = []
    }

    struct Key: Hashable {
        var app: String
        var identifier: String
    }

    /// The user's response: app, notification identifier, action identifier.
    public typealias Responder = @Sendable (String, String, String) async -> Void

    private let state = Mutex(State())
    private let logger: Logger
    /// What the server can do (`GetCapabilities`), once started.
    public var capabilities: [String] { state.withLock { $0.capabilities } }

    /// A presenter that shows nothing until ``start(responder:)``.
    public init(logger: Logger = .silent) {
        self.logger = logger
    }

    /// Connects to the session bus, reads the server's capabilities (without `actions` it shows no
    /// buttons and says so in the log) and starts the thread that talks to it. Throws when there is
    /// no session bus or no notification server.
    public func start(responder: @escaping Responder) throws {
        let bus: DBusConnection
        var capabilities: [String] = []
        do {
            bus = try DBusConnection()
            let reply = try bus.call(
                destination: Self.service, path: Self.path, interface: Self.service, method: "GetCapabilities", [])
            if case .strings(let list)? = reply.first { capabilities = list }
            try bus.addMatch("type='signal',interface='\(Self.service)'")
        } catch {
            throw DesktopError(description: "the desktop presenter needs a notification server: \(error)")
        }
        if !capabilities.contains("actions") {
            logger.notice(
                "the notification server shows no actions: a click opens the notification, its actions are not offered",
                metadata: ["capabilities": "\(capabilities.joined(separator: ","))"])
        }
        state.withLock {
            $0.running = true
            $0.capabilities = capabilities
        }
        let thread = Thread { [self] in self.run(bus, responder: responder) }
        thread.name = "herald desktop presenter"
        thread.start()
    }

    /// Stops the thread (the notifications already shown stay).
    public func stop() { state.withLock { $0.running = false } }

    /// Says something to the user in a notification of its own (not answerable): why an answer given
    /// on the desktop was refused ("the device is locked: Decline needs the passcode").
    public func tell(app: String, summary: String, body: String) {
        state.withLock { $0.jobs.append(.notice(app: app, summary: summary, body: body)) }
    }

    /// Queues the entry for the thread: presentations are shown, removals closed.
    public func show(_ entry: DeviceLogEntry) {
        switch entry.kind {
        case .presented:
            // A banner or an alert only: what has no text, and what is passive, silenced by a Focus,
            // delivered quietly or held for the summary (no banner on iOS either) is not shown.
            guard let presentation = entry.presentation, presentation.alertStyle != AlertStyle.none.rawValue,
                presentation.hasText != false, entry.identifier != nil
            else { return }
            state.withLock { $0.jobs.append(.show(entry)) }
        case .summary:
            guard let summary = entry.summary else { return }
            state.withLock { $0.jobs.append(.summary(summary)) }
        case .activity:
            // A Live Activity is one resident notification, replaced as it changes, closed when it
            // leaves the screen (docs/live-activities.md).
            guard let activity = entry.activity else { return }
            state.withLock { state in
                if activity.state == .dismissed {
                    let key = Key(app: activity.app, identifier: Self.activityKey(activity.id))
                    let ids = state.shown.filter { $0.value == key }.map(\.key)
                    state.answered.formUnion(ids)
                    if !ids.isEmpty { state.jobs.append(.close(ids)) }
                } else {
                    state.jobs.append(.activity(activity))
                }
            }
        case .activityAlert:
            guard let activity = entry.activity, activity.alert != nil else { return }
            state.withLock { $0.jobs.append(.activityAlert(activity)) }
        case .removed:
            let removed = Set(entry.identifiers ?? entry.identifier.map { [$0] } ?? [])
            state.withLock { state in
                // Those the user answered here are being closed already.
                let ids = state.shown.filter {
                    $0.value.app == entry.app && removed.contains($0.value.identifier)
                        && !state.answered.contains($0.key)
                }
                .map(\.key)
                guard !ids.isEmpty else { return }
                state.answered.formUnion(ids)
                state.jobs.append(.close(ids))
            }
        default:
            return
        }
    }

    static let service = "org.freedesktop.Notifications"
    static let path = "/org/freedesktop/Notifications"

    // MARK: - The thread

    private func run(_ bus: DBusConnection, responder: @escaping Responder) {
        while true {
            let (running, jobs) = state.withLock { state in
                defer { state.jobs = [] }
                return (state.running, state.jobs)
            }
            guard running else { return }
            for job in jobs {
                do {
                    switch job {
                    case .show(let entry): try notify(bus, entry)
                    case .activity(let activity): try notify(bus, activity)
                    case .activityAlert(let activity): try alert(bus, activity)
                    case .summary(let summary): try notify(bus, summary)
                    case .notice(let app, let summary, let body):
                        try plain(bus, app: InstalledApp.displayName(of: app), summary: summary, body: body, urgency: 1)
                    case .close(let ids):
                        for id in ids {
                            _ = try bus.call(
                                destination: Self.service, path: Self.path, interface: Self.service,
                                method: "CloseNotification", [.uint32(id)])
                        }
                    }
                } catch {
                    logger.error("the notification server refused", metadata: ["error": "\(error)"])
                }
            }
            guard let signals = bus.signals(waiting: 100) else {
                logger.error("the session bus went away: no more desktop notifications")
                return
            }
            for signal in signals where signal.interface == Self.service { handle(signal, responder: responder) }
        }
    }

    private func notify(_ bus: DBusConnection, _ entry: DeviceLogEntry) throws {
        guard let p = entry.presentation, let identifier = entry.identifier else { return }
        let key = Key(app: entry.app, identifier: identifier)
        // A replaced request, or a collapsed push, takes the place of the one on screen.
        let replaces = state.withLock { state -> UInt32 in
            guard let id = state.shown.first(where: { $0.value == key })?.key else { return 0 }
            state.answered.insert(id)  // its closing, if the server reports one, is not a dismiss
            return id
        }
        var actions: [String] = []
        if self.capabilities.contains("actions") {
            actions = ["default", "Open"]
            let context = p.alertStyle == AlertStyle.alert.rawValue ? p.actions : (p.minimalActions ?? p.actions)
            for action in context { actions += [action, p.actionTitles?[action] ?? action] }
        }
        var hints: [(String, DBusConnection.Hint)] = [("urgency", .byte(Self.urgency(p.interruptionLevel)))]
        if p.interruptionLevel == InterruptionLevel.timeSensitive.rawValue {
            hints.append(("category", .string("x-herald.time-sensitive")))
        }
        if let file = p.soundFile {
            hints.append(("sound-file", .string(file)))
        } else if p.sound == nil {
            hints.append(("suppress-sound", .boolean(true)))
        } else {
            hints.append(("sound-name", .string("message-new-instant")))
        }
        let summary = [p.title, p.subtitle].filter { !$0.isEmpty }.joined(separator: " — ")
        let reply = try bus.call(
            destination: Self.service, path: Self.path, interface: Self.service, method: "Notify",
            [
                // The label iOS puts on it: "Time Sensitive".
                .string(
                    InstalledApp.displayName(of: entry.app)
                        + (p.interruptionLevel == InterruptionLevel.timeSensitive.rawValue ? " · Time Sensitive" : "")),
                .uint32(replaces), .string(p.icon ?? ""),
                .string(summary.isEmpty ? InstalledApp.displayName(of: entry.app) : summary), .string(p.body),
                .strings(actions), .hints(hints), .int32(-1),
            ])
        guard case .uint32(let id)? = reply.first else { return }
        state.withLock { state in
            if replaces != 0 { state.shown[replaces] = nil }
            // Servers usually keep the id for a replacement: then it is a new, unanswered notification.
            state.answered.remove(id)
            state.shown[id] = key
        }
    }

    /// A Scheduled Summary: one quiet notification (no sound, low urgency) with its title and its
    /// first items, not answerable (each item opens from the device's list, as itself).
    private func notify(_ bus: DBusConnection, _ summary: SummaryEntry) throws {
        var lines = summary.items.prefix(3).map { item in
            "\(InstalledApp.displayName(of: item.app)): "
                + [item.title, item.body].filter { !$0.isEmpty }.joined(separator: " — ")
        }
        if summary.items.count > 3 { lines.append("and \(summary.items.count - 3) more") }
        try plain(
            bus, app: "Scheduled Summary", summary: summary.title, body: lines.joined(separator: "\n"), urgency: 0)
    }

    /// A notification nobody answers: shown, silent, and its closing or clicking ignored.
    private func plain(_ bus: DBusConnection, app: String, summary: String, body: String, urgency: UInt8) throws {
        let reply = try bus.call(
            destination: Self.service, path: Self.path, interface: Self.service, method: "Notify",
            [
                .string(app), .uint32(0), .string(""), .string(summary), .string(body), .strings([]),
                .hints([("urgency", .byte(urgency)), ("suppress-sound", .boolean(true))]), .int32(-1),
            ])
        if case .uint32(let id)? = reply.first { state.withLock { _ = $0.answered.insert(id) } }
    }

    /// The key an activity's notification is kept under (never a notification's identifier).
    static func activityKey(_ id: String) -> String { "activity:" + id }

    /// Shows or replaces an activity's notification: the app, its attributes as the summary, its
    /// state's fields (and stale or ended) as the body; resident, silent, low urgency, no actions.
    private func notify(_ bus: DBusConnection, _ activity: LiveActivity) throws {
        let key = Key(app: activity.app, identifier: Self.activityKey(activity.id))
        let replaces = state.withLock { state -> UInt32 in
            guard let id = state.shown.first(where: { $0.value == key })?.key else { return 0 }
            state.answered.insert(id)
            return id
        }
        func fields(_ value: JSONValue) -> String {
            guard case .object(let object) = value else { return "" }
            return object.keys.sorted().map { name -> String in
                let text: String
                switch object[name]! {
                case .string(let s): text = s
                case let other: text = String(decoding: other.jsonData(), as: UTF8.self)
                }
                return "\(name) \(text)"
            }.joined(separator: " · ")
        }
        let attributes = fields(activity.attributes)
        var body = fields(activity.content.state)
        if activity.state != .active { body += " (\(activity.state.rawValue))" }
        let hints: [(String, DBusConnection.Hint)] = [
            ("urgency", .byte(0)), ("resident", .boolean(true)), ("suppress-sound", .boolean(true)),
            ("category", .string("x-herald.live-activity")),
        ]
        let reply = try bus.call(
            destination: Self.service, path: Self.path, interface: Self.service, method: "Notify",
            [
                .string(InstalledApp.displayName(of: activity.app)), .uint32(replaces), .string(""),
                .string(attributes.isEmpty ? activity.attributesType : attributes), .string(body), .strings([]),
                .hints(hints), .int32(0),
            ])
        guard case .uint32(let id)? = reply.first else { return }
        state.withLock { state in
            if replaces != 0 { state.shown[replaces] = nil }
            // Closing an activity's notification is no answer to anything: it stays marked answered.
            state.answered.insert(id)
            state.shown[id] = key
        }
    }

    /// An activity's alert: a notification of its own that comes and goes like a banner, with the
    /// sound when the settings let it play.
    private func alert(_ bus: DBusConnection, _ activity: LiveActivity) throws {
        guard let alert = activity.alert else { return }
        var hints: [(String, DBusConnection.Hint)] = [("urgency", .byte(1))]
        if alert.sound != nil {
            hints.append(("sound-name", .string("message-new-instant")))
        } else {
            hints.append(("suppress-sound", .boolean(true)))
        }
        let reply = try bus.call(
            destination: Self.service, path: Self.path, interface: Self.service, method: "Notify",
            [
                .string(InstalledApp.displayName(of: activity.app)), .uint32(0), .string(""),
                .string(alert.title ?? InstalledApp.displayName(of: activity.app)), .string(alert.body ?? ""),
                .strings([]), .hints(hints), .int32(-1),
            ])
        // Not an answerable notification: its closing or clicking is nobody's response.
        if case .uint32(let id)? = reply.first { state.withLock { _ = $0.answered.insert(id) } }
    }

    private func handle(_ signal: DBusConnection.Signal, responder: @escaping Responder) {
        switch (signal.member, signal.arguments.first, signal.arguments.dropFirst().first) {
        case ("ActionInvoked", .uint32(let id)?, .string(let action)?):
            guard
                let key = state.withLock({ state -> Key? in
                    guard let key = state.shown[id], !state.answered.contains(id) else { return nil }
                    state.answered.insert(id)
                    // The server may leave it up after an action: it is answered, take it away.
                    state.jobs.append(.close([id]))
                    return key
                })
            else { return }
            let identifier = action == "default" ? StandardAction.defaultIdentifier : action
            logger.info("desktop action", metadata: ["app": "\(key.app)", "action": "\(identifier)"])
            Task { await responder(key.app, key.identifier, identifier) }
        case ("NotificationClosed", .uint32(let id)?, .uint32(let reason)?):
            let dismissed = state.withLock { state -> Key? in
                defer {
                    state.shown[id] = nil
                    state.answered.remove(id)
                }
                // 2: dismissed by the user. 1 (expired) leaves it in the list; 3 is our own close.
                guard reason == 2, !state.answered.contains(id) else { return nil }
                return state.shown[id]
            }
            if let key = dismissed {
                Task { await responder(key.app, key.identifier, StandardAction.dismissIdentifier) }
            }
        default:
            return
        }
    }

    /// freedesktop urgency: 0 low, 1 normal, 2 critical.
    static func urgency(_ level: String?) -> UInt8 {
        switch level.flatMap(InterruptionLevel.init(rawValue:)) {
        case .passive: 0
        case .timeSensitive, .critical: 2
        case .active, nil: 1
        }
    }
}

/// The desktop presenter could not start.
public struct DesktopError: Error, CustomStringConvertible {
    /// What is missing: the session bus, libdbus, or the notification server.
    public var description: String
}
