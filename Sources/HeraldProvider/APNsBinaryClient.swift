import Foundation
import HeraldCore
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization

/// Where a legacy binary gateway (port 2195) or feedback service (port 2196) listens, and the
/// app certificate that opens it (docs/binary-provider.md).
public struct APNsLegacyEndpoint: Sendable {
    /// Host name or address.
    public var host: String
    /// Port.
    public var port: Int
    /// The app certificate (PEM, leaf first).
    public var certificateChainPEM: String
    /// The certificate's private key (PEM).
    public var privateKeyPEM: String
    /// Extra CA to trust (a Herald gateway's `ca.pem`); `nil` = the system's roots.
    public var caPEM: String?
    /// The TLS server name (SNI) and the name the service's certificate must carry; `nil` = `host`
    /// when it is a name.
    public var serverName: String?

    /// Creates an endpoint.
    public init(
        host: String, port: Int, certificateChainPEM: String, privateKeyPEM: String, caPEM: String? = nil,
        serverName: String? = nil
    ) {
        self.host = host
        self.port = port
        self.certificateChainPEM = certificateChainPEM
        self.privateKeyPEM = privateKeyPEM
        self.caPEM = caPEM
        self.serverName = serverName
    }

    /// Parses `host:port` (`[v6]:port` for IPv6 addresses).
    public static func address(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (1...65535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }

    func tlsContext() throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.certificateChain = try NIOSSLCertificate.fromPEMBytes(Array(certificateChainPEM.utf8)).map {
            .certificate($0)
        }
        configuration.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem))
        if let caPEM {
            configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(caPEM.utf8)))
        }
        return try NIOSSLContext(configuration: configuration)
    }

    var sniName: String? {
        if let serverName { return serverName }
        let isAddress = host.contains(":") || host.allSatisfy { $0.isNumber || $0 == "." }
        return isAddress ? nil : host
    }
}

/// One TLS connection to a legacy service: writes bytes, and collects everything the service
/// sends until it closes.
final class LegacyConnection: Sendable {
    let channel: any Channel
    /// Everything read, once the connection has closed; fails if it closed on an error before
    /// anything was read (a refused handshake, most often).
    let received: EventLoopFuture<[UInt8]>
    private let closedFlag = Atomic<Bool>(false)

    private init(channel: any Channel, received: EventLoopFuture<[UInt8]>) {
        self.channel = channel
        self.received = received
    }

    /// Whether the connection has closed.
    var isClosed: Bool { closedFlag.load(ordering: .acquiring) }

    static func open(_ endpoint: APNsLegacyEndpoint, group: any EventLoopGroup) async throws -> LegacyConnection {
        let tls = try endpoint.tlsContext()
        let serverName = endpoint.sniName
        let loop = group.next()
        let promise = loop.makePromise(of: [UInt8].self)
        let handshake = loop.makePromise(of: Void.self)
        let channel = try await ClientBootstrap(group: loop)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(10))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverName))
                    try sync.addHandler(Collector(promise: promise, handshake: handshake))
                }
            }
            .connect(host: endpoint.host, port: endpoint.port).get()
        let connection = LegacyConnection(channel: channel, received: promise.futureResult)
        channel.closeFuture.whenComplete { _ in connection.closedFlag.store(true, ordering: .releasing) }
        // Nothing goes out before the handshake is done: a refused certificate fails here.
        do {
            try await handshake.futureResult.get()
        } catch {
            channel.close(promise: nil)
            throw error
        }
        return connection
    }

    /// Writes and flushes; fails once the connection is closed.
    func write(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes)).get()
    }

    /// Ends the sending side (TLS close_notify) and waits for the service to close; returns what it sent.
    func finish() async -> Result<[UInt8], any Error> {
        try? await channel.close(mode: .output).get()
        do {
            return .success(try await received.get())
        } catch {
            return .failure(error)
        }
    }

    final class Collector: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        var bytes: [UInt8] = []
        var error: (any Error)?
        let promise: EventLoopPromise<[UInt8]>
        let handshake: EventLoopPromise<Void>

        init(promise: EventLoopPromise<[UInt8]>, handshake: EventLoopPromise<Void>) {
            self.promise = promise
            self.handshake = handshake
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case .handshakeCompleted = event as? TLSUserEvent { handshake.succeed() }
            context.fireUserInboundEventTriggered(event)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            bytes += unwrapInboundIn(data).readableBytesView
        }

        func channelInactive(context: ChannelHandlerContext) {
            end()
            context.fireChannelInactive()
        }

        func handlerRemoved(context: ChannelHandlerContext) { end() }

        private func end() {
            handshake.fail(ChannelError.eof)
            if bytes.isEmpty, let error {
                promise.fail(error)
            } else {
                promise.succeed(bytes)
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            // After the service's last byte, an unclean TLS shutdown changes nothing we read.
            if self.error == nil { self.error = error }
            handshake.fail(error)
            context.close(promise: nil)
        }
    }
}

