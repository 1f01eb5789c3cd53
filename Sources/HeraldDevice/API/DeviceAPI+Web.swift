import Foundation
import HTTPTypes
import HeraldCore
import HeraldRuntime
import Hummingbird
import NIOCore
import ServiceLifecycle

/// The web device (docs/web-device.md): the page at `/` and its files, the screen's state, the lock,
/// and the live stream of what happens on the device.
extension DeviceAPI {
    /// An installed app as the screen shows it.
    struct ScreenApp: Codable {
        var bundleID: String
        /// The last part of the bundle id, capitalised: what the icon is labelled with.
        var name: String
        var badge: Int
        var state: AppRunState
        /// The user's settings for the app, as the Settings screen shows and changes them.
        var settings: NotificationSettings
    }

    /// An action as a notification shows it: its button.
    struct ScreenAction: Codable {
        var identifier: String
        var title: String
        var destructive: Bool
        var authenticationRequired: Bool
        var foreground: Bool
        /// For a text-input action: the send button's title.
        var textInputButtonTitle: String?
        var textInputPlaceholder: String?

        init(_ action: NotificationAction) {
            identifier = action.identifier
            title = action.title
            destructive = action.options.contains(.destructive)
            authenticationRequired = action.effectiveOptions.contains(.authenticationRequired)
            foreground = action.options.contains(.foreground)
            textInputButtonTitle = action.textInput?.buttonTitle
            textInputPlaceholder = action.textInput?.placeholder
        }
    }

    /// The system's permission dialog for an app's request.
    struct ScreenPrompt: Codable {
        var app: String
        var appName: String
        /// What the app asked for, by name (`alert`, `sound`, `badge`, …).
        var options: [String]
    }

    /// A delivered notification as the lock screen and Notification Center show it: what
    /// Notification Center shows of it (``CenterNotification``, written flat beside the rest) and what
    /// the screen needs to act on it.
    struct ScreenNotification: Encodable {
        var shown: CenterNotification
        var categoryIdentifier: String
        var launchImageName: String
        /// The slider's text: "slide to view", "slide to show me" (the legacy `alertAction`), "slide to
        /// unlock" (no action).
        var alertAction: String
        var remote: Bool
        /// The category's actions in the default context (alert panel, Notification Center): up to four.
        var actions: [ScreenAction]
        /// In the minimal context (lock screen, banner): up to two.
        var minimalActions: [ScreenAction]
        /// The app's alert style (banner, alert or none).
        var alertStyle: AlertStyle
        /// The legacy alert button's label (`alertAction`), when set.
        var actionTitle: String?

        enum CodingKeys: String, CodingKey {
            case categoryIdentifier, launchImageName, alertAction, remote, actions, minimalActions, alertStyle
            case actionTitle
        }

        /// One flat object: the shown fields, then these.
        func encode(to encoder: any Encoder) throws {
            try shown.encode(to: encoder)
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(categoryIdentifier, forKey: .categoryIdentifier)
            try c.encode(launchImageName, forKey: .launchImageName)
            try c.encode(alertAction, forKey: .alertAction)
            try c.encode(remote, forKey: .remote)
            try c.encode(actions, forKey: .actions)
            try c.encode(minimalActions, forKey: .minimalActions)
            try c.encode(alertStyle, forKey: .alertStyle)
            try c.encodeIfPresent(actionTitle, forKey: .actionTitle)
        }
    }

    /// What the screen shows: locked or not, the apps with their badges, the delivered notifications
    /// newest first.
    struct ScreenView: Encodable {
        var locked: Bool
        var now: Date
        /// The device's time zone: the clock on the screen shows its time.
        var timeZone: String
        /// The app in the foreground; `nil`: the home screen.
        var foreground: String?
        /// What the app in front was told when it came there (`didReceive default for …`).
        var foregroundTold: String?
        /// The Focus on now.
        var focus: ActiveFocus?
        /// The Focus modes (for the control on the home and lock screens).
        var focusModes: [ScreenFocusMode]
        /// Notification Center's stacks, newest first.
        var stacks: [CenterStack]
        /// Delivered summaries still holding notifications, newest first.
        var summaries: [CenterSummary]
        /// Notifications held for the next summary, and when the next summary is due (while on).
        var held: Int
        var nextSummary: Date?
        /// Scheduled Summary's settings (on or off, times, apps).
        var summary: SummarySettings
        var apps: [ScreenApp]
        var notifications: [ScreenNotification]
        /// Live Activities on the lock screen: per app by relevance, then oldest first.
        var activities: [ScreenActivity]
        /// Apps waiting for the user's answer to the permission dialog, oldest first.
        var prompts: [ScreenPrompt]
    }

