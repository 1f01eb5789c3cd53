import NIOCore
import Synchronization

/// At most so many open connections from one address on a listener (`herald gateway
/// --max-connections-per-address`, `--link-max-connections-per-address`; docs/listeners.md).
///
/// Every connection is bounded by its deadlines, but without a count one peer may open as many as
/// the gateway has file descriptors, and so keep everyone else out. A connection over the limit is
/// accepted and closed at once (``ConnectionRefusal``); the others from that address go on. An
/// address is its IP address, without the port (an IPv4 address mapped into IPv6 counts as the IPv4
/// address): the connections of a network behind one NAT count together.
public final class PeerConnectionLimit: Sendable {
    /// What ``admit(_:)-(String)`` decided.
    public enum Admission: Equatable, Sendable {
        /// Counted until it is released.
        case admitted
        /// Over the limit, not counted. `firstSinceFull` is true for the first refusal since the
        /// address last held fewer than the limit: the one worth a log line (the others are only
        /// counted, so that a peer cannot flood the log by connecting).
        case refused(firstSinceFull: Bool)
    }

    struct Peer {
        var open = 0
        var refusing = false
    }

    /// How many connections one address may hold open.
    public let limit: Int
    private let peers = Mutex<[String: Peer]>([:])

    /// A limit of `limit` (more than 0) connections per address.
    public init(limit: Int) {
        precondition(limit > 0, "a limit of at least one connection")
        self.limit = limit
    }

    /// A limit of `limit` connections, or none for 0.
    public static func of(_ limit: Int) -> PeerConnectionLimit? { limit > 0 ? PeerConnectionLimit(limit: limit) : nil }

    /// Counts a connection from `address`, unless that address holds ``limit`` connections already.
    public func admit(_ address: String) -> Admission {
        peers.withLock { peers in
            var peer = peers[address, default: Peer()]
            defer { peers[address] = peer }
            guard peer.open < limit else {
                let first = !peer.refusing
                peer.refusing = true
                return .refused(firstSinceFull: first)
            }
            peer.open += 1
            return .admitted
        }
    }

    /// A connection from `address` that was admitted has closed.
    public func release(_ address: String) {
        peers.withLock { peers in
            guard var peer = peers[address] else { return }
            peer.open -= 1
            peer.refusing = false
            peers[address] = peer.open > 0 ? peer : nil
        }
    }

    /// How many connections `address` holds open.
    public func count(of address: String) -> Int { peers.withLock { $0[address]?.open ?? 0 } }

    /// Counts `channel` against its peer's address until it closes, unless that address holds
    /// ``limit`` connections already (then nothing is counted). A channel with no IP address (a Unix
    /// socket) is admitted and not counted.
    public func admit(_ channel: any Channel) -> Admission {
        guard let address = channel.remoteAddress.flatMap(Self.key) else { return .admitted }
        let admission = admit(address)
        if admission == .admitted { channel.closeFuture.whenComplete { _ in self.release(address) } }
        return admission
    }

    /// The address a peer is counted under: its IP address, an IPv4-mapped IPv6 one as IPv4.
    static func key(_ address: SocketAddress) -> String? {
        guard let ip = address.ipAddress else { return nil }
        if ip.hasPrefix("::ffff:"), ip.contains(".") { return String(ip.dropFirst(7)) }
        return ip
    }

    /// Why a connection from `address` was refused, for the log.
    public func reason(for address: SocketAddress?) -> String {
        let who = address.flatMap(Self.key) ?? "its address"
        return "\(who) holds \(limit) connection\(limit == 1 ? "" : "s") already (the limit per address); "
            + "more from it are refused without a line each until one of them closes"
    }
}

/// A connection refused as soon as it is accepted: its pipeline is this handler only, which closes
/// it without reading, counts it (``ListenerLog/onClose``) and, given a reason, logs it
/// (``ListenerLog/closed(listener:peer:reason:)``).
public final class ConnectionRefusal: ChannelInboundHandler {
    public typealias InboundIn = ByteBuffer

    let listener: String
    let reason: String?
    let log: ListenerLog

    /// Refuses for `listener`, with `reason` logged, or only counted when it is `nil`.
    public init(listener: String, reason: String?, log: ListenerLog) {
        self.listener = listener
        self.reason = reason
        self.log = log
    }

    /// The refusal of a connection `limit` did not admit; `nil` when it did.
    public static func of(
        _ channel: any Channel, limit: PeerConnectionLimit?, listener: String, log: ListenerLog
    ) -> ConnectionRefusal? {
        guard let limit, case .refused(let first) = limit.admit(channel) else { return nil }
        return ConnectionRefusal(
            listener: listener, reason: first ? limit.reason(for: channel.remoteAddress) : nil, log: log)
    }

    public func channelActive(context: ChannelHandlerContext) {
        if let reason {
            log.closed(listener: listener, peer: context.channel.remoteAddress, reason: reason)
        } else {
            log.onClose?(listener)
        }
        context.close(promise: nil)
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}
