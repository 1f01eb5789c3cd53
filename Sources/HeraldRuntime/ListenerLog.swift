import Logging
import NIOCore

/// Where listeners say why they closed a connection they did not like (a missed deadline, bytes
/// that are no protocol spoken there): a `notice` line naming the listener, the peer and the
/// reason, and an optional count for metrics.
public struct ListenerLog: Sendable {
    /// The logger the lines go to.
    public var logger: Logger
    /// Called with the listener's name for every connection closed this way (metrics).
    public var onClose: (@Sendable (_ listener: String) -> Void)?

    /// A log over `logger`.
    public init(logger: Logger, onClose: (@Sendable (_ listener: String) -> Void)? = nil) {
        self.logger = logger
        self.onClose = onClose
    }

    /// Logs that a connection of `listener` from `peer` was closed, and why.
    public func closed(listener: String, peer: SocketAddress?, reason: String) {
        logger.notice(
            "connection closed",
            metadata: [
                "listener": "\(listener)",
                "peer": "\(peer.map { "\($0)" } ?? "?")",
                "reason": "\(reason)",
            ])
        onClose?(listener)
    }
}
