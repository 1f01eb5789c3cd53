import Foundation
import HeraldCore
import HeraldRuntime
import Logging
import NIOCore
import Synchronization

/// The HTTP/2 provider API's request logic (docs/provider-api.md), free of any transport: a request,
/// the connection's authentication state and the time go in; an answer or an accepted push comes
/// out. The HTTP/2, h2c and HTTP/1.1 transports all call ``handle(_:connection:now:)``.
///
/// Validation order (documented in docs/provider-api.md): apns-id → duplicate headers → method →
/// path → topic present → collapse id → priority → push type → expiration → fault rules →
/// shutdown → authentication → body → topic → device token → background priority → per-token
/// rate.
public struct ProviderAPI: Sendable {
    /// Settings of the provider API.
    public struct Configuration: Sendable {
        /// Pushes per second allowed to one token before `TooManyRequests`; 0 = no limit.
        public var tokenRate: Double = 0
        /// The burst allowed to one token.
        public var tokenBurst: Double = 100
        /// How long a provider connection may stay idle (no bytes from the client, no request in
        /// flight) before the gateway closes it: HTTP/2 with GOAWAY `{"reason":"IdleTimeout"}`.
        /// One hour by default: clients keep connections for hours but send PINGs when idle, and a
        /// PING counts as activity; one that goes quiet longer reconnects on its next push. Until its
        /// provider has authenticated (``ProviderConnectionState/hasAuthenticated``), nothing a
        /// connection sends or has under way counts but an answer a fault rule gives, so one that
        /// never authenticates is closed this long after it opened. `nil` = never.
        public var idleTimeout: Duration? = .seconds(3600)
        /// Refuse pushes with a ``PushWarning`` (400, the warning as the reason) instead of
        /// accepting them with a `herald-warnings` header: for a CI that should fail on them.
        public var strict = false

        /// The defaults.
        public init() {}
    }

    /// What the transport should do with a request.
    public enum Decision: Sendable {
        /// Answer now (or after `delay`, for an injected fault).
        case respond(ProviderResponse, delay: TimeAmount?)
        /// Route the push; answer 200 once the router has delivered or stored it.
        case accept(AcceptedPush, delay: TimeAmount?)
        /// Do this work (on the store) and answer with what it returns.
        case perform(@Sendable () async -> ProviderResponse)
    }

    /// The directory of teams, keys, apps and tokens.
    public let registry: Registry
    /// The fault rules.
    public let faults: FaultInjector
    /// The per-token rate limit.
    public let limiter: TokenRateLimiter
    private let shuttingDown: ShutdownFlag
    /// How long a connection may stay idle before it is closed (`nil` = never), on the event
    /// loop's clock (``Configuration/idleTimeout``, converted once).
    public let idleTimeout: TimeAmount?
    /// Whether pushes with warnings are refused (``Configuration/strict``).
    public let strict: Bool
    /// With a cluster: the credential a push forwarded by another node carries
    /// (``ClusterForwarding``); without, such a request is answered 404 `BadPath` like any
    /// unknown path.
    public let cluster: ClusterForwarding.Credential?
    /// On the channel management listeners: the channel API every request goes to.
    public private(set) var channels: ChannelAPI?
    /// The broadcast API (`/4/broadcasts/…`), when the gateway has a broadcast hub; without,
    /// such a path is answered 404 `BadPath`.
    public private(set) var broadcasts: BroadcastAPI?

    /// Creates the provider API over a registry; `cluster` when it is one node of a cluster.
    public init(
        registry: Registry, faults: FaultInjector = FaultInjector(), configuration: Configuration = Configuration(),
        cluster: ClusterForwarding.Credential? = nil
    ) {
        self.cluster = cluster
        self.registry = registry
        self.faults = faults
        self.limiter = TokenRateLimiter(ratePerSecond: configuration.tokenRate, burst: configuration.tokenBurst)
        self.shuttingDown = ShutdownFlag()
        self.idleTimeout = configuration.idleTimeout.map { TimeAmount($0) }
        self.strict = configuration.strict
    }

