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
/// connection (docs/scaling.md: a million idle links is the goal).
public final class DeviceLinkServer: Sendable {
    /// How the listener runs (``DeviceLinkConfiguration``).
    public typealias Configuration = DeviceLinkConfiguration

    /// The per-connection logic's shared state.
    let service: DeviceLinkService
    let serverChannel: ListeningChannels
    let channels: ChannelRegistry

    /// The bound address.
    public var localAddress: SocketAddress? { serverChannel.localAddress }

    private init(service: DeviceLinkService, serverChannel: ListeningChannels, channels: ChannelRegistry) {
        self.service = service
        self.serverChannel = serverChannel
        self.channels = channels
    }

    /// Binds the listener. With `tls` nil only cleartext from loopback is served; with it, a
    /// connection whose first byte is a TLS handshake gets TLS and a cleartext one from a loopback
    /// address is served as it is. Cleartext from elsewhere is closed. With `sockets` (listening
    /// sockets handed over, ``InheritedSockets``) those are served instead of binding `host:port`.
    public static func start(
        host: String, port: Int, sockets: [CInt] = [], tls: NIOSSLContext?, directory: GatewayDirectory,
        links: DeviceLinks, offline: OfflineStore,
        configuration: Configuration = Configuration(), group: any EventLoopGroup, logger: Logger,
        log: ListenerLog? = nil, clock: any WallClock = SystemClock(), broadcasts: BroadcastHub? = nil
    ) async throws -> DeviceLinkServer {
        let channels = ChannelRegistry()
        let service = DeviceLinkService(
            directory: directory, links: links, offline: offline, configuration: configuration, logger: logger,
            log: log ?? ListenerLog(logger: logger), clock: clock, broadcasts: broadcasts)
        let firstBytes = FirstBytesDeadlines(deadline: TimeAmount(configuration.firstBytesTimeout))
        let peers = PeerConnectionLimit.of(configuration.maxConnectionsPerAddress)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 4096)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // Set on the listening socket, whose accepted connections inherit both (Linux copies
            // them into each new socket; `DeviceLinkTests` reads them back from one), rather than
            // on each connection: that was three system calls per reconnection (NIO looks the
            // socket's address up before it sets TCP_NODELAY), and before that a chain of futures
            // as the bootstrap's child options, about a twentieth of the gateway's CPU per
            // reconnection in a storm. A socket handed over gets them too, and keeps them for the
            // connections it queues while no gateway runs.
            .serverChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .serverChannelOption(.socketOption(.so_keepalive), value: 1)
            .childChannelInitializer { channel in
                if let refused = ConnectionRefusal.pipeline(
                    for: channel, limit: peers, listener: LinkTransportSniffer.listener, log: service.log)
                {
                    return refused
                }
                channels.add(channel)
                channel.closeFuture.whenComplete { _ in channels.remove(channel) }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.syncOptions?.setOption(.writeBufferWaterMark, value: linkWaterMarks)
                    try configure(channel.pipeline.syncOperations, service: service, tls: tls, firstBytes: firstBytes)
                }
            }
        let channel = try await bootstrap.bind(host: host, port: port, sockets: sockets, backlog: 4096)
        return DeviceLinkServer(service: service, serverChannel: channel, channels: channels)
    }

    /// The unsent bytes above which a link stops reading (``configure(_:service:tls:firstBytes:)``),
    /// and below which it reads again: well above NIO's 64 KiB, so that a backlog written at once
    /// to a device that reads at its own pace does not leave that device's acknowledgements unread
    /// (direct pushes would reach their acknowledgement deadline and be stored), while a peer that
    /// never reads holds at most about this much: above it the link is backed up and writes no
    /// more pushes (docs/device-link.md, "A device that does not read").
    static let linkWaterMarks = ChannelOptions.Types.WriteBufferWaterMark(low: 256 << 10, high: 1 << 20)

    /// A new connection's handlers: NIO's `BackPressureHandler`, which stops reading while the
    /// link's unsent bytes are above the high-water mark (every message may get an answer, a `pong`
    /// or an error, so a peer that sends and never reads would otherwise have them pile up in
    /// memory), the first-bytes deadline, and the sniffer that picks TLS or cleartext.
    static func configure(
        _ sync: ChannelPipeline.SynchronousOperations, service: DeviceLinkService, tls: NIOSSLContext?,
        firstBytes: FirstBytesDeadlines
    ) throws {
        try sync.addHandler(BackPressureHandler())
        try sync.addHandler(
            FirstBytesDeadline(listener: LinkTransportSniffer.listener, deadlines: firstBytes, log: service.log))
        try sync.addHandler(LinkTransportSniffer(service: service, tls: tls))
    }

    /// Stops: no new connections; every device gets a close frame (1001, going away).
    public func shutdown() async {
        try? await serverChannel.close()
        for handle in service.links.all {
            handle.loop.execute { handle.handler.value.goAway() }
        }
        // Every device has two seconds to answer its close frame; then what is left is closed. The
        // links are waited for together: a wait each would be a hop between threads per link.
        let open = channels.all
        guard let loop = open.first?.eventLoop else { return }
        let deadline = loop.scheduleTask(in: .seconds(2)) {
            for channel in open { channel.close(promise: nil) }
        }
        try? await EventLoopFuture.andAllComplete(open.map(\.closeFuture), on: loop).get()
        deadline.cancel()
    }
}
