import Crypto
import Foundation
import HeraldCore
import HeraldRuntime
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// The device link listener (docs/device-link.md): WebSocket at `/device/v1`, over TLS, or in
/// cleartext from loopback addresses. Each connection is a few NIO handlers; no Task per
/// connection (DESIGN.md: a million idle links is the goal).
public final class DeviceLinkServer: Sendable {
    /// The link's knobs.
    public struct Configuration: Sendable {
        /// How long the provider waits for a device's acknowledgement before the push is stored.
        public var acknowledgementTimeout: TimeAmount = .seconds(2)
        /// Batching and background budget.
        public var qos = LinkQoS.Configuration()
        /// Liveness of an authenticated link: after half of this with nothing from the device the
        /// gateway sends a WebSocket ping; after all of it the link is closed (a device that is gone
        /// without a word, a half-open connection). `nil`: never. Ten minutes by default.
        public var idleTimeout: TimeAmount? = .minutes(10)
        /// From accepting a connection until the device's signed `hello` has arrived (TLS, the
        /// WebSocket upgrade, the hello). Ten seconds by default.
        public var firstBytesTimeout: TimeAmount = .seconds(10)

        /// The defaults.
        public init() {}
    }

    /// The per-connection logic's shared state.
    let service: DeviceLinkService
    let serverChannel: any Channel
    let channels: ChannelRegistry

    /// The bound address.
    public var localAddress: SocketAddress? { serverChannel.localAddress }

    private init(service: DeviceLinkService, serverChannel: any Channel, channels: ChannelRegistry) {
        self.service = service
        self.serverChannel = serverChannel
        self.channels = channels
    }

    /// Binds the listener. With `tls` nil only cleartext from loopback is served; with it, a
    /// connection whose first byte is a TLS handshake gets TLS and a cleartext one from a loopback
    /// address is served as it is. Cleartext from elsewhere is closed.
    public static func start(
        host: String, port: Int, tls: NIOSSLContext?, directory: GatewayDirectory, router: PushRouter,
        configuration: Configuration = Configuration(), group: any EventLoopGroup, logger: Logger,
        log: ListenerLog? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> DeviceLinkServer {
        let channels = ChannelRegistry()
        let service = DeviceLinkService(
            directory: directory, router: router, configuration: configuration, logger: logger,
            log: log ?? ListenerLog(logger: logger), now: now)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 4096)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.socketOption(.so_keepalive), value: 1)
            .childChannelInitializer { channel in
                channels.add(channel)
                channel.closeFuture.whenComplete { _ in channels.remove(channel) }
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(
                        FirstBytesDeadline(
                            listener: LinkTransportSniffer.listener, deadline: configuration.firstBytesTimeout,
                            log: service.log))
                    try sync.addHandler(LinkTransportSniffer(service: service, tls: tls))
                }
            }
        let channel = try await bootstrap.bind(host: host, port: port).get()
        return DeviceLinkServer(service: service, serverChannel: channel, channels: channels)
    }

    /// Stops: no new connections; every device gets a close frame (1001, going away).
    public func shutdown() async {
        try? await serverChannel.close()
        for handle in service.links.all {
            handle.loop.execute { handle.handler.value.goAway() }
        }
        for channel in channels.all {
            let scheduled = channel.eventLoop.scheduleTask(in: .seconds(2)) { channel.close(promise: nil) }
            try? await channel.closeFuture.get()
            scheduled.cancel()
        }
    }
}

/// What every device link connection shares: the directory, the router, the connected devices and
/// the configuration. Authentication and registration run here, off the event loop (they touch
/// the store).
final class DeviceLinkService: Sendable {
    let directory: GatewayDirectory
    let router: PushRouter
    let links: DeviceLinks
    let configuration: DeviceLinkServer.Configuration
    let logger: Logger
    let log: ListenerLog
    let now: @Sendable () -> Date

