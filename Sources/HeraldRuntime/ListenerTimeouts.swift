import NIOCore

/// The two deadlines every Herald listener puts on a connection, so that none waits forever on a
/// silent peer, a half-sent preface or a header sent a byte at a time.
public struct ListenerTimeouts: Sendable, Equatable {
    /// From accepting the connection until its first complete request: the TLS handshake, the
    /// protocol, and the first request's head (HTTP/1.1), the client's SETTINGS after the preface
    /// (HTTP/2), or the signed `hello` (device link). Also the time a started HTTP/1.1 request
    /// has to arrive whole. Ten seconds by default: real clients need milliseconds.
    public var firstBytes: Duration
    /// How long a connection may stay quiet (nothing from the peer, nothing in flight) before it is
    /// closed; `nil` never closes it.
    public var idle: Duration?

    /// Deadlines with the given idle time (`nil`: never) and a first-bytes deadline of 10 s.
    public init(firstBytes: Duration = .seconds(10), idle: Duration?) {
        self.firstBytes = firstBytes
        self.idle = idle
    }
}

/// Sent toward the socket (`triggerUserOutboundEvent`) by whatever handler sees a connection's first
/// complete request: ``FirstBytesDeadline`` stops its timer and leaves the pipeline.
public struct ConnectionEstablished: Sendable {
    /// The event.
    public init() {}
}

extension TimeAmount {
    /// `10 s`, `0.5 s`: the amount in seconds as a person writes it.
    public var secondsText: String {
        let seconds = Double(nanoseconds) / 1e9
        return (seconds == seconds.rounded() ? String(nanoseconds / 1_000_000_000) : String(seconds)) + " s"
    }
}
