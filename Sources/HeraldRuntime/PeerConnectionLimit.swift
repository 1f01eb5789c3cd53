import NIOCore
import Synchronization

/// At most so many open connections from one address on a listener (`herald gateway
/// --max-connections-per-address`, `--link-max-connections-per-address`; docs/listeners.md).
///
/// Every connection is bounded by its deadlines, but without a count one peer may open as many as
/// the gateway has file descriptors, and so keep everyone else out. A connection over the limit is
/// accepted and closed at once, with a logged reason (``ConnectionRefusal``); the others from that
/// address go on. An address is its IP address, without the port: the connections of a network
/// behind one NAT count together.
public final class PeerConnectionLimit: Sendable {
    /// How many connections one address may hold open.
    public let limit: Int
    private let open = Mutex<[String: Int]>([:])

    /// A limit of `limit` (more than 0) connections per address.
    public init(limit: Int) {
        precondition(limit > 0, "a limit of at least one connection")
        self.limit = limit
    }

    /// A limit of `limit` connections, or none for 0.
    public static func of(_ limit: Int) -> PeerConnectionLimit? { limit > 0 ? PeerConnectionLimit(limit: limit) : nil }

    /// Counts a connection from `address`: `false`, and nothing counted, when that address holds
    /// ``limit`` connections already.
    public func admit(_ address: String) -> Bool {
        open.withLock { open in
            let count = open[address, default: 0]
            guard count < limit else { return false }
            open[address] = count + 1
            return true
        }
    }

    /// A connection from `address` that was admitted has closed.
    public func release(_ address: String) {
        open.withLock { open in
            guard let count = open[address] else { return }
            if count <= 1 { open.removeValue(forKey: address) } else { open[address] = count - 1 }
        }
    }

    /// How many connections `address` holds open.
    public func count(of address: String) -> Int { open.withLock { $0[address, default: 0] } }

    /// Counts `channel` against its peer's address until it closes: `false` when that address holds
    /// ``limit`` connections already (then nothing is counted). A channel with no IP address (a Unix
    /// socket) is not counted.
    public func admit(_ channel: any Channel) -> Bool {
        guard let address = channel.remoteAddress?.ipAddress else { return true }
        guard admit(address) else { return false }
        channel.closeFuture.whenComplete { _ in self.release(address) }
        return true
    }

    /// Why a connection from `address` was refused, for the log.
    public func reason(for address: SocketAddress?) -> String {
        let who = address?.ipAddress ?? "its address"
        return "\(who) holds \(limit) connection\(limit == 1 ? "" : "s") already (the limit per address)"
    }
}

/// A connection refused as soon as it is accepted: its pipeline is this handler only, which logs
/// the reason (``ListenerLog/closed(listener:peer:reason:)``, counted in the refused connections'
/// metric) and closes it without reading.
public final class ConnectionRefusal: ChannelInboundHandler {
    public typealias InboundIn = ByteBuffer

    let listener: String
    let reason: String
    let log: ListenerLog

    /// Refuses with `reason`, logged as `listener`'s.
    public init(listener: String, reason: String, log: ListenerLog) {
        self.listener = listener
        self.reason = reason
        self.log = log
    }

    public func channelActive(context: ChannelHandlerContext) {
        log.closed(listener: listener, peer: context.channel.remoteAddress, reason: reason)
        context.close(promise: nil)
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}