    /// From now on every request answers 503 `Shutdown` (graceful stop).
    public func beginShutdown() { shuttingDown.set() }

    /// Whether ``beginShutdown()`` was called.
    public var isShuttingDown: Bool { shuttingDown.isSet }

    /// The environment a request addresses (``ProviderChecks/environment(authority:default:)``).
    public static func environment(authority: String?, default fallback: APNsEnvironment) -> APNsEnvironment {
        ProviderChecks.environment(authority: authority, default: fallback)
    }

    /// The same API serving the channel management API instead (its own listeners, docs/broadcast.md).
    public func managingChannels(store: any ChannelStore, limit: Int = ChannelAPI.limit) -> ProviderAPI {
        var api = self
        api.channels = ChannelAPI(registry: registry, store: store, shuttingDown: shuttingDown, limit: limit)
        return api
    }

    /// The same API also serving the broadcast API, which sends through `hub` (docs/broadcast.md).
    public func broadcasting(through hub: BroadcastHub, logger: Logger = .silent) -> ProviderAPI {
        var api = self
        api.broadcasts = BroadcastAPI(registry: registry, hub: hub, shuttingDown: shuttingDown, logger: logger)
        return api
    }

    /// Decides a request. A push refused carries what the delivery log records of it
    /// (``ProviderResponse/subject``).
    public func handle(_ request: ProviderRequest, connection: inout ProviderConnectionState, now: Date) -> Decision {
        if let decision = handleOtherAPIs(request, connection: &connection, now: now) { return decision }
        let decision = handlePush(request, connection: &connection, now: now)
        guard case .respond(var response, let delay) = decision, response.status != 200,
            !request.path.utf8.starts(with: ClusterForwarding.pathPrefix.utf8)
        else { return decision }
        var token: Substring?
        if request.path.utf8.starts(with: "/3/device/".utf8) {
            var path = request.path.dropFirst(10)
            if let q = path.firstIndex(of: "?") { path = path[..<q] }
            token = path
        }
        response.subject = refused(
            topic: request.topic ?? connection.certificate?.impliedTopic, token: token,
            environment: Self.environment(authority: request.authority, default: connection.defaultEnvironment),
            at: now)
        return .respond(response, delay: delay)
    }

    /// What the delivery log records of a refused push: its topic, token and, when the token is
    /// one of this gateway's, its device.
    private func refused(topic: String?, token: Substring?, environment: APNsEnvironment, at now: Date) -> RefusedPush {
        let parsed = token.flatMap { DeviceToken(hex: $0) }
        let device = parsed.flatMap { registry.registration($0, in: environment)?.deviceID }
        // The topic is recorded as sent, even one that is no topic, but no longer than a topic can be:
        // a refusal is stored for the log's whole retention, and one before authentication costs
        // its sender nothing but the request.
        return RefusedPush(
            topic: topic.map { TextExcerpt.of($0, limit: 255) }, token: parsed?.hex, device: device, at: now)
    }