    init(
        directory: GatewayDirectory, router: PushRouter, configuration: DeviceLinkServer.Configuration,
        logger: Logger, log: ListenerLog, now: @escaping @Sendable () -> Date
    ) {
        self.directory = directory
        self.router = router
        self.links = router.links
        self.configuration = configuration
        self.logger = logger
        self.log = log
        self.now = now
    }

    // MARK: Authentication and registration (off the event loop: they touch the store)

    /// Why the gateway refused a device.
    struct Refusal: Error {
        var code: String
        var message: String
    }

    func authenticate(device: String?, publicKey: Data?, signature: Data, nonce: Data) async -> Result<
        (DeviceRecord, [Registration]), Refusal
    > {
        let registry = directory.registry
        let existing = device.flatMap { registry.device($0) }
        if let existing, existing.deletedAt != nil {
            return .failure(Refusal(code: "DeviceDeleted", message: "device \(existing.id) was deleted"))
        }
        let keyBytes: Data
        if let existing, !existing.publicKey.isEmpty {
            if let publicKey, publicKey != existing.publicKey {
                return .failure(
                    Refusal(code: "DeviceKeyMismatch", message: "device \(existing.id) is registered with another key"))
            }
            keyBytes = existing.publicKey
        } else if let publicKey {
            keyBytes = publicKey
        } else {
            return .failure(
                Refusal(
                    code: "UnknownDevice",
                    message: device.map { "device \($0) is not registered; send publicKey to register it" }
                        ?? "a new device must send publicKey"))
        }
        guard let key = try? P256.Signing.PublicKey(x963Representation: keyBytes) else {
            return .failure(Refusal(code: "BadPublicKey", message: "publicKey must be a P-256 key in X9.63 form"))
        }
        guard
            let ecdsa = (try? P256.Signing.ECDSASignature(rawRepresentation: signature))
                ?? (try? P256.Signing.ECDSASignature(derRepresentation: signature)),
            key.isValidSignature(ecdsa, for: DeviceLink.signedBytes(nonce: nonce))
        else {
            return .failure(
                Refusal(code: "BadSignature", message: "the signature does not verify with the device's key"))
        }
        do {
            let record = try await directory.registerDevice(id: device, publicKey: keyBytes, now: now())
            return .success((record, registry.registrations(device: record.id)))
        } catch let failure as GatewayDirectory.Failure {
            return .failure(Refusal(code: "Refused", message: failure.description))
        } catch {
            return .failure(Refusal(code: "Internal", message: "\(error)"))
        }
    }

    /// Carries out a device's request and returns the answer.
    func perform(_ message: LinkMessage, device: String) async -> LinkMessage {
        let at = now()
        do {
            switch message {
            case .register(let request, let topic, let environment):
                let r = try await directory.registerApp(
                    device: device, bundleID: topic, environment: environment, now: at)
                logger.info("device registered app", metadata: ["device": "\(device)", "topic": "\(topic)"])
                return .token(
                    request: request, LinkRegistration(topic: topic, environment: environment, token: r.token))
            case .unregister(let request, let topic, let environment):
                try await directory.unregisterApp(device: device, bundleID: topic, environment: environment, now: at)
                logger.info("device removed app", metadata: ["device": "\(device)", "topic": "\(topic)"])
                return .unregistered(request: request, topic: topic, environment: environment)
            case .resetDevice(let request):
                let record = try await directory.resetDevice(device, now: at)
                logger.info("device reset itself", metadata: ["device": "\(device)"])
                return .reset(request: request, generation: record.generation)
            default:
                return .error(request: nil, code: "BadMessage", message: "unexpected message")
            }
        } catch let failure as GatewayDirectory.Failure {
            return .error(
                request: message.requestID, code: failure.status == 404 ? "NotFound" : "Refused",
                message: failure.description)
        } catch {
            return .error(request: message.requestID, code: "Internal", message: "\(error)")
        }
    }
}

extension LinkMessage {
    /// The request id a device put on its message, if any.
    var requestID: Int? {
        switch self {
        case .register(let r, _, _), .unregister(let r, _, _), .resetDevice(let r): return r
        default: return nil
        }
    }
}

