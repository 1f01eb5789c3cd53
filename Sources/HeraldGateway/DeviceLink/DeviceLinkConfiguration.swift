/// How the device link listener runs: acknowledgement timeout, QoS, and its deadlines.
public struct DeviceLinkConfiguration: Sendable {
    /// How long the provider waits for a device's acknowledgement before the push is stored.
    public var acknowledgementTimeout: Duration = .seconds(2)
    /// Batching and background budget.
    public var qos = LinkQoS.Configuration()
    /// Liveness of an authenticated link: after half of this with nothing from the device the
    /// gateway sends a WebSocket ping; after all of it the link is closed (a device that is gone
    /// without a word, a half-open connection). `nil`: never. Ten minutes by default.
    public var idleTimeout: Duration? = .seconds(600)
    /// From accepting a connection until the device's signed `hello` has arrived (TLS, the
    /// WebSocket upgrade, the hello). Ten seconds by default.
    public var firstBytesTimeout: Duration = .seconds(10)
    /// From the device's signed `hello` until the gateway has checked it and registered the device
    /// (the store's part for a new device). A link still being checked after this is refused with
    /// `Internal` and closed, so a store that stalls does not hold connections without end; the
    /// device connects again with its backoff. Thirty seconds by default, as long as the device
    /// itself waits for its `welcome`.
    public var authenticationTimeout: Duration = .seconds(30)
    /// How long a resumption ticket (given with every `welcome`) is accepted in place of a
    /// signature (docs/device-link.md, "Resuming"); `nil`: no tickets, every device signs. A week
    /// by default.
    public var ticketLifetime: Duration? = .seconds(7 * 86400)
    /// When the gateway stops, each authenticated device is told (`goaway`) to connect again after a
    /// random wait of up to this long, to another node if it knows one, before its link is closed:
    /// the devices of a stopping node come back spread over this window instead of all at once.
    /// Zero: they are told to come back at once. Ten seconds by default.
    public var drainWindow: Duration = .seconds(10)
    /// How many connections one address (IPv4, or an IPv6 /64 prefix) may hold open on the device
    /// link; a connection over it is closed at once, counted, and logged at most once per 10 s
    /// (``PeerConnectionLimit``). 0, the default: no limit (many devices may share one address
    /// behind a NAT, or one prefix in an IPv6 network).
    public var maxConnectionsPerAddress = 0

    /// The defaults.
    public init() {}
}
