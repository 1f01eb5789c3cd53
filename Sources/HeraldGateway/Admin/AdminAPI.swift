import Crypto
import Foundation
import HTTPTypes
import HeraldCore
import HeraldRuntime
import Hummingbird
import NIOCore
import X509

/// The admin API (loopback, bearer token): teams, keys, apps, app certificates, devices and
/// their apps, the delivery log, fault rules and `/healthz`. Documented in docs/admin-api.md.
public struct AdminAPI: Sendable {
    let directory: GatewayDirectory
    let pushRouter: PushRouter
    let faults: FaultInjector
    let ca: GatewayCA
    let session: ConsoleSession
    let clock: any WallClock
    /// The push console, when the gateway serves one (it needs the provider API's addresses).
    let console: Console?
    /// What `/readyz` answers from.
    let readiness: GatewayReadiness
    /// Whether the test API (`/test/…`) is served.
    let testAPI: Bool

    /// Creates the admin API (without the console: ``Gateway`` adds it); `testAPI` serves `/test/…`.
    public init(
        directory: GatewayDirectory, router: PushRouter, faults: FaultInjector, ca: GatewayCA, token: String,
        clock: any WallClock = SystemClock(), testAPI: Bool = false
    ) {
        self.init(
            directory: directory, router: router, faults: faults, ca: ca, token: token, clock: clock, console: nil,
            readiness: GatewayReadiness(.ready), testAPI: testAPI)
    }

    init(
        directory: GatewayDirectory, router: PushRouter, faults: FaultInjector, ca: GatewayCA, token: String,
        clock: any WallClock, console: Console?, readiness: GatewayReadiness, testAPI: Bool
    ) {
        self.testAPI = testAPI
        self.readiness = readiness
        self.directory = directory
        self.pushRouter = router
        self.faults = faults
        self.ca = ca
        self.session = ConsoleSession(adminToken: token)
        self.clock = clock
        self.console = console
    }

    /// The router. Every route, `/metrics` included, wants `authorization: Bearer <admin token>` or
    /// the console's session (``AdminAuthentication``): the admin API may be reached from the network
    /// (`--listen`), and its metrics say who pushes to whom and how much. Open are only the probes
    /// (`/healthz`: the process answers; `/readyz`: it takes work, ``GatewayReadiness``), which say
    /// nothing but that, and the console's page, its files and its sign-in.
    public func router() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.get("/healthz") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
        }
        let readiness = self.readiness
        let store = pushRouter.offline.store
        router.get("/readyz") { _, _ in await readiness.answer(store: store) }
        console?.addPublicRoutes(to: router)
        let api = router.group().add(middleware: AdminAuthentication(session: session, clock: clock))
        console?.addRoutes(to: api)
        let push = self.pushRouter
        api.get("/metrics") { _, _ -> Response in
            let bytes = await push.metricsText()
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
        api.addRoutes(teamRoutes())
        api.addRoutes(keyRoutes())
        api.addRoutes(appRoutes())
        api.addRoutes(deviceRoutes())
        api.addRoutes(deliveryRoutes())
        api.addRoutes(feedbackRoutes())
        api.addRoutes(faultRoutes())
        api.addRoutes(testAPI ? testRoutes() : testAPIOff())
        return router
    }

    /// Turns directory failures into HTTP errors with their message.
    static func mapped<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let failure as GatewayDirectory.Failure {
            throw HTTPError(HTTPResponse.Status(code: failure.status), message: failure.description)
        }
    }
}

extension Team: ResponseEncodable {}
extension TeamApp: ResponseEncodable {}
extension DeliveryEvent: ResponseEncodable {}
extension FaultRule: ResponseEncodable {}