    private func handlePush(_ request: ProviderRequest, connection: inout ProviderConnectionState, now: Date)
        -> Decision
    {
        // apns-id: echoed, or generated.
        let apnsID: String
        if let given = request.apnsID {
            guard Self.isCanonicalUUID(given) else {
                return .respond(
                    .error(.badMessageId, apnsID: RandomUUID.timeOrderedLowercaseString(at: now)), delay: nil)
            }
            apnsID = given
        } else {
            apnsID = RandomUUID.timeOrderedLowercaseString(at: now)
        }
        func fail(_ reason: APNsReason, timestamp: Int64? = nil) -> Decision {
            .respond(.error(reason, apnsID: apnsID, timestamp: timestamp), delay: nil)
        }

        if request.duplicateHeader != nil { return fail(.duplicateHeaders) }
        guard request.method == "POST" else { return fail(.methodNotAllowed) }

        // Path: /3/device/<hex token>
        let prefix = "/3/device/"
        // One pass over the bytes finds the query and any `/` after the prefix (the collection
        // algorithms on a UTF-8 view, one for each, cost several times more; this runs for every
        // request).
        let scan = Self.scanPath(request.path, prefixLength: prefix.utf8.count)
        var path = Substring(request.path)
        if let q = scan.query { path = Substring(path.utf8[..<path.utf8.index(path.startIndex, offsetBy: q)]) }
        // Compared as bytes: `hasPrefix` on text compares by Character, several times slower, and
        // this runs for every request.
        guard path.utf8.starts(with: prefix.utf8) else {
            if cluster != nil, path.utf8.starts(with: ClusterForwarding.pathPrefix.utf8) {
                return handleForwarded(request, path: path, apnsID: apnsID, connection: &connection, now: now)
            }
            return fail(path == "/3/device" ? .missingDeviceToken : .badPath)
        }
        let tokenText = Substring(path.utf8[path.utf8.index(path.startIndex, offsetBy: prefix.utf8.count)...])
        guard !tokenText.isEmpty else { return fail(.missingDeviceToken) }
        guard !scan.slashAfterPrefix else { return fail(.badPath) }
        guard let token = DeviceToken(hex: tokenText) else { return fail(.badDeviceToken) }

        // Topic present (a single-topic certificate supplies its own).
        let environment = Self.environment(authority: request.authority, default: connection.defaultEnvironment)
        guard let topic = request.topic ?? connection.certificate?.impliedTopic else { return fail(.missingTopic) }

        if let collapseID = request.collapseID, collapseID.utf8.count > 64 { return fail(.badCollapseId) }

        var priority: PushPriority?
        if let text = request.priority {
            guard let value = Int(ASCIICase.trimmed(text[...])), let parsed = PushPriority(rawValue: value)
            else { return fail(.badPriority) }
            priority = parsed
        }

        var pushType: PushType?
        if let text = request.pushType {
            let name = String(ASCIICase.trimmed(text[...]))
            guard let parsed = PushType(rawValue: name) ?? PushType(rawValue: name.lowercased()) else {
                return fail(.invalidPushType)
            }
            pushType = parsed
        }

        var expiration: Int64?
        if let text = request.expiration {
            guard let value = Int64(ASCIICase.trimmed(text[...])), value >= 0 else {
                return fail(.badExpirationDate)
            }
            expiration = value
        }

        return decide(
            apnsID: apnsID, token: token, tokenText: tokenText, topic: topic, environment: environment,
            priority: priority, pushType: pushType, expiration: expiration, collapseID: request.collapseID,
            body: request.body, authorization: request.authorization, connection: &connection, now: now)
    }

    /// Where the query of `path` starts (as a byte offset), and whether a `/` comes after its first
    /// `prefixLength` bytes and before the query.
    static func scanPath(_ path: String, prefixLength: Int) -> (query: Int?, slashAfterPrefix: Bool) {
        func scan(_ bytes: UnsafeBufferPointer<UInt8>) -> (query: Int?, slashAfterPrefix: Bool) {
            var slash = false
            for i in 0..<bytes.count {
                switch bytes[i] {
                case UInt8(ascii: "?"): return (i, slash)
                case UInt8(ascii: "/") where i >= prefixLength: slash = true
                default: continue
                }
            }
            return (nil, slash)
        }
        if let found = path.utf8.withContiguousStorageIfAvailable(scan) { return found }
        return Array(path.utf8).withUnsafeBufferPointer(scan)
    }

