import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import NIOCore

/// The device HTTP API on loopback (default 8081): what the device's user sees and does: installed
/// apps, their pending and delivered notifications, settings and badges, responses, the presentation
/// log, the time zone and the location. Documented in docs/device-api.md.
public struct DeviceAPI: Sendable {
    let service: DeviceService
    let webDevice: Bool

    /// Creates the API over a running service; `webDevice`: serve the web device (docs/presenters.md).
    public init(service: DeviceService, webDevice: Bool = true) {
        self.service = service
        self.webDevice = webDevice
    }

    struct InstallBody: Codable {
        var bundleID: String
        var executable: String?
        var bundleDirectory: String?
        var libraryDirectory: String?
        var apsEnvironment: APNsEnvironment?
        /// `NSSupportsLiveActivitiesFrequentUpdates`: the larger hourly budget of activity updates.
        var supportsFrequentActivityUpdates: Bool?
        /// Installed already authorized for these options (`alert`, `sound`, …), as if the user had
        /// allowed the app's request: its own request then gets that answer without a dialog.
        var authorized: [String]?

        func authorizedOptions() throws -> AuthorizationOptions? {
            guard let authorized else { return nil }
            var options: AuthorizationOptions = []
            for name in authorized {
                guard let option = AuthorizationOptions(name: name) else {
                    throw HTTPError(.badRequest, message: "authorized: unknown authorization option '\(name)'")
                }
                options.insert(option)
            }
            return options
        }
    }

    struct AppView: Codable {
        var bundleID: String
        var executable: String?
        var bundleDirectory: String?
        var libraryDirectory: String?
        var apsEnvironment: APNsEnvironment?
        var supportsFrequentActivityUpdates: Bool
        var state: AppRunState
        var badge: Int
        var authorizationStatus: AuthorizationStatus
        var token: String?
        var pending: Int
        var delivered: Int
    }

    struct PendingView: Codable {
        var identifier: String
        var title: String
        var body: String
        var nextFireDate: Date?
        var repeats: Bool
        var request: NotificationRequest
    }

    struct DeliveredView: Codable {
        var identifier: String
        var title: String
        var body: String
        var date: Date
        var remote: Bool
        var late: Bool
        var apnsID: String?
        var categoryIdentifier: String
        var notification: DeliveredNotification
    }

    struct SettingsBody: Codable {
        var authorizationStatus: AuthorizationStatus?
        var alertSetting: NotificationSetting?
        var soundSetting: NotificationSetting?
        var badgeSetting: NotificationSetting?
        var notificationCenterSetting: NotificationSetting?
        var lockScreenSetting: NotificationSetting?
        var carPlaySetting: NotificationSetting?
        var criticalAlertSetting: NotificationSetting?
        var timeSensitiveSetting: NotificationSetting?
        var alertStyle: AlertStyle?
        var showPreviewsSetting: ShowPreviewsSetting?
        /// Notification Grouping: automatic, byApp or off.
        var groupingSetting: GroupingSetting?
        var locationAuthorized: Bool?
        /// The user's switch for the app's Live Activities (off ends them).
        var liveActivitiesAllowed: Bool?

        func apply(to s: inout NotificationSettings) {
            if let v = authorizationStatus { s.authorizationStatus = v }
            if let v = alertSetting { s.alertSetting = v }
            if let v = soundSetting { s.soundSetting = v }
            if let v = badgeSetting { s.badgeSetting = v }
            if let v = notificationCenterSetting { s.notificationCenterSetting = v }
            if let v = lockScreenSetting { s.lockScreenSetting = v }
            if let v = carPlaySetting { s.carPlaySetting = v }
            if let v = criticalAlertSetting { s.criticalAlertSetting = v }
            if let v = timeSensitiveSetting { s.timeSensitiveSetting = v }
            if let v = alertStyle { s.alertStyle = v }
            if let v = showPreviewsSetting { s.showPreviewsSetting = v }
            if let v = groupingSetting { s.groupingSetting = v }
        }
    }