    /// A Live Activity as its card shows it.
    struct ScreenActivity: Codable {
        var app: String
        var appName: String
        var id: String
        var attributesType: String
        var attributes: JSONValue
        var state: JSONValue
        /// active, stale or ended.
        var activityState: ActivityState
        var relevanceScore: Double
        var staleDate: Date?
        var dismissAt: Date?
        var updatedAt: Date
    }

    /// A Focus mode as the control lists it.
    struct ScreenFocusMode: Codable {
        var identifier: String
        var name: String
    }

    struct LockBody: Codable { var locked: Bool }
    struct PromptAnswer: Codable { var allow: Bool }

    static func addWebDevice(to router: Router<BasicRequestContext>, service: DeviceService) {
        router.get("/") { _, _ in try WebFiles.response("index.html") }
        router.get("/web/{file}") { _, context in
            try WebFiles.response(try context.parameters.require("file"))
        }
        router.get("/screen") { _, _ in Self.json(await Self.screen(service)) }
        router.post("/apps/{app}/open") { _, context in
            let app = try context.parameters.require("app")
            _ = try await Self.record(app, service)
            try await Self.mapped { try await service.open(app) }
            return Self.json(await Self.screen(service))
        }
        router.post("/home") { _, _ in
            try await Self.mapped { try await service.goHome() }
            return Self.json(await Self.screen(service))
        }
        router.post("/prompts/{app}") { request, context in
            let app = try context.parameters.require("app")
            let body = try await Self.decode(PromptAnswer.self, request)
            guard await service.permissionPrompts.contains(where: { $0.app == app }) else {
                throw HTTPError(.notFound, message: "\(app) is not asking for permission")
            }
            try await Self.mapped { try await service.answerPrompt(app: app, allow: body.allow) }
            return Self.json(await Self.screen(service))
        }
        router.get("/apps/{app}/sounds/{name}") { _, context in
            let record = try await Self.record(context.parameters.require("app"), service)
            let name = try context.parameters.require("name")
            guard !name.contains("/"), !name.hasPrefix(".") else {
                throw HTTPError(.badRequest, message: "name: a sound is a file name, not a path")
            }
            let resolution = SoundResolver.resolution(
                name, libraryDirectory: record.app.libraryDirectory, bundleDirectory: record.app.bundleDirectory)
            guard case .file(let path, _) = resolution.sound,
                let data = FileManager.default.contents(atPath: path)
            else {
                throw HTTPError(
                    .notFound, message: "\(name) plays as the default sound: \(resolution.fallback ?? "not found")")
            }
            let type = WebFiles.soundTypes[(path as NSString).pathExtension.lowercased()] ?? "application/octet-stream"
            return Response(
                status: .ok, headers: [.contentType: type], body: .init(byteBuffer: ByteBuffer(bytes: data)))
        }
        router.get("/events") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
                body: ResponseBody { writer in try await Self.stream(service.feed.listen(), to: &writer) })
        }
    }

    /// How often the event stream writes a comment when nothing happens: the write that fails is how
    /// the daemon learns that a page has gone, and ends the handler and its place in the feed.
    static let heartbeat = Duration.seconds(15)

    /// Writes each entry as a Server-Sent Event, a heartbeat comment when quiet, until the client goes
    /// or the daemon shuts down (an open page never holds a shutdown up).
    static func stream(
        _ entries: AsyncStream<DeviceLogEntry>, to writer: inout some ResponseBodyWriter
    ) async throws {
        let (events, sink) = AsyncStream.makeStream(of: ByteBuffer.self, bufferingPolicy: .bufferingNewest(256))
        // A comment first, so the page knows at once that the stream is open.
        sink.yield(ByteBuffer(string: ": herald device\n\n"))
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask {
                let encoder = JSONEncoder.appLink
                for await entry in entries {
                    var event = ByteBuffer(string: "data: ")
                    event.writeBytes(try encoder.encode(entry))
                    event.writeString("\n\n")
                    sink.yield(event)
                }
                sink.finish()
            }
            group.addTask {
                while (try? await Task.sleep(for: heartbeat)) != nil {
                    sink.yield(ByteBuffer(string: ": heartbeat\n\n"))
                }
            }
            defer { group.cancelAll() }
            for await event in events.cancelOnGracefulShutdown() { try await writer.write(event) }
        }
        try await writer.finish(nil)
    }

    static func screen(_ service: DeviceService) async -> ScreenView {
        let records = await service.records
        let apps = records.map {
            ScreenApp(
                bundleID: $0.app.bundleID, name: InstalledApp.displayName(of: $0.app.bundleID), badge: $0.badge,
                state: $0.runState, settings: $0.settings)
        }
        let engine = await service.engine
        let locked = engine.locked
        let notifications = records.flatMap { record in
            record.delivered.map { delivered in
                let content = engine.localized(record, delivered.request.content)
                let category = record.categories[content.categoryIdentifier]
                let shown = Self.shown(delivered, of: record, engine)
                return (
                    delivered.placement?.sequence ?? 0,
                    ScreenNotification(
                        shown: shown, categoryIdentifier: content.categoryIdentifier,
                        launchImageName: content.launchImageName, alertAction: Self.slider(content),
                        remote: delivered.isRemote,
                        actions: (category?.actions(for: .default) ?? []).map(ScreenAction.init),
                        minimalActions: (category?.actions(for: .minimal) ?? []).map(ScreenAction.init),
                        alertStyle: record.settings.alertStyle,
                        actionTitle: content.actionLocKey.flatMap { $0.isEmpty ? nil : $0 })
                )
            }
        }
        .sorted { ($0.0, $0.1.shown.date, $0.1.shown.identifier) > ($1.0, $1.1.shown.date, $1.1.shown.identifier) }
        .map(\.1)
        let prompts = await service.permissionPrompts.map { prompt in
            ScreenPrompt(
                app: prompt.app, appName: InstalledApp.displayName(of: prompt.app),
                options: AuthorizationOptions.names.filter { prompt.options.contains($0.1) }.map(\.0))
        }
        let activities = records.flatMap { record in
            record.liveActivities.activities.values.map { a in
                ScreenActivity(
                    app: a.app, appName: InstalledApp.displayName(of: a.app), id: a.id,
                    attributesType: a.attributesType,
                    attributes: a.attributes, state: a.content.state, activityState: a.state,
                    relevanceScore: a.content.relevanceScore, staleDate: a.content.staleDate, dismissAt: a.dismissAt,
                    updatedAt: a.updatedAt)
            }
        }
        .sorted { ($0.app, -$0.relevanceScore, $0.id) < ($1.app, -$1.relevanceScore, $1.id) }
        let now = await service.now
        return ScreenView(
            locked: locked, now: now, timeZone: await service.timeZone.identifier,
            foreground: await service.foregroundApp, foregroundTold: await service.foregroundTold,
            focus: engine.activeFocus(at: now),
            focusModes: engine.device.focus.modes.map { ScreenFocusMode(identifier: $0.identifier, name: $0.name) },
            stacks: Self.stacks(engine), summaries: Self.summaries(engine), held: engine.heldNotifications.count,
            nextSummary: engine.nextSummary(after: now), summary: engine.device.summary, apps: apps,
            notifications: notifications, activities: activities,
            prompts: prompts)
    }

    /// The lock screen slider's text: "slide to view", or with the legacy `alertAction` in place of
    /// "view", its first letter lowered ("Show me" → "slide to show me"); "slide to unlock"
    /// for a notification without an action (`hasAction = NO`).
    static func slider(_ content: NotificationContent) -> String {
        guard content.opensApp else { return "slide to unlock" }
        guard let action = content.actionLocKey, let first = action.first else { return "slide to view" }
        return "slide to " + first.lowercased() + action.dropFirst()
    }

}