    /// The channel management API's decision (on its listeners) or the broadcast API's (for its
    /// paths); `nil` for a push to a device. Inlined: it runs first for every push.
    @inline(__always)
    private func handleOtherAPIs(
        _ request: ProviderRequest, connection: inout ProviderConnectionState, now: Date
    ) -> Decision? {
        let other: ChannelAPI.Answer?
        if let channels {
            other = channels.handle(request, connection: &connection, now: now)
        } else if broadcasts != nil, BroadcastAPI.claims(request.path) {
            // Used where it is kept: `if let` would copy it for every push.
            other = broadcasts?.handle(request, connection: &connection, now: now)
        } else {
            return nil
        }
        switch other {
        case .respond(let response): return .respond(response, delay: nil)
        case .perform(let work): return .perform(work)
        case nil: return nil
        }
    }

    /// Decides a notification from the legacy binary interface (docs/binary-provider.md). Its topic is the
    /// certificate's bundle id and its environment the connection's; it gets a generated `apns-id`
    /// and keeps the provider's identifier for the delivery log. The answer is the HTTP/2 API's:
    /// the binary transport turns a refusal into its error status (``LegacyBinary/Status/init(reason:)``).
    public func handle(
        binary notification: LegacyBinary.Notification, connection: inout ProviderConnectionState, now: Date
    ) -> Decision {
        let apnsID = RandomUUID.timeOrderedLowercaseString(at: now)
        let token = DeviceToken(bytes: notification.token)
        guard let topic = connection.certificate?.bundleID, !topic.isEmpty else {
            return .respond(.error(.missingTopic, apnsID: apnsID), delay: nil)
        }
        let decision = decide(
            apnsID: apnsID, token: token, tokenText: Substring(token.hex), topic: topic,
            environment: connection.defaultEnvironment,
            priority: notification.priority.flatMap { PushPriority(rawValue: Int($0)) }, pushType: nil,
            expiration: notification.expiration.map(Int64.init), collapseID: nil,
            body: ByteBuffer(bytes: notification.payload), authorization: nil, connection: &connection, now: now)
        // A 410 goes silently on this interface: its handler logs the push as discarded instead.
        if case .respond(var response, let delay) = decision, response.status != 200, response.status != 410 {
            response.subject = refused(
                topic: topic, token: Substring(token.hex), environment: connection.defaultEnvironment, at: now)
            return .respond(response, delay: delay)
        }
        guard case .accept(var push, let delay) = decision else { return decision }
        push.binaryIdentifier = notification.identifier
        return .accept(push, delay: delay)
    }

