/// The code of a device-link `error` message: every code the gateway and the device's link client
/// use, defined once (docs/device-link.md lists them). On the wire it is the raw string.
public struct LinkErrorCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    /// The code as sent.
    public let rawValue: String

    /// A code from its text (any text: a newer peer may send codes this one does not know).
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A code from a literal.
    public init(stringLiteral value: String) { self.rawValue = value }

    /// Decodes the raw string.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    /// Encodes the raw string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// The raw string.
    public var description: String { rawValue }

    // Refusals of a connection (request nil), sent by the gateway before it closes the link.

    /// The first message was not a `hello` signed over the challenge.
    public static let notAuthenticated: LinkErrorCode = "NotAuthenticated"
    /// The device id is not known and no public key came with it.
    public static let unknownDevice: LinkErrorCode = "UnknownDevice"
    /// The public key is not a P-256 key in X9.63 form.
    public static let badPublicKey: LinkErrorCode = "BadPublicKey"
    /// The signature does not verify with the device's key.
    public static let badSignature: LinkErrorCode = "BadSignature"
    /// The device id is registered with another key.
    public static let deviceKeyMismatch: LinkErrorCode = "DeviceKeyMismatch"
    /// An administrator deleted the device.
    public static let deviceDeleted: LinkErrorCode = "DeviceDeleted"
    /// The device connected again; this older connection is closed.
    public static let replaced: LinkErrorCode = "Replaced"
    /// The resumption ticket is not accepted (expired, from another gateway, for an older
    /// generation, or its proof is wrong). The link stays open: the device signs the challenge
    /// in a `hello` instead.
    public static let ticketRefused: LinkErrorCode = "TicketRefused"

    // Answers to one request (or to a message that is no request).

    /// The message cannot be read, or a device does not send it.
    public static let badMessage: LinkErrorCode = "BadMessage"
    /// What the request names does not exist.
    public static let notFound: LinkErrorCode = "NotFound"
    /// The gateway refused the request (the message says why).
    public static let refused: LinkErrorCode = "Refused"
    /// The gateway failed.
    public static let `internal`: LinkErrorCode = "Internal"

    // The device's link client, for failures that never reached the gateway.

    /// The link URL is not `ws://host:port/device/v1` or `wss://…`.
    public static let badURL: LinkErrorCode = "BadURL"
    /// The server did not upgrade to WebSocket.
    public static let notUpgraded: LinkErrorCode = "NotUpgraded"
    /// The link closed.
    public static let closed: LinkErrorCode = "Closed"
    /// The gateway answered with a message that does not answer the request.
    public static let unexpected: LinkErrorCode = "Unexpected"
    /// The device is not connected.
    public static let offline: LinkErrorCode = "Offline"
}
