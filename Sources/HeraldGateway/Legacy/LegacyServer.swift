import Foundation
import HeraldCore
import HeraldRuntime
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import X509

/// The legacy binary provider interface (port 2195) or the feedback service (port 2196),
/// docs/binary-provider.md: TLS with a client certificate from the gateway's CA, which names the
/// topic (its `UID`) and the environments it may be used in. A listener serves one environment, as
/// Apple's separate sandbox and production hosts did; a certificate not valid for it fails the handshake.
public final class LegacyServer: Sendable {
    /// Which of the two it is (``LegacyService``).
    public typealias Service = LegacyService

    let serverChannel: ListeningChannels
    let registry: ChannelRegistry
    let service: Service

    /// The bound address.
    public var localAddress: SocketAddress? { serverChannel.localAddress }

    init(serverChannel: ListeningChannels, registry: ChannelRegistry, service: Service) {
        self.serverChannel = serverChannel
        self.registry = registry
        self.service = service
    }

    /// Binds a listener. `tls` must require client certificates
    /// (``GatewayStateDirectory/legacyTLSContext(certificatePEM:keyPEM:ca:)``). With `sockets`
    /// (listening sockets handed over, ``InheritedSockets``) those are served instead of binding
    /// `host:port`. With `maxConnectionsPerAddress` above 0, a connection from an address that holds
    /// that many already is closed at once (``PeerConnectionLimit``).
    public static func start(
        _ service: Service, host: String, port: Int, sockets: [CInt] = [], tls: NIOSSLContext, ca: GatewayCA,
        api: ProviderAPI, router: PushRouter, directory: GatewayDirectory, environment: APNsEnvironment,
        group: any EventLoopGroup, logger: Logger = .silent,
        timeouts: ListenerTimeouts = ListenerTimeouts(idle: .seconds(3600)),
        log: ListenerLog? = nil,
        clock: any WallClock = SystemClock(), maxConnectionsPerAddress: Int = 0
    ) async throws -> LegacyServer {
        let registry = ChannelRegistry()
        let peers = PeerConnectionLimit.of(maxConnectionsPerAddress)
        let log = log ?? ListenerLog(logger: logger)
        let firstBytes = FirstBytesDeadlines(deadline: TimeAmount(timeouts.firstBytes))
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            // A provider's TLS close_notify ends its input only: what it sent is processed, and
            // the connection closes once that has been routed (or after an error packet).
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                if let refused = ConnectionRefusal.pipeline(
                    for: channel, limit: peers, listener: service.rawValue, log: log)
                {
                    return refused
                }
                registry.add(channel)
                channel.closeFuture.whenComplete { _ in registry.remove(channel) }
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(
                        FirstBytesDeadline(listener: service.rawValue, deadlines: firstBytes, log: log))
                    try sync.addHandler(
                        NIOSSLServerHandler(context: tls) { certificates, promise in
                            promise.succeed(
                                Self.verify(certificates, ca: ca, environment: environment, now: clock.now()))
                        })
                    switch service {
                    case .binary:
                        try sync.addHandler(
                            BinaryProviderHandler(
                                api: api, router: router, directory: directory, ca: ca, environment: environment,
                                logger: logger, timeouts: timeouts, log: log, clock: clock))
                    case .feedback:
                        try sync.addHandler(
                            FeedbackHandler(
                                feedback: router.offline.store, ca: ca, environment: environment, logger: logger,
                                clock: clock))
                    }
                }
            }
        let channel = try await bootstrap.bind(host: host, port: port, sockets: sockets, backlog: 256)
        return LegacyServer(serverChannel: channel, registry: registry, service: service)
    }

    /// The handshake's verdict on the client's certificate: issued by this CA, within its
    /// validity, with a UID, and valid for the connection's environment.
    static func verify(_ certificates: [NIOSSLCertificate], ca: GatewayCA, environment: APNsEnvironment, now: Date)
        -> NIOSSLVerificationResult
    {
        guard let leaf = certificates.first, let der = try? leaf.toDERBytes(),
            let certificate = try? Certificate(derEncoded: der)
        else { return .failed }
        let grant = ca.grant(for: certificate, now: now)
        guard grant.problem == nil, grant.environments.contains(environment) else { return .failed }
        return .certificateVerified
    }

    /// Stops: no new connections; a binary connection gets the shutdown status (10) with the last
    /// identifier it processed, and closes once what it accepted has been routed. After `timeout`
    /// whatever is left is closed.
    public func shutdown(timeout: TimeAmount = .seconds(10)) async {
        try? await serverChannel.close()
        await registry.stopAll(timeout: timeout, event: ProviderShutdownEvent())
    }
}