/// Looks at the first byte: a TLS handshake (0x16) gets TLS; cleartext is served only to loopback
/// peers. Then the first bytes of HTTP are checked (``ProtocolSniffer``: HTTP/1.1 only; an HTTP/2
/// preface or bytes that are no request line are closed with a logged reason) and HTTP with the
/// WebSocket upgrade is set up.
final class LinkTransportSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    static let listener = "device link"
    let service: DeviceLinkService
    let tls: NIOSSLContext?

    init(service: DeviceLinkService, tls: NIOSSLContext?) {
        self.service = service
        self.tls = tls
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        guard let first = bytes.readableBytesView.first else { return }
        let sync = context.pipeline.syncOperations
        do {
            if first == 0x16 {
                guard let tls else { throw Refused.tlsNotConfigured }
                try sync.addHandler(NIOSSLServerHandler(context: tls))
                // One TLS record per flush rather than per notification.
                try sync.addHandler(WriteCoalescingHandler())
            } else if !Self.isLoopback(context.channel.remoteAddress) {
                throw Refused.cleartextFromNetwork
            }
            let service = self.service
            try sync.addHandler(
                ProtocolSniffer(
                    listener: Self.listener, log: service.log,
                    http1: { try Self.configureHTTP($0, service: service) }, http2: nil))
        } catch {
            service.log.closed(listener: Self.listener, peer: context.channel.remoteAddress, reason: "\(error)")
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
        sync.removeHandler(self, promise: nil)
    }

    enum Refused: Error, CustomStringConvertible {
        case tlsNotConfigured, cleartextFromNetwork
        var description: String {
            switch self {
            case .tlsNotConfigured: "a TLS handshake, but this listener has no TLS"
            case .cleartextFromNetwork: "cleartext from a network address (only loopback may skip TLS)"
            }
        }
    }

    static func isLoopback(_ address: SocketAddress?) -> Bool {
        guard let ip = address?.ipAddress else { return false }
        return Loopback.contains(ip)
    }

    static func configureHTTP(_ sync: ChannelPipeline.SynchronousOperations, service: DeviceLinkService) throws {
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: DeviceLink.maximumMessageSize, automaticErrorHandling: true,
            shouldUpgrade: { channel, head in
                let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
                return channel.eventLoop.makeSucceededFuture(path == DeviceLink.path ? HTTPHeaders() : nil)
            },
            upgradePipelineHandler: { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(
                        NIOWebSocketFrameAggregator(
                            minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 64,
                            maxAccumulatedFrameSize: DeviceLink.maximumMessageSize))
                    try sync.addHandler(DeviceLinkHandler(service: service))
                }
            })
        try sync.configureHTTPServerPipeline(
            withServerUpgrade: (
                upgraders: [upgrader],
                completionHandler: { context in
                    if let fallback = try? context.pipeline.syncOperations.handler(type: LinkHTTPFallbackHandler.self) {
                        context.pipeline.syncOperations.removeHandler(fallback, promise: nil)
                    }
                }
            ), withErrorHandling: true)
        try sync.addHandler(LinkHTTPFallbackHandler())
    }
}

/// Answers a plain HTTP request on the link port: 426 for the link's path without the WebSocket
/// upgrade, 404 for anything else.
final class LinkHTTPFallbackHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    var path = ""

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        case .body:
            break
        case .end:
            let upgrade = path == DeviceLink.path
            let text = upgrade ? "the device link speaks WebSocket: send Upgrade: websocket\n" : "not found\n"
            var headers = HTTPHeaders([("content-type", "text/plain"), ("connection", "close")])
            headers.add(name: "content-length", value: String(text.utf8.count))
            if upgrade { headers.add(name: "upgrade", value: "websocket") }
            let head = HTTPResponseHead(
                version: .http1_1, status: upgrade ? .upgradeRequired : .notFound, headers: headers)
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { [channel = context.channel] _ in
                channel.close(promise: nil)
            }
        }
    }
}
