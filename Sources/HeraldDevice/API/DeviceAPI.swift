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
        router.addRoutes(Self.deviceRoutes(service))
        router.addRoutes(Self.appRoutes(service))
        router.addRoutes(Self.notificationRoutes(service))
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