    /// What every transport shares once the request's fields are read: fault rules, shutdown,
    /// authentication, body, topic, token, priority and rate.
    private func decide(
        apnsID: String, token: DeviceToken, tokenText: Substring, topic: String, environment: APNsEnvironment,
        priority: PushPriority?, pushType: PushType?, expiration: Int64?, collapseID: String?, body: ByteBuffer,
        authorization: String?, connection: inout ProviderConnectionState, now: Date
    ) -> Decision {
        // Injected faults.
        var delay: TimeAmount?
        var connectionFault: ConnectionFaultAction?
        connection.pushes += 1
        if let fired = faults.match(topic: topic, tokenHex: tokenText, request: connection.pushes) {
            let rule = fired.rule
            if let ms = fired.delay, ms > 0 { delay = .nanoseconds(Int64(ms * 1_000_000)) }
            connectionFault = rule.connectionAction
            if connectionFault == .close {
                var response = ProviderResponse(status: 0, apnsID: apnsID, uniqueID: nil, reason: nil, timestamp: nil)
                response.note = "the connection was closed by fault rule \(rule.id)"
                response.injected = true
                response.connectionFault = .close
                return .respond(response, delay: delay)
            }
            if let reason = rule.reason {
                let stamp = reason.status == 410 ? Int64(now.timeIntervalSince1970 * 1000) : nil
                var response = ProviderResponse.error(
                    reason, apnsID: apnsID, timestamp: stamp, note: "answered by fault rule \(rule.id)")
                response.injected = true
                response.connectionFault = connectionFault
                return .respond(response, delay: delay)
            }
        }
        func failLater(_ reason: APNsReason, timestamp: Int64? = nil, note: String? = nil) -> Decision {
            var response = ProviderResponse.error(reason, apnsID: apnsID, timestamp: timestamp, note: note)
            response.connectionFault = connectionFault
            return .respond(response, delay: delay)
        }

        if shuttingDown.isSet { return failLater(.shutdown) }

        // Authentication.
        let keyTopics: [String]?
        let teamID: String
        switch caller(
            topic: topic, environment: environment, authorization: authorization, connection: &connection, now: now)
        {
        case .failure(let reason): return failLater(reason)
        case .success(let who): (teamID, keyTopics) = (who.teamID, who.keyTopics)
        }

        // Body.
        let size = body.readableBytes
        if size == 0 { return failLater(.payloadEmpty, note: "the body is empty") }
        let limit = (pushType ?? .alert).maximumPayloadSize
        if size > limit { return failLater(.payloadTooLarge) }
        let summary: PayloadSummary
        do {
            summary = try PayloadSummary.scan(body)
        } catch {
            // APNs answers a body that is no JSON object with PayloadEmpty; the log says why.
            return failLater(.payloadEmpty, note: "the body is not a JSON object: \(error)")
        }
        let type = pushType ?? (summary.hasUserVisibleContent ? .alert : .background)

        // Topic: syntax, the push type's suffix, and whose app it is.
        guard APNsTopic.isValid(topic) else { return failLater(.badTopic) }
        let bundleID: String
        if let suffix = type.topicSuffix, !suffix.isEmpty {
            guard topic.hasSuffix(suffix), topic.utf8.count > suffix.utf8.count else { return failLater(.badTopic) }
            bundleID = String(topic.dropLast(suffix.count))
        } else {
            bundleID = topic
        }
        guard let app = registry.app(bundleID), app.teamID == teamID else { return failLater(.topicDisallowed) }
        if let keyTopics, !keyTopics.contains(bundleID) { return failLater(.topicDisallowed) }

        // Device token.
        guard let registration = registry.registration(token, in: environment) else {
            return failLater(.badDeviceToken)
        }
        if let invalidatedAt = registration.invalidatedAt {
            let reason = registration.invalidation?.reason ?? .unregistered
            return failLater(reason, timestamp: Int64((invalidatedAt.timeIntervalSince1970 * 1000).rounded(.down)))
        }
        guard registration.bundleID == bundleID else { return failLater(.deviceTokenNotForTopic) }

        // Background pushes go at priority 5.
        if type == .background, priority == .immediate { return failLater(.badPriority) }
        let effectivePriority = priority ?? (type == .background ? .normal : .immediate)

        guard limiter.allow(token, now: now) else { return failLater(.tooManyRequests) }
        if let rule = faults.overDeviceLimit(
            device: registration.deviceID, topic: topic, tokenHex: tokenText, now: now)
        {
            var response = ProviderResponse.error(
                .tooManyRequests, apnsID: apnsID,
                note: "device \(registration.deviceID) got \(rule.deviceLimit ?? 0) pushes within "
                    + "\(rule.windowSeconds ?? 0) s (fault rule \(rule.id))")
            response.injected = true
            return .respond(response, delay: delay)
        }

        // What Apple would accept and then handle quietly.
        let warnings = PushWarnings(summary: summary, pushType: type)
        if strict, !warnings.isEmpty {
            var response = ProviderResponse.refused(for: warnings, apnsID: apnsID)
            response.connectionFault = connectionFault
            return .respond(response, delay: delay)
        }

        // Made in place in the decision: a push set up in a variable first was copied into it.
        return .accept(
            AcceptedPush(
                apnsID: apnsID,
                uniqueID: environment == .development ? RandomUUID.timeOrderedLowercaseString(at: now) : nil,
                registration: registration, topic: topic, pushType: type, priority: effectivePriority,
                expiration: expiration, collapseID: collapseID, payload: body,
                contentAvailable: summary.contentAvailable, receivedAt: now, warnings: warnings,
                connectionFault: connectionFault),
            delay: delay)
    }

