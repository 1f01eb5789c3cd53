import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// An HTTP/2 client on swift-nio-http2's frames, for the many small requests of APNs: the provider
/// client (HeraldProvider's `APNsClient`) and a gateway's forwarding to other nodes share it.
///
/// Connections are opened on first use and again after one closes, and kept; each lives on one event
/// loop. With ``Spread/connections(_:)`` an endpoint gets that many connections and requests take
/// them in turn; with ``Spread/perLoop`` it gets one per loop of the group, and a request sent from one
/// of those loops goes out on that loop's connection. A connection never has more streams open than
/// the server allows; the rest wait for a free one. A request the server did not take (GOAWAY,
/// REFUSED_STREAM) goes to a new connection by itself.
public final class HTTP2Client: Sendable {
    /// How an endpoint's requests spread over connections.
    public enum Spread: Sendable, Equatable {
        /// This many connections per endpoint, taken in turn.
        case connections(Int)
        /// One connection per event loop of the group.
        case perLoop
    }

    /// How the client connects.
    public struct Configuration: Sendable {
        /// TLS for `https://` endpoints, with ALPN `h2` among its protocols; `nil` allows only `http://`.
        public var tls: NIOSSLContext?
        /// How long a connection may take to open.
        public var connectTimeout: TimeAmount
        /// How requests spread over connections.
        public var spread: Spread
        /// Whether TLS names the server's host (SNI; never for an IP address).
        public var serverNameIndication: Bool

        /// A configuration.
        public init(
            tls: NIOSSLContext?, connectTimeout: TimeAmount = .seconds(10), spread: Spread = .connections(1),
            serverNameIndication: Bool = true
        ) {
            self.tls = tls
            self.connectTimeout = connectTimeout
            self.spread = spread
            self.serverNameIndication = serverNameIndication
        }
    }

    /// The configuration.
    public let configuration: Configuration
    let group: any EventLoopGroup
    private struct Key: Hashable {
        var endpoint: HTTP2Endpoint
        var slot: Int
    }
    /// The open connections, and whether the client has shut down (one lock: a request that gets
    /// past the check never opens a connection the shutdown would miss).
    private struct Pool {
        var connections: [Key: HTTP2ClientConnection] = [:]
        var stopped = false
    }
    private let pool = Mutex(Pool())
    private let turn = Atomic<Int>(0)
    /// The group's loops by identity, numbered: a request from one of them uses its connection.
    private let loopSlots: [ObjectIdentifier: Int]

    /// A client whose connections live on `group`'s loops.
    public init(configuration: Configuration, group: any EventLoopGroup) {
        self.configuration = configuration
        self.group = group
        var slots: [ObjectIdentifier: Int] = [:]
        for loop in group.makeIterator() { slots[ObjectIdentifier(loop)] = slots.count }
        self.loopSlots = slots
    }

    /// Sends `request` to `endpoint`; `completion` is called once, on a loop of the group. With
    /// ``Spread/perLoop``, a request sent on one of the group's loops uses that loop's connection.
    public func send(
        _ request: HTTP2ClientRequest, to endpoint: HTTP2Endpoint, completion: @escaping HTTP2ClientCompletion
    ) {
        let (slot, preferred) = slot()
        let connection = pool.withLock { pool -> HTTP2ClientConnection? in
            if pool.stopped { return nil }
            let key = Key(endpoint: endpoint, slot: slot)
            if let existing = pool.connections[key] { return existing }
            let created = HTTP2ClientConnection(
                endpoint: endpoint, loop: preferred ?? group.next(), tls: configuration.tls,
                connectTimeout: configuration.connectTimeout,
                serverNameIndication: configuration.serverNameIndication)
            pool.connections[key] = created
            return created
        }
        guard let connection else {
            // Never from inside `send`: a caller that sends again from its completion would recurse.
            group.next().execute { completion(.failure(HTTP2ClientFailure(.stopped, "the client has shut down"))) }
            return
        }
        let pending = PendingRequest(request: request, completion: completion)
        if connection.loop.inEventLoop {
            connection.send(pending)
        } else {
            connection.loop.execute { connection.send(pending) }
        }
    }

    /// Sends `request` to `endpoint` and waits for its answer or its failure.
    public func execute(
        _ request: HTTP2ClientRequest, to endpoint: HTTP2Endpoint
    ) async -> Result<HTTP2ClientResponse, HTTP2ClientFailure> {
        await withCheckedContinuation { continuation in
            send(request, to: endpoint) { continuation.resume(returning: $0) }
        }
    }

    /// The connection slot for a request from here, and the loop a new connection there takes.
    private func slot() -> (Int, (any EventLoop)?) {
        switch configuration.spread {
        case .connections(let count):
            let n = turn.wrappingAdd(1, ordering: .relaxed).oldValue
            return (Int(UInt(bitPattern: n) % UInt(max(1, count))), nil)
        case .perLoop:
            if let current = MultiThreadedEventLoopGroup.currentEventLoop,
                let slot = loopSlots[ObjectIdentifier(current)]
            {
                return (slot, current)
            }
            let loop = group.next()
            return (loopSlots[ObjectIdentifier(loop)] ?? 0, loop)
        }
    }

    /// Closes every connection (what is in flight fails) and refuses what comes next.
    public func shutdown() async {
        let all = pool.withLock { pool in
            defer { pool = Pool(stopped: true) }
            return Array(pool.connections.values)
        }
        for connection in all {
            try? await connection.loop.submit { connection.close() }.get()
        }
    }
}
