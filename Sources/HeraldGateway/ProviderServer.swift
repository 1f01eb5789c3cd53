import Foundation
import HeraldCore
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
    let now: @Sendable () -> Date
    let logger: Logger
    let serverChannel: any Channel

    /// The bound address.
    public var localAddress: SocketAddress? { serverChannel.localAddress }

    /// SETTINGS the provider API advertises.
    public static let settings: HTTP2Settings = [
        HTTP2Setting(parameter: .maxConcurrentStreams, value: 1000),
        HTTP2Setting(parameter: .initialWindowSize, value: 65535),
        HTTP2Setting(parameter: .maxHeaderListSize, value: 16384),
    ]

    /// Binds a listener.
    public static func start(
        host: String, port: Int, transport: Transport, api: ProviderAPI, router: PushRouter,
        environment: APNsEnvironment, group: any EventLoopGroup, logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> ProviderServer {
        let holder = ChannelRegistry()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                holder.add(channel)
                channel.closeFuture.whenComplete { _ in holder.remove(channel) }
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    let connection = ProviderConnectionState(defaultEnvironment: environment)
                    switch transport {
                    case .cleartext:
                        try sync.addHandler(
                            ProtocolSniffer(api: api, router: router, connection: connection, now: now))
                    case .tls(let context, let ca):
                        try sync.addHandler(NIOSSLServerHandler(context: context))
                        try sync.addHandler(
                            NIOTypedApplicationProtocolNegotiationHandler<Void> { result, channel in
                                channel.eventLoop.makeCompletedFuture {
                                    var connection = connection
                                    connection.certificate = Self.grant(channel: channel, ca: ca, now: now())
                                    switch result {
                                    case .negotiated("h2"):
                                        try configureHTTP2(
                                            channel.pipeline.syncOperations, api, router, connection, now)
                                    default:
                                        try configureHTTP1(
                                            channel.pipeline.syncOperations, api, router, connection, now)
                                    }
                                }
                            })
                    }
                }
            }
        let channel = try await bootstrap.bind(host: host, port: port).get()
        let server = ProviderServer(
            api: api, router: router, environment: environment, now: now, logger: logger, serverChannel: channel,
            registry: holder)
        return server
    }

    let registry: ChannelRegistry

    init(
        api: ProviderAPI, router: PushRouter, environment: APNsEnvironment, now: @escaping @Sendable () -> Date,
        logger: Logger, serverChannel: any Channel, registry: ChannelRegistry
    ) {
        self.api = api
        self.router = router
        self.environment = environment
        self.now = now
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
        await registry.stopAll(timeout: timeout)
    }
}

/// The open connections of a listener.
final class ChannelRegistry: Sendable {
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])
    func add(_ channel: any Channel) { channels.withLock { $0[ObjectIdentifier(channel)] = channel } }
    func remove(_ channel: any Channel) { channels.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(channel)) } }
    var all: [any Channel] { channels.withLock { Array($0.values) } }
    var count: Int { channels.withLock { $0.count } }

    /// Tells every open connection to stop (``ProviderShutdownEvent``) and waits for each to close;
    /// after `timeout` closes whatever is left.
    func stopAll(timeout: TimeAmount) async {
        let open = all
        for channel in open {
            channel.pipeline.fireUserInboundEventTriggered(ProviderShutdownEvent())
        }
        let deadline = NIODeadline.now() + timeout
        for channel in open {
            let remaining = deadline - .now()
            if remaining > .zero {
                let scheduled = channel.eventLoop.scheduleTask(in: remaining) { channel.close(promise: nil) }
                try? await channel.closeFuture.get()
                scheduled.cancel()
            } else {
                try? await channel.close()
            }
        }
    }
}

func configureHTTP2(
    _ pipeline: ChannelPipeline.SynchronousOperations, _ api: ProviderAPI, _ router: PushRouter,
    _ connection: ProviderConnectionState, _ now: @escaping @Sendable () -> Date
) throws {
    var configuration = NIOHTTP2Handler.ConnectionConfiguration()
    configuration.initialSettings = ProviderServer.settings
    try pipeline.addHandler(WriteCoalescingHandler())
    try pipeline.addHandler(NIOHTTP2Handler(mode: .server, connectionConfiguration: configuration))
    try pipeline.addHandler(ProviderHTTP2Handler(api: api, router: router, connection: connection, now: now))
}

func configureHTTP1(
    _ pipeline: ChannelPipeline.SynchronousOperations, _ api: ProviderAPI, _ router: PushRouter,
    _ connection: ProviderConnectionState, _ now: @escaping @Sendable () -> Date
) throws {
    try pipeline.configureHTTPServerPipeline(withPipeliningAssistance: true, withErrorHandling: true)
    try pipeline.addHandler(ProviderHTTP1Handler(api: api, router: router, connection: connection, now: now))
}

/// Tells h2c prior knowledge (the connection preface `PRI * HTTP/2.0`) from HTTP/1.1 by the first
/// bytes, then replaces itself with the right pipeline and replays what it read.
final class ProtocolSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    let api: ProviderAPI
    let router: PushRouter
    let connection: ProviderConnectionState
    let now: @Sendable () -> Date
    var buffered: ByteBuffer?

    init(api: ProviderAPI, router: PushRouter, connection: ProviderConnectionState, now: @escaping @Sendable () -> Date)
    {
        self.api = api
        self.router = router
        self.connection = connection
        self.now = now
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if buffered == nil {
            buffered = bytes
        } else {
            buffered!.writeBuffer(&bytes)
        }
        guard let buffered else { return }
        let view = buffered.readableBytesView
        let n = min(view.count, Self.preface.count)
        let isHTTP2Prefix = view.prefix(n).elementsEqual(Self.preface.prefix(n))
        if isHTTP2Prefix && n < Self.preface.count { return }  // wait for more
        do {
            if isHTTP2Prefix {
                try configureHTTP2(context.pipeline.syncOperations, api, router, connection, now)
            } else {
                try configureHTTP1(context.pipeline.syncOperations, api, router, connection, now)
            }
        } catch {
            context.close(promise: nil)
            return
        }
        self.buffered = nil
        context.fireChannelRead(wrapInboundOut(buffered))
        context.pipeline.syncOperations.removeHandler(self, promise: nil)
    }
}
