import Foundation
import HeraldCore
import HeraldRuntime
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization
import X509

/// A provider API listener: HTTP/2 over TLS (ALPN `h2`, falling back to `http/1.1`), or, for
/// development, cleartext h2c with prior knowledge and HTTP/1.1 on the same port.
public final class ProviderServer: Sendable {
    /// How the listener speaks.
    public enum Transport: Sendable {
        /// Cleartext: h2c with prior knowledge or HTTP/1.1, told apart by the first bytes.
        case cleartext
        /// TLS with ALPN h2 and http/1.1. Client certificates from `ca` are asked for but optional.
        case tls(NIOSSLContext, ca: GatewayCA)
    }

    let api: ProviderAPI
    let router: PushRouter
    let environment: APNsEnvironment
    let clock: any WallClock
    let logger: Logger
    let serverChannel: ListeningChannels
    /// Whether it speaks cleartext (the development listeners).
    public let isCleartext: Bool

    /// The bound address.
    public var localAddress: SocketAddress? { serverChannel.localAddress }

    /// Binds a listener. Every connection gets the first-bytes deadline (`firstBytes`: from
    /// accepting it until its first complete request); the idle deadline is the API's
    /// (``ProviderAPI/idleTimeout``). Without ALPN (cleartext, or a TLS client that offers none) the
    /// first bytes say whether it is HTTP/2 or HTTP/1.1; anything else is closed with a logged reason.
    /// With a `capture`, every connection's traffic after TLS is written to it. With `sockets`
    /// (listening sockets handed over, ``InheritedSockets``) those are served instead of binding
    /// `host:port`. With `maxConnectionsPerAddress` above 0, a connection from an address that holds
    /// that many already is closed at once (``PeerConnectionLimit``).
    public static func start(
        host: String, port: Int, sockets: [CInt] = [], transport: Transport, api: ProviderAPI, router: PushRouter,
        environment: APNsEnvironment, group: any EventLoopGroup, logger: Logger = .silent,
        firstBytes: TimeAmount = .seconds(10), log: ListenerLog? = nil,
        clock: any WallClock = SystemClock(), capture: ProviderCapture? = nil, maxConnectionsPerAddress: Int = 0
    ) async throws -> ProviderServer {
        let holder = ChannelRegistry()
        let peers = PeerConnectionLimit.of(maxConnectionsPerAddress)
        let deadlines = FirstBytesDeadlines(deadline: firstBytes)
        let log = log ?? ListenerLog(logger: logger)
        let name: String
        switch (transport, api.channels != nil) {
        case (.cleartext, false): name = "development listener"
        case (.tls, false): name = "provider API"
        case (.cleartext, true): name = "channel management development listener"
        case (.tls, true): name = "channel management API"
        }
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                if let refused = ConnectionRefusal.pipeline(for: channel, limit: peers, listener: name, log: log) {
                    return refused
                }
                holder.add(channel)
                channel.closeFuture.whenComplete { _ in holder.remove(channel) }
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    let connection = ProviderConnectionState(defaultEnvironment: environment)
                    let setup = ProviderPipeline(
                        api: api, router: router, clock: clock, requestDeadline: firstBytes, log: log)
                    try sync.addHandler(FirstBytesDeadline(listener: name, deadlines: deadlines, log: log))
                    switch transport {
                    case .cleartext:
                        if let capture { try sync.addHandler(capture.handler()) }
                        try sync.addHandler(setup.sniffer(listener: name, log: log, connection: connection))
                    case .tls(let context, let ca):
                        if api.channels == nil, let rule = api.faults.refusesHandshake() {
                            try sync.addHandler(HandshakeRefusal(rule: rule.id, log: log))
                            return
                        }
                        try sync.addHandler(NIOSSLServerHandler(context: context))
                        if let capture { try sync.addHandler(capture.handler()) }
                        try sync.addHandler(
                            NIOTypedApplicationProtocolNegotiationHandler<Void> { result, channel in
                                channel.eventLoop.makeCompletedFuture {
                                    var connection = connection
                                    connection.certificate = Self.grant(channel: channel, ca: ca, now: clock.now())
                                    let sync = channel.pipeline.syncOperations
                                    switch result {
                                    case .negotiated("h2"): try setup.http2(sync, connection)
                                    case .negotiated("http/1.1"): try setup.http1(sync, connection)
                                    default:
                                        // No ALPN: some clients start HTTP/2 with the preface at once.
                                        try sync.addHandler(
                                            setup.sniffer(listener: name, log: log, connection: connection))
                                    }
                                }
                            })
                    }
                }
            }
        let channel = try await bootstrap.bind(host: host, port: port, sockets: sockets, backlog: 1024)
        var cleartext = false
        if case .cleartext = transport { cleartext = true }
        let server = ProviderServer(
            api: api, router: router, environment: environment, clock: clock, logger: logger, serverChannel: channel,
            registry: holder, isCleartext: cleartext)
        return server
    }

    let registry: ChannelRegistry

    init(
        api: ProviderAPI, router: PushRouter, environment: APNsEnvironment, clock: any WallClock,
        logger: Logger, serverChannel: ListeningChannels, registry: ChannelRegistry, isCleartext: Bool
    ) {
        self.isCleartext = isCleartext
        self.api = api
        self.router = router
        self.environment = environment
        self.clock = clock
        self.logger = logger
        self.serverChannel = serverChannel
        self.registry = registry
    }

    /// What the client certificate (if any) grants.
    static func grant(channel: any Channel, ca: GatewayCA, now: Date) -> CertificateGrant? {
        guard let handler = try? channel.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self),
            let peer = handler.peerCertificate
        else { return nil }
        guard let der = try? peer.toDERBytes(), let cert = try? Certificate(derEncoded: der) else {
            return CertificateGrant(bundleID: "", topics: [], environments: [], problem: "unreadable certificate")
        }
        return ca.grant(for: cert, now: now)
    }

    /// Stops gracefully: no new connections; each connection gets GOAWAY `{"reason":"Shutdown"}`
    /// (HTTP/2) or `connection: close` (HTTP/1.1), finishes what is in flight and closes. After
    /// `timeout` whatever is left is closed.
    public func shutdown(timeout: TimeAmount = .seconds(10)) async {
        api.beginShutdown()
        try? await serverChannel.close()
        await registry.stopAll(timeout: timeout, event: ProviderShutdownEvent())
    }
}

/// A fault rule's refused TLS handshake: the client's hello is answered with a fatal
/// `handshake_failure` alert (a TLS 1.2 record, which every TLS client reads), and the connection closes.
final class HandshakeRefusal: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Content type alert (21), version 3.3, length 2, level fatal (2), handshake_failure (40).
    static let alert: [UInt8] = [21, 3, 3, 0, 2, 2, 40]
    let rule: String
    let log: ListenerLog
    var answered = false

    init(rule: String, log: ListenerLog) {
        self.rule = rule
        self.log = log
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answered else { return }
        answered = true
        log.logger.info(
            "fault rule: TLS handshake refused",
            metadata: ["peer": "\(context.channel.remoteAddress.map { "\($0)" } ?? "?")", "rule": "\(rule)"])
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: Self.alert))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}
