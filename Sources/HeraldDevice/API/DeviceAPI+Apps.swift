import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird

// The installed apps: install and remove, their pending and delivered notifications, responses,
// settings and badge (docs/device-api.md).
extension DeviceAPI {
    /// `/apps`: list, install, read and remove an app, its settings and its badge.
    static func appRoutes(_ service: DeviceService) -> RouteCollection<BasicRequestContext> {
        let routes = RouteCollection(context: BasicRequestContext.self)
        routes.get("/apps") { _, _ in
            var views: [AppView] = []
            for record in await service.records { views.append(await Self.view(record, service)) }
            return Self.json(views)
        }
        routes.post("/apps") { request, _ in
            let body = try await Self.decode(InstallBody.self, request)
            let authorized = try body.authorizedOptions()
            try await Self.mapped {
                try await service.install(
                    InstalledApp(
                        bundleID: body.bundleID, bundleDirectory: body.bundleDirectory,
                        libraryDirectory: body.libraryDirectory, executable: body.executable,
                        apsEnvironment: body.apsEnvironment,
                        supportsFrequentActivityUpdates: body.supportsFrequentActivityUpdates))
                if let authorized {
                    try await service.apply(
                        .authorizationAnswered(app: body.bundleID, options: authorized, granted: true))
                }
            }
            return Self.json(await Self.view(try await Self.record(body.bundleID, service), service), status: .created)
        }
        routes.get("/apps/{app}") { _, context in
            Self.json(await Self.view(try await Self.record(context.parameters.require("app"), service), service))
        }
        routes.delete("/apps/{app}") { _, context in
            let app = try context.parameters.require("app")
            _ = try await Self.record(app, service)
            try await Self.mapped { try await service.remove(app) }
            return Response(status: .noContent)
        }
        routes.get("/apps/{app}/settings") { _, context in
            let record = try await Self.record(context.parameters.require("app"), service)
            return Self.json(SettingsView(record))
        }
        routes.patch("/apps/{app}/settings") { request, context in
            let app = try context.parameters.require("app")
            var settings = try await Self.record(app, service).settings
            let body = try await Self.decode(SettingsBody.self, request)
            body.apply(to: &settings)
            try await Self.mapped {
                try await service.apply(.updateSettings(app: app, settings: settings))
                if let allowed = body.locationAuthorized {
                    try await service.apply(.setLocationAuthorization(app: app, allowed: allowed))
                }
                if let allowed = body.liveActivitiesAllowed {
                    try await service.applyActivity(.setAllowed(app: app, allowed: allowed))
                }
            }
            let record = try await Self.record(app, service)
            return Self.json(SettingsView(record))
        }
        routes.get("/apps/{app}/badge") { _, context in
            Self.json(BadgeView(badge: try await Self.record(context.parameters.require("app"), service).badge))
        }
        return routes
    }

    /// An app's notifications: `/apps/{app}/pending`, `/apps/{app}/delivered` and responses to them.
    static func notificationRoutes(_ service: DeviceService) -> RouteCollection<BasicRequestContext> {
        let routes = RouteCollection(context: BasicRequestContext.self)
        routes.get("/apps/{app}/pending") { _, context in
            let record = try await Self.record(context.parameters.require("app"), service)
            let views = record.pending.values
                .sorted {
                    ($0.nextFireDate ?? .distantFuture, $0.request.identifier)
                        < ($1.nextFireDate ?? .distantFuture, $1.request.identifier)
                }
                .map {
                    PendingView(
                        identifier: $0.request.identifier, title: $0.request.content.title,
                        body: $0.request.content.body, nextFireDate: $0.nextFireDate,
                        repeats: $0.request.trigger?.repeats ?? false, request: $0.request)
                }
            return Self.json(views)
        }
        routes.get("/apps/{app}/delivered") { _, context in
            let record = try await Self.record(context.parameters.require("app"), service)
            return Self.json(
                record.delivered.map {
                    DeliveredView(
                        identifier: $0.identifier, title: $0.request.content.title, body: $0.request.content.body,
                        date: $0.date, remote: $0.isRemote, late: $0.late, apnsID: $0.apnsID,
                        categoryIdentifier: $0.request.content.categoryIdentifier, notification: $0)
                })
        }
        routes.post("/apps/{app}/delivered/{id}/respond") { request, context in
            let app = try context.parameters.require("app")
            let id = try context.parameters.require("id")
            _ = try await Self.record(app, service)
            let body = try await Self.decode(RespondBody.self, request)
            let action =
                switch body.action {
                case "default": StandardAction.defaultIdentifier
                case "dismiss": StandardAction.dismissIdentifier
                default: body.action
                }
            try await Self.mapped {
                try await service.respond(
                    app: app, identifier: id, action: action, text: body.text, passcode: body.passcode)
            }
            return Self.json(["app": app, "identifier": id, "action": action])
        }
        return routes
    }
}