/// A client of the legacy binary provider interface (docs/binary-provider.md).
///
/// It keeps one connection open and gives every enhanced or frame notification its own
/// identifier. The interface answers only failures: an error packet names the first notification
/// it refused, and the service closes the connection having discarded everything sent after it.
/// The client then records the failure and sends everything after that notification again on a
/// new connection. ``close()`` ends the connection cleanly and waits for the service to close its
/// side, so once it returns every notification sent has been either accepted or reported in
/// ``failures``.
///
/// A simple notification (command 0) carries no identifier: an error packet naming identifier 0
/// cannot say which one failed, so nothing is sent again (except after a shutdown, which names 0
/// when nothing with an identifier was processed: then everything goes again).
public actor APNsBinaryClient {
    /// A notification the service refused.
    public struct Failure: Sendable, Equatable {
        /// The error packet's status.
        public var status: LegacyBinary.Status
        /// The identifier it named.
        public var identifier: UInt32
        /// The notification with that identifier, when the client still had it.
        public var notification: LegacyBinary.Notification?
    }

    /// The endpoint.
    public let endpoint: APNsLegacyEndpoint
    let group: any EventLoopGroup
    let historyLimit: Int
    private var connection: LegacyConnection?
    /// What went out on the current connection (the newest `historyLimit`).
    private var history: [LegacyBinary.Notification] = []
    /// What must go out again on the next connection.
    private var pending: [LegacyBinary.Notification] = []
    private var nextIdentifier: UInt32 = 1
    /// Failures so far, oldest first.
    public private(set) var failures: [Failure] = []
    /// Connections opened so far.
    public private(set) var connectionsOpened = 0

    /// Creates a client; nothing connects until the first send. `historyLimit` bounds how many sent
    /// notifications are kept for sending again after an error.
    public init(
        endpoint: APNsLegacyEndpoint, historyLimit: Int = 100_000,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.endpoint = endpoint
        self.historyLimit = max(1, historyLimit)
        self.group = group
    }

    /// Sends one notification and returns its identifier (the client's own: the one given is
    /// replaced, except in a simple notification, which has none).
    @discardableResult
    public func send(_ notification: LegacyBinary.Notification) async throws -> UInt32 {
        try await send([notification])[0]
    }

    /// Sends notifications in one write and returns their identifiers.
    @discardableResult
    public func send(_ notifications: [LegacyBinary.Notification]) async throws -> [UInt32] {
        if notifications.isEmpty { return [] }
        var batch = notifications
        for i in batch.indices {
            if batch[i].command != 0 {
                batch[i].identifier = nextIdentifier
                nextIdentifier = nextIdentifier == .max ? 1 : nextIdentifier + 1
            } else {
                batch[i].identifier = 0
            }
        }
        try await write(batch)
        return batch.map(\.identifier)
    }

    /// Ends the connection cleanly and waits until the service has closed it, sending again what
    /// an error packet asks for; returns every failure so far.
    @discardableResult
    public func close() async throws -> [Failure] {
        while true {
            if let connection {
                self.connection = nil
                _ = try settle(await connection.finish())
            } else if !pending.isEmpty {
                try await write([])
            } else {
                return failures
            }
        }
    }

    private func write(_ batch: [LegacyBinary.Notification]) async throws {
        var batch = batch
        var closedWithoutAnswer = 0
        while true {
            let connection = try await current()
            let all = pending + batch
            pending = []
            batch = []
            if all.isEmpty { return }
            var bytes: [UInt8] = []
            for notification in all { notification.encode(into: &bytes) }
            history += all
            if history.count > historyLimit { history.removeFirst(history.count - historyLimit) }
            do {
                try await connection.write(bytes)
                return
            } catch {
                // The service closed the connection: most often after an error packet, which tells
                // what to send again.
                self.connection = nil
                if try !settle(await connection.finish()), error is ChannelError {
                    // Closed before these bytes went out, with nothing said: they go again, a few times at most.
                    closedWithoutAnswer += 1
                    if closedWithoutAnswer > 3 { throw error }
                    pending = all + pending
                }
            }
        }
    }

    /// The open connection, or a new one. A connection the service has closed meanwhile is
    /// settled first, so what it refused is known before anything else goes out.
    private func current() async throws -> LegacyConnection {
        if let connection {
            if !connection.isClosed { return connection }
            self.connection = nil
            _ = try settle(await connection.finish())
        }
        let opened = try await LegacyConnection.open(endpoint, group: group)
        connectionsOpened += 1
        connection = opened
        return opened
    }

    /// Reads what a closed connection answered: an error packet puts everything sent after the
    /// notification it names back in line (after the named one too, for a shutdown, which names
    /// the last one processed).
    /// Whether it held an error packet; throws what closed the connection if nothing was read.
    private func settle(_ result: Result<[UInt8], any Error>) throws -> Bool {
        defer { history = [] }
        let received = try result.get()
        guard received.count >= 6, let (status, identifier) = LegacyBinary.parseErrorPacket(Array(received.prefix(6)))
        else { return false }
        let index = identifier == 0 ? nil : history.lastIndex { $0.identifier == identifier }
        if status != .shutdown {
            failures.append(Failure(status: status, identifier: identifier, notification: index.map { history[$0] }))
        }
        if let index {
            pending = Array(history[(index + 1)...]) + pending
        } else if status == .shutdown && identifier == 0 {
            // Stopped before it processed any notification with an identifier: all of them go again.
            pending = history + pending
        }
        return true
    }
}

/// Reads the legacy feedback service (docs/binary-provider.md): the tokens of the certificate's app
/// whose app was removed, with the time each was found removed. The service empties its list as
/// it is read, so a provider should act on what it gets (drop a token only if it was not
/// registered again after that time).
public enum APNsFeedbackReader {
    /// Connects, reads every tuple until the service closes, and returns them.
    public static func read(
        _ endpoint: APNsLegacyEndpoint, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> [LegacyBinary.FeedbackTuple] {
        let connection = try await LegacyConnection.open(endpoint, group: group)
        let bytes = try await connection.received.get()
        return try LegacyBinary.parseFeedback(bytes)
    }
}
