import Crypto
import Foundation
#if canImport(Glibc)
    import Glibc
#endif
import HeraldCore
import HeraldRuntime
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// The device side of the device link: connects, authenticates with the device's key, registers
/// apps, receives notifications, acknowledges them and drops duplicates by `apns-id`.
///
/// One connection; reconnecting (with backoff) is the daemon's job.
public final class GatewayLinkClient: Sendable {
    /// A request the gateway refused.
    public typealias Failure = GatewayLinkFailure

    /// The device id the gateway knows this device by.
    public let deviceID: String
    /// The device's generation (it goes up on every reset).
    public let generation: Int
    /// The apps registered when the link opened.
    public let registrations: [LinkRegistration]
    /// What happens on the link, in order.
    public let events: AsyncStream<GatewayLinkEvent>
    let channel: any Channel
    let handler: NIOLoopBound<LinkClientHandler>

    private init(
        deviceID: String, generation: Int, registrations: [LinkRegistration], events: AsyncStream<GatewayLinkEvent>,
        channel: any Channel, handler: NIOLoopBound<LinkClientHandler>
    ) {
        self.deviceID = deviceID
        self.generation = generation
        self.registrations = registrations
        self.events = events
        self.channel = channel
        self.handler = handler
    }

    /// Connects to `url` (`ws://` on loopback, or `wss://` trusting `caCertificatePEM`, or the
    /// system's roots when it is nil) and authenticates. With `autoAcknowledge` every notification
    /// is acknowledged as soon as it is read; otherwise call ``acknowledge(_:)``. `sourceAddress`
    /// (an IP address) is the local address the connection is made from; `nil` lets the system
    /// choose. Many connections to one gateway from one address make the kernel's search for a free
    /// source port slow: a test that holds thousands spreads them over several addresses.
    public static func connect(
        url: String, identity: DeviceIdentity, caCertificatePEM: String? = nil, autoAcknowledge: Bool = true,
        sourceAddress: String? = nil, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> GatewayLinkClient {
        let target = try Target(url: url, caCertificatePEM: caCertificatePEM, sourceAddress: sourceAddress)
        // The connection, its welcome and the handler's lookup all on one loop, chained there: the
        // caller's task waits once, not once per step (each wait is a hop between threads).
        return try await open(target, identity: identity, autoAcknowledge: autoAcknowledge, on: group.any()).get()
    }

    /// Where a connection goes: the gateway's address and path, TLS or not, and the local address.
    struct Target: Sendable {
        let host: String
        let port: Int
        let path: String
        let tls: NIOSSLContext?
        let source: SocketAddress?
        /// Whether the upgrade request may carry the device's ticket (`Herald-Resume`): over TLS, or
        /// in cleartext to a loopback address. A `ws://` URL to another machine is refused by the
        /// gateway, but only after the request has crossed the network, and with it a proof anyone
        /// who saw it could present elsewhere within its window; such a device resumes over the
        /// challenge instead, whose proof answers one connection's nonce only.
        let resumesInRequest: Bool

        init(url: String, caCertificatePEM: String?, sourceAddress: String?) throws {
            guard let parsed = URL(string: url), let scheme = parsed.scheme, scheme == "ws" || scheme == "wss",
                let host = parsed.host
            else {
                throw Failure(
                    code: .badURL, message: "the gateway link URL must be ws://host:port/device/v1 or wss://…")
            }
            self.host = host
            port = parsed.port ?? 5223
            path = parsed.path.isEmpty ? DeviceLink.path : parsed.path
            tls = try scheme == "wss" ? GatewayLinkClient.tlsContext(trusting: caCertificatePEM) : nil
            let address = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            resumesInRequest =
                tls != nil || host == "localhost"
                || (Loopback.contains(address) && (try? SocketAddress(ipAddress: address, port: 0)) != nil)
            if let sourceAddress {
                guard let source = try? SocketAddress(ipAddress: sourceAddress, port: 0) else {
                    throw Failure(code: .badURL, message: "the source address \(sourceAddress) is not an IP address")
                }
                self.source = source
            } else {
                source = nil
            }
        }
    }

    /// The `Herald-Resume` of an upgrade request with `key`, made at `now`: the ticket of the last
    /// `welcome`, so that a gateway that accepts it answers with the next `welcome`, no challenge
    /// between. `nil` (the challenge) without a device id or an unexpired ticket, or with a clock
    /// before 1970, whose time the header cannot carry.
    static func upgradeResume(identity: DeviceIdentity, webSocketKey key: String, now: Date) -> DeviceLink
        .UpgradeResume?
    {
        guard now.timeIntervalSince1970 >= 0, let device = identity.deviceID,
            let ticket = identity.resumption.current(now: now)
        else { return nil }
        return DeviceLink.UpgradeResume(
            device: device, ticket: ticket, webSocketKey: key, time: Int64(now.timeIntervalSince1970.rounded(.down)))
    }

    /// How long a connection has from the moment it is made until the gateway's `welcome`: the TLS
    /// handshake, the upgrade, the challenge and the gateway's check of the device. A gateway that
    /// accepts the connection and then says nothing (a stopped process whose socket still takes
    /// connections, a half-open path) is left at the deadline, and the daemon tries again. Far
    /// above any real handshake: under a storm of signatures a gateway may take seconds.
    static let handshake = FirstBytesDeadlines(deadline: .seconds(30))

    /// What the handshake's deadline logs through: nothing (the library logs nothing); its failure
    /// is the connection's.
    private static let silent = Logger(label: "herald.device-link", factory: { _ in SwiftLogNoOpLogHandler() })

    /// A new connection's handlers: the handshake's deadline (``handshake``), TLS when the target
    /// has it, the upgrade and the link (``LinkClientHandshake``, ``LinkClientHandler``).
    static func configure(
        _ sync: ChannelPipeline.SynchronousOperations, target: Target, identity: DeviceIdentity, autoAcknowledge: Bool,
        welcome: EventLoopPromise<LinkClientHandler.Welcome>, events: AsyncStream<GatewayLinkEvent>.Continuation,
        handshake: FirstBytesDeadlines = handshake, liveness: LinkClientHandler.Liveness = .init()
    ) throws {
        let (host, tls, inRequest) = (target.host, target.tls, target.resumesInRequest)
        let timedOut = ListenerLog(logger: silent) { _ in
            welcome.fail(
                Failure(code: .closed, message: "no welcome within \(handshake.deadline.secondsText) of connecting"))
        }
        try sync.addHandler(FirstBytesDeadline(listener: "device link", deadlines: handshake, log: timedOut))
        if let tls {
            try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: host))
        }
        try LinkClientHandshake.configure(
            sync, host: host, port: target.port, path: target.path,
            resume: { key in
                inRequest ? upgradeResume(identity: identity, webSocketKey: key, now: Date()) : nil
            },
            link: {
                LinkClientHandler(
                    identity: identity, autoAcknowledge: autoAcknowledge, welcome: welcome, events: events,
                    liveness: liveness)
            },
            failed: { welcome.fail($0) },
            // The next attempt signs, or resumes over the challenge, without the header.
            refusedResume: { identity.resumption.keep(nil) })
    }

    /// One connection to `target` and its authentication, every step on `loop`.
    static func open(
        _ target: Target, identity: DeviceIdentity, autoAcknowledge: Bool, on loop: any EventLoop
    ) -> EventLoopFuture<GatewayLinkClient> {
        let (events, continuation) = AsyncStream.makeStream(of: GatewayLinkEvent.self)
        let welcome = loop.makePromise(of: LinkClientHandler.Welcome.self)
        var bootstrap = ClientBootstrap(group: loop)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try configure(
                        channel.pipeline.syncOperations, target: target, identity: identity,
                        autoAcknowledge: autoAcknowledge, welcome: welcome, events: continuation)
                }
            }
        if let source = target.source {
            // The port is still chosen at connect time, for this destination (IP_BIND_ADDRESS_NO_PORT).
            bootstrap = bootstrap.bind(to: source).channelOption(
                ChannelOptions.Types.SocketOption(
                    level: NIOBSDSocket.OptionLevel(rawValue: CInt(IPPROTO_IP)),
                    name: NIOBSDSocket.Option(rawValue: CInt(IP_BIND_ADDRESS_NO_PORT))),
                value: 1)
        }
        let (host, port) = (target.host, target.port)
        // An address needs no resolver: NIO's would run getaddrinfo on another thread for every
        // connection, about a tenth of a reconnection's work on the device.
        let connecting =
            if let address = try? SocketAddress(ipAddress: host, port: port) {
                bootstrap.connect(to: address)
            } else {
                bootstrap.connect(host: host, port: port)
            }
        connecting.whenFailure { welcome.fail($0) }
        return connecting.flatMap { (channel: any Channel) -> EventLoopFuture<GatewayLinkClient> in
            channel.closeFuture.whenComplete { _ in
                welcome.fail(Failure(code: .closed, message: "the gateway closed the link before welcoming the device"))
            }
            return welcome.futureResult.flatMapThrowing { greeting in
                let handler = try channel.pipeline.syncOperations.handler(type: LinkClientHandler.self)
                return GatewayLinkClient(
                    deviceID: greeting.device, generation: greeting.generation, registrations: greeting.registrations,
                    events: events, channel: channel, handler: NIOLoopBound(handler, eventLoop: channel.eventLoop))
            }.flatMapErrorThrowing { error in
                channel.close(promise: nil)
                throw error
            }
        }
    }

    static func tlsContext(trusting caCertificatePEM: String?) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let caCertificatePEM {
            configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(caCertificatePEM.utf8)))
        }
        configuration.applicationProtocols = ["http/1.1"]
        return try NIOSSLContext(configuration: configuration)
    }

    /// Registers an app for remote notifications in an environment and returns its token;
    /// `installation` counts the app's installs on the device (0: the first; a reinstall gets a new token).
    public func register(topic: String, environment: APNsEnvironment = .development, installation: Int = 0)
        async throws -> DeviceToken
    {
        let answer = try await request {
            .register(
                request: $0, topic: topic, environment: environment, installation: installation > 0 ? installation : nil
            )
        }
        guard case .token(_, let registration) = answer else { throw Self.unexpected(answer) }
        return registration.token
    }

    /// Removes an app: its token answers 410 `Unregistered` from now on.
    public func unregister(topic: String, environment: APNsEnvironment = .development) async throws {
        let answer = try await request { .unregister(request: $0, topic: topic, environment: environment) }
        guard case .unregistered = answer else { throw Self.unexpected(answer) }
    }

    /// One of an app's scoped tokens (a Live Activity's, a push-to-start token; docs/live-activities.md):
    /// the same token each time for the same scope, until it is given up or the device is reset.
    public func token(
        topic: String, environment: APNsEnvironment = .development, scope: TokenScope
    ) async throws -> DeviceToken {
        let answer = try await request {
            .registerScope(request: $0, topic: topic, environment: environment, scope: scope)
        }
        guard case .token(_, let registration) = answer else { throw Self.unexpected(answer) }
        return registration.token
    }

    /// Gives a scoped token up: pushes to it answer 410 `Unregistered` from now on.
    public func releaseToken(topic: String, environment: APNsEnvironment = .development, scope: TokenScope)
        async throws
    {
        let answer = try await request {
            .unregisterScope(request: $0, topic: topic, environment: environment, scope: scope)
        }
        guard case .unregistered = answer else { throw Self.unexpected(answer) }
    }

    /// Resets the device: every token it had is void; returns the new generation.
    public func reset() async throws -> Int {
        let answer = try await request { .resetDevice(request: $0) }
        guard case .reset(_, let generation) = answer else { throw Self.unexpected(answer) }
        return generation
    }

    /// Subscribes an app to broadcast channels for as long as this connection lasts (docs/broadcast.md)
    /// and returns every channel the app is subscribed to now; each channel's kept message (storage
    /// policy 1) follows as a ``GatewayLinkEvent/broadcast(_:)``. A channel that is not the app's in
    /// that environment fails with `NotFound`, and none is subscribed.
    @discardableResult
    public func subscribe(
        topic: String, environment: APNsEnvironment = .development, channels: [String]
    ) async throws -> [String] {
        let answer = try await request {
            .subscribe(request: $0, topic: topic, environment: environment, channels: channels)
        }
        guard case .subscribed(_, _, _, let all) = answer else { throw Self.unexpected(answer) }
        return all
    }

    /// Ends an app's subscriptions to channels; returns those it still has.
    @discardableResult
    public func unsubscribe(
        topic: String, environment: APNsEnvironment = .development, channels: [String]
    ) async throws -> [String] {
        let answer = try await request {
            .unsubscribe(request: $0, topic: topic, environment: environment, channels: channels)
        }
        guard case .subscribed(_, _, _, let all) = answer else { throw Self.unexpected(answer) }
        return all
    }

    /// Acknowledges notifications (when not acknowledging automatically).
    public func acknowledge(_ apnsIDs: [String]) {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.send(.ack(apnsIDs)) }
    }

    /// Tells the gateway that a notification (already acknowledged) could not be used, and why;
    /// the gateway writes it into the push's delivery log.
    public func refused(_ apnsID: String, reason: String) {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.send(.refused(apnsID: apnsID, reason: reason)) }
    }

    /// Closes the link.
    public func close() async {
        try? await channel.close()
    }

    private func request(_ make: @escaping @Sendable (Int) -> LinkMessage) async throws -> LinkMessage {
        let promise = channel.eventLoop.makePromise(of: LinkMessage.self)
        let handler = self.handler
        channel.eventLoop.execute { handler.value.request(make, promise: promise) }
        let answer = try await promise.futureResult.get()
        if case .error(_, let code, let message) = answer { throw Failure(code: code, message: message) }
        return answer
    }

    static func unexpected(_ message: LinkMessage) -> Failure {
        Failure(code: .unexpected, message: "unexpected answer \(String(decoding: message.encoded(), as: UTF8.self))")
    }
}