    /// A push another node accepted and forwarded here, since this node holds (or held) the
    /// device's link (docs/cluster.md). That node checked everything a provider's request is
    /// checked for; here only the cluster's credential and what this node must know to route it.
    /// Anything but 200 tells the sending node to store the push itself.
    private func handleForwarded(
        _ request: ProviderRequest, path: Substring, apnsID: String, connection: inout ProviderConnectionState,
        now: Date
    ) -> Decision {
        func refuse(_ reason: APNsReason, _ note: String) -> Decision {
            .respond(.error(reason, apnsID: apnsID, note: "forwarded push: " + note), delay: nil)
        }
        guard let cluster, cluster.accepts(request.authorization) else {
            return refuse(.invalidProviderToken, "without the cluster's credential")
        }
        connection.isClusterPeer = true
        let tokenText = path.dropFirst(ClusterForwarding.pathPrefix.count)
        guard let token = DeviceToken(hex: tokenText) else { return refuse(.badDeviceToken, "bad device token") }
        guard let fields = request.forward.flatMap(ClusterForwarding.Fields.init(text:)) else {
            return refuse(.badPath, "no readable \(ClusterForwarding.header) header")
        }
        guard let topic = request.topic, let type = request.pushType.flatMap(PushType.init(rawValue:)),
            let priority = request.priority.flatMap(Int.init).flatMap(PushPriority.init(rawValue:))
        else { return refuse(.badPath, "topic, push type or priority missing") }
        var expiration: Int64?
        if let text = request.expiration {
            guard let value = Int64(text) else { return refuse(.badExpirationDate, "bad expiration") }
            expiration = value
        }
        if shuttingDown.isSet { return refuse(.shutdown, "this node is stopping") }
        guard let registration = registry.registration(token, in: fields.environment),
            registration.invalidatedAt == nil
        else {
            // The directory here has not caught up with the sending node's (or the token was just
            // invalidated): that node stores the push, under its own checks.
            return refuse(.serviceUnavailable, "the registration is not (or no longer) known here")
        }
        guard let summary = try? PayloadSummary.scan(request.body) else {
            return refuse(.payloadEmpty, "the body is not a JSON object")
        }
        var push = AcceptedPush(
            apnsID: apnsID, uniqueID: fields.uniqueID, registration: registration, topic: topic, pushType: type,
            priority: priority, expiration: expiration, collapseID: request.collapseID, payload: request.body,
            contentAvailable: summary.contentAvailable, receivedAt: fields.acceptedAt,
            binaryIdentifier: fields.binaryIdentifier)
        push.forwarded = true
        // For this node's delivery log; the node that accepted it answers and counts them.
        push.warnings = PushWarnings(summary: summary, pushType: type)
        return .accept(push, delay: nil)
    }

    /// Who sends a request for `topic` in `environment`: the team of the connection's certificate or
    /// of the request's provider token (with the topics the key is limited to, if it is), or why
    /// neither is good for it. A suspended team is `Forbidden`.
    func caller(
        topic: String, environment: APNsEnvironment, authorization: String?,
        connection: inout ProviderConnectionState, now: Date
    ) -> Result<(teamID: String, keyTopics: [String]?), APNsReason> {
        ProviderChecks.caller(
            registry: registry, topic: topic, environment: environment, authorization: authorization,
            connection: &connection, now: now)
    }

    /// `8-4-4-4-12` hex digits, either case (``ProviderChecks/isCanonicalUUID(_:)``).
    static func isCanonicalUUID(_ text: String) -> Bool { ProviderChecks.isCanonicalUUID(text) }
}
