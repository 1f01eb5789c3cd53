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

    /// Creates the admin API (without the console: ``Gateway`` adds it).
    public init(
        directory: GatewayDirectory, router: PushRouter, faults: FaultInjector, ca: GatewayCA, token: String,
        clock: any WallClock = SystemClock()
    ) {
        self.init(
            directory: directory, router: router, faults: faults, ca: ca, token: token, clock: clock, console: nil)
    }

    init(
        directory: GatewayDirectory, router: PushRouter, faults: FaultInjector, ca: GatewayCA, token: String,
        clock: any WallClock, console: Console?
    ) {
        self.directory = directory
        self.pushRouter = router
        self.faults = faults
        self.ca = ca
        self.session = ConsoleSession(adminToken: token)
        self.clock = clock
        self.console = console
    }

    /// `POST /teams`, `PUT /teams/{id}`: a team's fields (a client sends what it sets).
    public struct TeamBody: Codable, Sendable {
        public var id: String?
        public var name: String?
        public var suspended: Bool?
        /// Creates a body.
        public init(id: String? = nil, name: String? = nil, suspended: Bool? = nil) {
            self.id = id
            self.name = name
            self.suspended = suspended
        }
    }
    /// `POST /keys`: a key to make (no `publicKey`: the answer has its `privateKey`) or to register.
    public struct KeyBody: Codable, Sendable {
        public var teamID: String
        public var keyID: String?
        public var publicKey: String?
        public var topics: [String]?
        public var environment: APNsEnvironment?
        /// Creates a body.
        public init(
            teamID: String, keyID: String? = nil, publicKey: String? = nil, topics: [String]? = nil,
            environment: APNsEnvironment? = nil
        ) {
            self.teamID = teamID
            self.keyID = keyID
            self.publicKey = publicKey
            self.topics = topics
            self.environment = environment
        }
    }
    /// A provider key as `/keys` lists it; a made key's answer has its `privateKey` (PEM), once.
    public struct KeyView: Codable, Sendable, ResponseEncodable {
        public var keyID: String
        public var teamID: String
        public var topics: [String]?
        public var environment: APNsEnvironment?
        public var revoked: Bool
        public var publicKey: String
        public var privateKey: String?
        init(_ k: ProviderKey, privateKey: String? = nil) {
            keyID = k.id
            teamID = k.teamID
            topics = k.topics
            environment = k.environment
            revoked = k.revoked
            publicKey = k.signingKey?.pemRepresentation ?? ""
            self.privateKey = privateKey
        }
    }
    /// `POST /apps`: an app of a team.
    public struct AppBody: Codable, Sendable {
        public var bundleID: String
        public var teamID: String
        public var broadcast: Bool?
        /// Creates a body.
        public init(bundleID: String, teamID: String, broadcast: Bool? = nil) {
            self.bundleID = bundleID
            self.teamID = teamID
            self.broadcast = broadcast
        }
    }
    /// `POST /apps/{bundleID}/certificates`: what the app certificate covers.
    public struct CertificateBody: Codable, Sendable {
        public var environments: [APNsEnvironment]?
        public var topics: [String]?
        public var days: Int?
        /// Creates a body.
        public init(environments: [APNsEnvironment]? = nil, topics: [String]? = nil, days: Int? = nil) {
            self.environments = environments
            self.topics = topics
            self.days = days
        }
    }
    /// An issued app certificate and its private key (PEM).
    public struct CertificateView: Codable, Sendable, ResponseEncodable {
        public var certificate: String
        public var privateKey: String
    }
    struct DeviceBody: Codable { var id: String? }
    /// A device as `/devices` lists it, with its apps' tokens.
    public struct DeviceView: Codable, Sendable, ResponseEncodable {
        public var id: String
        public var generation: Int
        public var createdAt: Date
        public var resetAt: Date?
        public var deletedAt: Date?
        /// Whether its link is open: to this node, or on a cluster to any node.
        public var online: Bool
        /// On a cluster, the node that holds its link.
        public var node: String?
        /// When its link last connected or closed (since the gateway started); `nil` if not since.
        public var lastSeen: Date?
        /// Pushes waiting for it in the offline store.
        public var stored: Int
        public var apps: [RegistrationView]
    }
    struct RegistrationBody: Codable { var bundleID: String; var environment: APNsEnvironment? }
    /// A device's token for one app.
    public struct RegistrationView: Codable, Sendable, ResponseEncodable {
        public var token: String
        public var deviceID: String
        public var bundleID: String
        public var environment: APNsEnvironment
        public var registeredAt: Date
        public var invalidatedAt: Date?
        /// A Live Activity's token or a push-to-start token (docs/live-activities.md); absent for
        /// the app's own.
        public var scope: TokenScope?
        init(_ r: Registration) {
            scope = r.scope
            token = r.token.hex
            deviceID = r.deviceID
            bundleID = r.bundleID
            environment = r.environment
            registeredAt = r.registeredAt
            invalidatedAt = r.invalidatedAt
        }
    }
    struct StoredView: Codable, ResponseEncodable {
        var apnsID: String
        var topic: String
        var pushType: PushType
        var priority: Int
        var collapseID: String?
        var expiresAt: Date
        var receivedAt: Date
        var payload: String
    }

    func device(_ id: String, stored: [String: Int]? = nil, holders: [String: String]? = nil) async throws
        -> DeviceView
    {
        guard let d = directory.registry.device(id) else {
            throw HTTPError(.notFound, message: "device \(id) not found")
        }
        let counts: [String: Int]
        if let stored {
            counts = stored
        } else {
            // One device: its own count, not every device's.
            counts = [id: try await directory.store.storedCount(device: id)]
        }
        let holding: [String: String]
        if let holders {
            holding = holders
        } else {
            // One device: its own row, not every device's.
            let node = try await pushRouter.links.presence?.store.deviceNode(id, now: clock.now())
            holding = node.map { [id: $0] } ?? [:]
        }
        return DeviceView(
            id: d.id, generation: d.generation, createdAt: d.createdAt, resetAt: d.resetAt, deletedAt: d.deletedAt,
            online: pushRouter.links.isOnline(id) || holding[id] != nil, node: holding[id],
            lastSeen: pushRouter.links.lastSeen(id), stored: counts[id] ?? 0,
            apps: directory.registry.registrations(device: id).map(RegistrationView.init))
    }

    /// On a cluster, the live node holding each device's link; else none.
    func holders() async throws -> [String: String] {
        try await pushRouter.links.presence?.store.deviceNodes(now: clock.now()) ?? [:]
    }

    struct NodeView: Codable, ResponseEncodable {
        var id: String
        var address: String
        var startedAt: Date
        var heartbeatAt: Date
        var stoppedAt: Date?
        var alive: Bool
        var devices: Int
        /// Whether this is the node that answered.
        var this: Bool
    }

    /// The router. Every route, `/healthz` and `/metrics` included, wants
    /// `authorization: Bearer <admin token>` or the console's session (``AdminAuthentication``):
    /// the admin API may be reached from the network (`--listen`), and its metrics say who pushes to
    /// whom and how much. Only the console's page, its files and its sign-in are open.
    public func router() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        console?.addPublicRoutes(to: router)
        let api = router.group().add(middleware: AdminAuthentication(session: session, clock: clock))
        console?.addRoutes(to: api)
        api.get("/healthz") { _, _ in #"{"status":"ok"}"# }
        let push = self.pushRouter
        api.get("/metrics") { _, _ -> Response in
            let bytes = await push.metricsText()
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
        let directory = self.directory
        let faults = self.faults
        let ca = self.ca
        let clock = self.clock

        // Teams
        api.get("/teams") { _, _ in directory.registry.teams }
        api.post("/teams") { request, context -> EditedResponse<Team> in
            let body = try await request.decode(as: TeamBody.self, context: context)
            guard let id = body.id else { throw HTTPError(.badRequest, message: "id: required") }
            let team = try await Self.mapped {
                try await directory.putTeam(id: id, name: body.name ?? "", suspended: body.suspended ?? false)
            }
            return EditedResponse(status: .created, response: team)
        }
        api.put("/teams/{id}") { request, context -> Team in
            let id = try context.parameters.require("id")
            let body = try await request.decode(as: TeamBody.self, context: context)
            let existing = directory.registry.team(id)
            return try await Self.mapped {
                try await directory.putTeam(
                    id: id, name: body.name ?? existing?.name ?? "",
                    suspended: body.suspended ?? existing?.suspended ?? false)
            }
        }
        api.delete("/teams/{id}") { _, context -> HTTPResponse.Status in
            let id = try context.parameters.require("id")
            try await Self.mapped { try await directory.removeTeam(id) }
            return .noContent
        }

        // Keys
        api.get("/keys") { _, _ in directory.registry.keys.map { KeyView($0) } }
        api.post("/keys") { request, context -> EditedResponse<KeyView> in
            let body = try await request.decode(as: KeyBody.self, context: context)
            if let pem = body.publicKey {
                let publicKey: P256.Signing.PublicKey
                do {
                    publicKey = try P256.Signing.PublicKey(pemRepresentation: pem)
                } catch {
                    throw HTTPError(.badRequest, message: "publicKey: not a PEM P-256 public key")
                }
                guard let keyID = body.keyID else {
                    throw HTTPError(.badRequest, message: "keyID: required with publicKey")
                }
                let key = try await Self.mapped {
                    try await directory.putKey(
                        id: keyID, teamID: body.teamID, publicKey: publicKey, topics: body.topics,
                        environment: body.environment)
                }
                return EditedResponse(status: .created, response: KeyView(key))
            }
            let (key, pem) = try await Self.mapped {
                try await directory.generateKey(
                    teamID: body.teamID, id: body.keyID, topics: body.topics, environment: body.environment)
            }
            return EditedResponse(status: .created, response: KeyView(key, privateKey: pem))
        }
        api.post("/keys/{id}/revoke") { _, context -> KeyView in
            let id = try context.parameters.require("id")
            try await Self.mapped { try await directory.revokeKey(id) }
            guard let key = directory.registry.key(id) else {
                throw HTTPError(.notFound, message: "key \(id) not found")
            }
            return KeyView(key)
        }
        api.delete("/keys/{id}") { _, context -> HTTPResponse.Status in
            let id = try context.parameters.require("id")
            try await Self.mapped { try await directory.removeKey(id) }
            return .noContent
        }

        // Apps and app certificates
        api.get("/apps") { _, _ in directory.registry.apps }
        api.post("/apps") { request, context -> EditedResponse<TeamApp> in
            let body = try await request.decode(as: AppBody.self, context: context)
            let app = try await Self.mapped {
                try await directory.putApp(
                    bundleID: body.bundleID, teamID: body.teamID, broadcast: body.broadcast ?? true)
            }
            return EditedResponse(status: .created, response: app)
        }
        api.delete("/apps/{bundleID}") { _, context -> HTTPResponse.Status in
            let id = try context.parameters.require("bundleID")
            try await Self.mapped { try await directory.removeApp(id) }
            return .noContent
        }
        api.post("/apps/{bundleID}/certificates") { request, context -> EditedResponse<CertificateView> in
            let id = try context.parameters.require("bundleID")
            guard directory.registry.app(id) != nil else { throw HTTPError(.notFound, message: "app \(id) not found") }
            let body = try await request.decode(as: CertificateBody.self, context: context)
            let key = P256.Signing.PrivateKey()
            let environments = Set(body.environments ?? [.development])
            guard !environments.isEmpty else {
                throw HTTPError(.badRequest, message: "environments: must not be empty")
            }
            let cert = try ca.issueAppCertificate(
                bundleID: id, environments: environments, topics: body.topics ?? [], key: key,
                validity: TimeInterval((body.days ?? 365) * 86400), now: clock.now())
            return EditedResponse(
                status: .created,
                response: CertificateView(
                    certificate: try cert.serializeAsPEM().pemString, privateKey: key.pemRepresentation))
        }

        // Devices
        api.get("/devices") { _, _ -> [DeviceView] in
            let stored = try await directory.store.storedCountsByDevice()
            var views: [DeviceView] = []
            let holders = try await self.holders()
            for device in directory.registry.devices {
                views.append(try await self.device(device.id, stored: stored, holders: holders))
            }
            return views
        }
        api.post("/devices") { request, context -> EditedResponse<DeviceView> in
            let body = (try? await request.decode(as: DeviceBody.self, context: context)) ?? DeviceBody()
            let device = try await Self.mapped { try await directory.registerDevice(id: body.id, now: clock.now()) }
            return EditedResponse(status: .created, response: try await self.device(device.id))
        }
        // The cluster's nodes (docs/cluster.md); a gateway without --database is not in one.
        api.get("/nodes") { _, _ -> [NodeView] in
            guard let presence = self.pushRouter.links.presence else {
                throw HTTPError(.notFound, message: "this gateway is not in a cluster (it runs without --database)")
            }
            let now = self.clock.now()
            return try await presence.store.nodes().map {
                NodeView(
                    id: $0.id, address: $0.address, startedAt: $0.startedAt, heartbeatAt: $0.heartbeatAt,
                    stoppedAt: $0.stoppedAt, alive: $0.isAlive(at: now), devices: $0.devices, this: $0.id == presence.id
                )
            }
        }
        api.get("/devices/{id}") { _, context in try await self.device(try context.parameters.require("id")) }
        api.delete("/devices/{id}") { _, context -> HTTPResponse.Status in
            let id = try context.parameters.require("id")
            try await Self.mapped { try await directory.deleteDevice(id, now: clock.now()) }
            push.links.disconnect(id, reason: "an administrator deleted the device")
            return .noContent
        }
        api.post("/devices/{id}/reset") { _, context -> DeviceView in
            let id = try context.parameters.require("id")
            let record = try await Self.mapped { try await directory.resetDevice(id, now: clock.now()) }
            push.links.deviceWasReset(id, generation: record.generation)
            return try await self.device(id)
        }
        api.post("/devices/{id}/apps") { request, context -> EditedResponse<RegistrationView> in
            let id = try context.parameters.require("id")
            let body = try await request.decode(as: RegistrationBody.self, context: context)
            let r = try await Self.mapped {
                try await directory.registerApp(
                    device: id, bundleID: body.bundleID, environment: body.environment ?? .development, now: clock.now()
                )
            }
            return EditedResponse(status: .created, response: RegistrationView(r))
        }
        api.delete("/devices/{id}/apps/{bundleID}") { request, context -> RegistrationView in
            let id = try context.parameters.require("id")
            let bundleID = try context.parameters.require("bundleID")
            let env =
                request.uri.queryParameters.get("environment").flatMap(APNsEnvironment.init(rawValue:)) ?? .development
            let r = try await Self.mapped {
                try await directory.unregisterApp(device: id, bundleID: bundleID, environment: env, now: clock.now())
            }
            return RegistrationView(r)
        }
        api.get("/devices/{id}/stored") { _, context -> [StoredView] in
            let id = try context.parameters.require("id")
            return try await directory.store.pending(device: id, now: clock.now()).map {
                StoredView(
                    apnsID: $0.apnsID, topic: $0.topic, pushType: $0.pushType, priority: $0.priority.rawValue,
                    collapseID: $0.collapseID, expiresAt: $0.expiresAt, receivedAt: $0.receivedAt,
                    payload: String(decoding: $0.payload, as: UTF8.self))
            }
        }

        // Delivery log: the history of recent pushes, and one push's steps
        api.get("/deliveries") { request, _ -> Response in
            let query = request.uri.queryParameters
            func text(_ name: String) -> String? { query.get(name).flatMap { $0.isEmpty ? nil : $0 } }
            var filter = PushHistoryFilter(app: text("app"), device: text("device"), reason: text("reason"))
            if let status = text("status") {
                guard let kind = DeliveryEvent.Kind(rawValue: status) else {
                    throw HTTPError(
                        .badRequest,
                        message:
                            "status: one of accepted, stored, delivered, acknowledged, replaced, discarded, refused")
                }
                filter.status = kind
            }
            let limit = text("limit").map { Int($0) ?? -1 } ?? 100
            guard (1...1000).contains(limit) else { throw HTTPError(.badRequest, message: "limit: 1 to 1000") }
            let events = try await directory.store.recentDeliveryEvents(rows: DeliveryHistory.rowsRead)
            return try PreciseJSON.response(DeliveryHistory.entries(events, filter: filter, limit: limit))
        }
        api.get("/deliveries/{id}") { _, context -> Response in
            let id = try context.parameters.require("id")
            let events = try await directory.store.deliveryLog(id: id)
            guard !events.isEmpty else {
                throw HTTPError(.notFound, message: "no push with apns-id or apns-unique-id \(id)")
            }
            return try PreciseJSON.response(events)
        }

        // Feedback: read (the console), or read and emptied (like the legacy feedback service)
        api.get("/feedback/{bundleID}") { request, context -> [FeedbackView] in
            let id = try context.parameters.require("bundleID")
            let env =
                request.uri.queryParameters.get("environment").flatMap(APNsEnvironment.init(rawValue:)) ?? .development
            return try await directory.store.feedback(bundleID: id, environment: env).map(FeedbackView.init)
        }
        api.post("/feedback/{bundleID}/take") { request, context -> [FeedbackView] in
            let id = try context.parameters.require("bundleID")
            let env =
                request.uri.queryParameters.get("environment").flatMap(APNsEnvironment.init(rawValue:)) ?? .development
            return try await directory.store.takeFeedback(bundleID: id, environment: env).map(FeedbackView.init)
        }

        // Faults
        api.get("/faults") { _, _ in faults.all }
        api.post("/faults") { request, context -> EditedResponse<FaultRule> in
            let rule = try await request.decode(as: FaultRule.self, context: context)
            return EditedResponse(status: .created, response: try await faults.addEverywhere(rule))
        }
        api.delete("/faults/{id}") { _, context -> HTTPResponse.Status in
            try await faults.removeEverywhere(id: try context.parameters.require("id")) ? .noContent : .notFound
        }
        api.delete("/faults") { _, _ -> HTTPResponse.Status in
            try await faults.removeAllEverywhere()
            return .noContent
        }
        return router
    }

    struct FeedbackView: Codable, ResponseEncodable {
        var token: String
        var removedAt: Date
        init(_ f: FeedbackEntry) {
            token = f.token.hex
            removedAt = f.removedAt
        }
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
