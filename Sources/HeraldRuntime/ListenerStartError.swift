/// A listener could not start (most often: the port is in use), in the gateway or the device.
public struct ListenerStartError: Error, CustomStringConvertible, Sendable {
    /// Which listener.
    public var listener: String
    /// The address it tried.
    public var address: String
    /// The underlying error.
    public var reason: String

    /// Names the listener, the address and the reason.
    public init(listener: String, address: String, reason: String) {
        self.listener = listener
        self.address = address
        self.reason = reason
    }

    /// One line naming all three.
    public var description: String { "\(listener) could not listen on \(address): \(reason)" }
}