extension DeviceAPI {
    /// What the screen may show of a notification: everything, or with previews hidden (Show Previews
    /// `never`, or `whenAuthenticated` while locked) the title and subtitle only where the category
    /// keeps them (`hiddenPreviewsShowTitle`, `…ShowSubtitle`) and the category's placeholder, or
    /// "Notification", as the body.
    static func preview(
        _ content: NotificationContent, category: NotificationCategory?, settings: NotificationSettings,
        locked: Bool
    ) -> (title: String, subtitle: String, body: String) {
        let hidden =
            switch settings.showPreviewsSetting {
            case .always: false
            case .whenAuthenticated: locked
            case .never: true
            }
        guard hidden else { return (content.title, content.subtitle, content.body) }
        let options = category?.options ?? []
        return (
            options.contains(.hiddenPreviewsShowTitle) ? content.title : "",
            options.contains(.hiddenPreviewsShowSubtitle) ? content.subtitle : "",
            category?.hiddenPreviewsBodyPlaceholder ?? "Notification"
        )
    }
}

/// The web device's files, and what its apps' sounds are served as.
enum WebFiles {
    static let files = WebResources(bundle: "Herald_HeraldDevice", folder: "Web")
    /// What the app's sound files are served as.
    static let soundTypes = ["wav": "audio/wav", "aif": "audio/aiff", "aiff": "audio/aiff", "caf": "audio/x-caf"]

    static func response(_ name: String) throws -> Response { try files.response(name) }
}
