/// The state of the link to the push service.
public enum GatewayLinkState: String, Sendable, Codable {
    /// No push service configured.
    case none
    /// Connecting, or waiting to reconnect.
    case disconnected
    /// Connected and authenticated.
    case connected
}
