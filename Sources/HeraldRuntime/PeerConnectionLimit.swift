import NIOCore
import Synchronization

/// At most so many open connections from one address on a listener (`herald gateway
/// --max-connections-per-address`, `--link-max-connections-per-address`; docs/listeners.md).
///
/// Every connection is bounded by its deadlines, but without a count one peer may open as many as
/// the gateway has file descriptors, and so keep everyone else out. A connection over the limit is
/// accepted and closed at once (``ConnectionRefusal``); the others from that address go on. An
/// address is its IP address, without the port (an IPv4 address mapped into IPv6 counts as the IPv4
/// address), or for IPv6 the /64 prefix the address is in: the connections of a network behind one
/// NAT, or in one IPv6 subnet, count together.
public final class PeerConnectionLimit: Sendable {
    /// What ``admit(_:)-(String)`` decided.
    public enum Admission: Equatable, Sendable {
        /// Counted until it is released.
        case admitted
        /// Over the limit, not counted.
        case refused
    }

    struct Lines {
        var next = NIODeadline.uptimeNanoseconds(0)
        var unlogged = 0
    }

    /// How many connections one address may hold open.
    public let limit: Int
    /// At most one log line per this long (``refusalLine(for:at:)``).
    public let logInterval: TimeAmount
    private let open = Mutex<[String: Int]>([:])
    private let lines = Mutex(Lines())

    /// A limit of `limit` (more than 0) connections per address; refusals are logged at most once
    /// per `logInterval`.
    public init(limit: Int, logInterval: TimeAmount = .seconds(10)) {
        precondition(limit > 0, "a limit of at least one connection")
        self.limit = limit
        self.logInterval = logInterval
    }

    /// A limit of `limit` connections, or none for 0.
    public static func of(_ limit: Int) -> PeerConnectionLimit? { limit > 0 ? PeerConnectionLimit(limit: limit) : nil }

    /// Counts a connection from `address`, unless that address holds ``limit`` connections already.
    public func admit(_ address: String) -> Admission {
        open.withLock { open in
            let count = open[address, default: 0]
            guard count < limit else { return .refused }
            open[address] = count + 1
            return .admitted
        }
    }

    /// A connection from `address` that was admitted has closed.
    public func release(_ address: String) {
        open.withLock { open in
            guard let count = open[address] else { return }
            open[address] = count > 1 ? count - 1 : nil
        }
    }

    /// How many connections `address` holds open.
    public func count(of address: String) -> Int { open.withLock { $0[address, default: 0] } }

    /// Counts `channel` against its peer's address until it closes, unless that address holds
    /// ``limit`` connections already (then nothing is counted). A channel with no IP address (a Unix
    /// socket) is admitted and not counted.
    public func admit(_ channel: any Channel) -> Admission {
        guard let address = channel.remoteAddress.flatMap(Self.key) else { return .admitted }
        let admission = admit(address)
        if admission == .admitted { channel.closeFuture.whenComplete { _ in self.release(address) } }
        return admission
    }

    /// The address a peer is counted under: its IPv4 address (an IPv4-mapped IPv6 one as IPv4), or
    /// the /64 prefix of its IPv6 address (`2001:db8:0:1::/64`). A network is given a whole /64 and
    /// its hosts pick their addresses in it at will (and change them, for privacy), so the prefix is
    /// what one IPv6 peer holds, as one address is for IPv4.
    static func key(_ address: SocketAddress) -> String? {
        guard case .v6(let v6) = address, let ip = address.ipAddress else { return address.ipAddress }
        if ip.hasPrefix("::ffff:"), ip.contains(".") { return String(ip.dropFirst(7)) }
        // The host part zeroed, written by the system as any address is (RFC 5952's form).
        var prefix = v6.address
        withUnsafeMutableBytes(of: &prefix.sin6_addr) { bytes in
            for index in 8..<16 { bytes[index] = 0 }
        }
        return SocketAddress(prefix, host: "").ipAddress.map { $0 + "/64" }
    }

    /// The log line for a connection from `address` refused at `now`, or `nil` when one was
    /// written less than ``logInterval`` ago (then this refusal is only counted, and the next line
    /// says how many went without one). Peers that connect in a loop cannot fill the log.
    public func refusalLine(for address: SocketAddress?, at now: NIODeadline) -> String? {
        let unlogged: Int? = lines.withLock { lines in
            guard now >= lines.next else {
                lines.unlogged += 1
                return nil
            }
            let unlogged = lines.unlogged
            lines = Lines(next: now + logInterval, unlogged: 0)
            return unlogged
        }
        guard let unlogged else { return nil }
        let who = address.flatMap(Self.key) ?? "its address"
        var line = "\(who) holds \(limit) connection\(limit == 1 ? "" : "s") already (the limit per address)"
        if unlogged > 0 {
            line += "; \(unlogged) more refused on this listener without a line since the last one"
        }
        return line
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
        guard let limit, limit.admit(channel) == .refused else { return nil }
        return ConnectionRefusal(
            listener: listener, reason: limit.refusalLine(for: channel.remoteAddress, at: channel.eventLoop.now),
            log: log)
    }

    /// For a listener's child channel initializer: when `limit` does not admit `channel`, its
    /// pipeline made of the refusal only (return it from the initializer); `nil` when it did.
    public static func pipeline(
        for channel: any Channel, limit: PeerConnectionLimit?, listener: String, log: ListenerLog
    ) -> EventLoopFuture<Void>? {
        guard let refusal = of(channel, limit: limit, listener: listener, log: log) else { return nil }
        return channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(refusal) }
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