    struct SettingsView: Codable {
        var settings: NotificationSettings
        var locationAuthorized: Bool
        var liveActivitiesAllowed: Bool

        init(_ record: AppRecord) {
            settings = record.settings
            locationAuthorized = record.locationAuthorized
            liveActivitiesAllowed = record.liveActivities.allowed
        }
    }

    struct RespondBody: Codable {
        var action: String
        var text: String?
        /// The device's passcode, for an answer that needs authentication while the device is locked.
        var passcode: String?
    }

    struct BadgeView: Codable { var badge: Int }
    struct ClockView: Codable {
        var now: Date
        var manual: Bool
        var timeZone: String
        var nextWake: Date?
    }
    struct ClockBody: Codable {
        /// Seconds to move forward.
        var advance: Double?
        /// A time to move forward to.
        var to: Date?
    }
    struct TimeZoneBody: Codable { var identifier: String }
    struct StatusView: Codable {
        var deviceID: String?
        var gateway: DeviceService.GatewayState
        var timeZone: String
        var location: LocationFix?
        var apps: Int
        var nextWake: Date?
    }

    /// The router.
    public func router() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: SameOriginMiddleware())
        let service = self.service
        router.get("/healthz") { _, _ in Self.json(["status": "ok"]) }
        router.get("/status") { _, _ in
            Self.json(
                StatusView(
                    deviceID: await service.deviceID, gateway: await service.gatewayState,
                    timeZone: await service.timeZone.identifier, location: await service.location,
                    apps: await service.records.count, nextWake: await service.nextWake))
        }
        router.get("/apps") { _, _ in
            var views: [AppView] = []
            for record in await service.records { views.append(await Self.view(record, service)) }
            return Self.json(views)
        }
        router.post("/apps") { request, _ in
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
        router.get("/apps/{app}") { _, context in
            Self.json(await Self.view(try await Self.record(context.parameters.require("app"), service), service))
        }
        router.delete("/apps/{app}") { _, context in
            let app = try context.parameters.require("app")
            _ = try await Self.record(app, service)
            try await Self.mapped { try await service.remove(app) }
            return Response(status: .noContent)
        }
        router.get("/apps/{app}/pending") { _, context in
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
        router.get("/apps/{app}/delivered") { _, context in
            let record = try await Self.record(context.parameters.require("app"), service)
            return Self.json(
                record.delivered.map {
                    DeliveredView(
                        identifier: $0.identifier, title: $0.request.content.title, body: $0.request.content.body,
                        date: $0.date, remote: $0.isRemote, late: $0.late, apnsID: $0.apnsID,
                        categoryIdentifier: $0.request.content.categoryIdentifier, notification: $0)
                })
        }
        router.post("/apps/{app}/delivered/{id}/respond") { request, context in
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
        router.get("/apps/{app}/settings") { _, context in
            let record = try await Self.record(context.parameters.require("app"), service)
            return Self.json(SettingsView(record))
        }
        router.patch("/apps/{app}/settings") { request, context in
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
        router.get("/apps/{app}/badge") { _, context in
            Self.json(BadgeView(badge: try await Self.record(context.parameters.require("app"), service).badge))
        }
        router.get("/log") { request, _ in
            let limit = request.uri.queryParameters.get("limit", as: Int.self) ?? 100
            return Self.json(await service.log(limit: limit))
        }
        router.get("/time-zone") { _, _ in Self.json(TimeZoneBody(identifier: await service.timeZone.identifier)) }
        router.put("/time-zone") { request, _ in
            let body = try await Self.decode(TimeZoneBody.self, request)
            guard let zone = TimeZone(identifier: body.identifier) else {
                throw HTTPError(.badRequest, message: "identifier: unknown time zone '\(body.identifier)'")
            }
            try await Self.mapped { try await service.setTimeZone(zone) }
            return Self.json(TimeZoneBody(identifier: zone.identifier))
        }
        router.get("/clock") { _, _ in Self.json(await Self.clock(service)) }
        router.post("/clock") { request, _ in
            let body = try await Self.decode(ClockBody.self, request)
            let target: Date
            switch (body.advance, body.to) {
            case (let seconds?, nil):
                guard seconds >= 0, seconds.isFinite else {
                    throw HTTPError(.badRequest, message: "advance: must be 0 or more seconds")
                }
                target = await service.now.addingTimeInterval(seconds)
            case (nil, let date?): target = date
            default: throw HTTPError(.badRequest, message: "give exactly one of advance (seconds) and to (a date)")
            }
            do {
                try await service.advanceClock(to: target)
            } catch DeviceService.ClockError.notManual {
                throw HTTPError(.conflict, message: "\(DeviceService.ClockError.notManual)")
            } catch {
                throw HTTPError(.badRequest, message: "to: \(error)")
            }
            return Self.json(await Self.clock(service))
        }
        router.get("/location") { _, _ in
            guard let fix = await service.location else {
                throw HTTPError(.notFound, message: "the device has had no location fix yet")
            }
            return Self.json(fix)
        }
        router.put("/location") { request, _ in
            let fix = try await Self.decode(LocationFix.self, request)
            guard (-90...90).contains(fix.latitude), (-180...180).contains(fix.longitude) else {
                throw HTTPError(.badRequest, message: "latitude must be -90…90 and longitude -180…180")
            }
            try await Self.mapped { try await service.setLocation(fix) }
            return Self.json(fix)
        }
        Self.addToday(to: router, service: service)
        if webDevice {
            Self.addWebDevice(to: router, service: service)
        } else {
            router.get("/") { _, _ -> Response in
                throw HTTPError(.notFound, message: "the web device is off (herald device --presenter without web)")
            }
        }
        return router
    }

    static func record(_ app: String, _ service: DeviceService) async throws -> AppRecord {
        guard let record = await service.record(app) else {
            throw HTTPError(.notFound, message: "app \(app) is not installed")
        }
        return record
    }

    static func clock(_ service: DeviceService) async -> ClockView {
        ClockView(
            now: await service.now, manual: service.clockIsManual, timeZone: await service.timeZone.identifier,
            nextWake: await service.nextWake)
    }

    static func view(_ record: AppRecord, _ service: DeviceService) async -> AppView {
        AppView(
            bundleID: record.app.bundleID, executable: record.app.executable,
            bundleDirectory: record.app.bundleDirectory, libraryDirectory: record.app.libraryDirectory,
            apsEnvironment: record.app.apsEnvironment,
            supportsFrequentActivityUpdates: record.app.supportsFrequentActivityUpdates ?? false,
            state: record.runState, badge: record.badge,
            authorizationStatus: record.settings.authorizationStatus,
            token: await service.token(of: record.app.bundleID), pending: record.pending.count,
            delivered: record.delivered.count)
    }

    /// Runs `body`, turning Apple's errors and the store's into HTTP errors that say what went wrong.
    static func mapped(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as NotificationError where error.code == .passcodeRequired {
            throw HTTPError(.forbidden, message: "\(AppLink.notificationErrorDomain) \(error.code.rawValue): \(error)")
        } catch let error as NotificationError {
            throw HTTPError(.badRequest, message: "\(AppLink.notificationErrorDomain) \(error.code.rawValue): \(error)")
        } catch let error as ActivityError {
            throw HTTPError(.badRequest, message: "\(AppLinkFailure.activityErrorDomain) \(error)")
        } catch let error as HTTPError {
            throw error
        } catch let error as LocalizationError {
            throw HTTPError(.badRequest, message: "strings: \(error)")
        } catch {
            throw HTTPError(.internalServerError, message: "the device failed: \(error)")
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, _ request: Request) async throws -> T {
        let buffer = try await request.body.collect(upTo: 1 << 20)
        do {
            return try JSONDecoder.appLink.decode(T.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw HTTPError(.badRequest, message: DecodingErrorText.describe(error))
        }
    }

    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        let encoder = JSONEncoder.appLink
        encoder.outputFormatting.insert(.prettyPrinted)
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
