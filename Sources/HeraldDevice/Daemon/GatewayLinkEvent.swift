import Crypto
import Foundation
import HeraldCore
import Synchronization

/// Who a device is to the gateway: its id and the private half of its key. The gateway only ever
/// sees the public half (docs/device-link.md).
public struct DeviceIdentity: Sendable {
    /// The id; `nil` until the gateway has given one on first contact.
    public var deviceID: String?
    /// The device's key.
    public let privateKey: P256.Signing.PrivateKey
    /// The resumption ticket from the last `welcome`, shared by every copy of this identity and
    /// kept in memory only: the next connection presents it instead of a signature.
    public let resumption = LinkResumption()

    /// A new identity with a fresh key.
    public init(deviceID: String? = nil, privateKey: P256.Signing.PrivateKey = P256.Signing.PrivateKey()) {
        self.deviceID = deviceID
        self.privateKey = privateKey
    }

    struct File: Codable {
        var deviceID: String?
        var privateKey: String
    }

    /// Reads an identity file written by ``save(to:)``, or creates one (with a fresh key) if there
    /// is none.
    public static func loadOrCreate(at path: String, deviceID: String? = nil) throws -> DeviceIdentity {
        if FileManager.default.fileExists(atPath: path) {
            let file = try JSONDecoder().decode(File.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
            return DeviceIdentity(
                deviceID: file.deviceID, privateKey: try P256.Signing.PrivateKey(pemRepresentation: file.privateKey))
        }
        let identity = DeviceIdentity(deviceID: deviceID)
        try identity.save(to: path)
        return identity
    }

    /// Writes the identity (readable by its owner only).
    public func save(to path: String) throws {
        let data = try JSONEncoder().encode(File(deviceID: deviceID, privateKey: privateKey.pemRepresentation))
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: url, options: .atomic)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }
}

/// Where a device keeps its resumption ticket between connections (docs/device-link.md,
/// "Resuming"): the ticket of the last `welcome`, until the next `welcome` replaces it, the gateway
/// refuses it, it expires or the device is reset. A connection that presented it and died before its
/// `welcome` leaves it held, so the next attempt presents it again.
public final class LinkResumption: Sendable {
    private let held = Mutex<LinkTicket?>(nil)

    /// An empty holder.
    public init() {}

    /// The ticket held, if any.
    public var ticket: LinkTicket? { held.withLock { $0 } }

    /// The ticket to present on a connection made at `now`: the one held, unless it has expired
    /// (then it is forgotten).
    public func current(now: Date) -> LinkTicket? {
        held.withLock { held in
            guard let ticket = held else { return nil }
            guard Int64(now.timeIntervalSince1970) < ticket.expires else {
                held = nil
                return nil
            }
            return ticket
        }
    }

    /// Keeps the ticket a `welcome` brought (or forgets the held one, given `nil`: the gateway
    /// refused it, or the device was reset).
    public func keep(_ ticket: LinkTicket?) { held.withLock { $0 = ticket } }
}

/// Something that happened on a device link.
public enum GatewayLinkEvent: Sendable, Equatable {
    /// Notifications that arrived together, in the order they arrived (never one whose `apns-id`
    /// was already seen on this client). One event per read rather than per notification: under
    /// load a read carries many, and each event wakes the consumer.
    case pushes([LinkPush])
    /// An update broadcast on a channel an app subscribed to (never one whose `apns-unique-id`
    /// was already seen on this client).
    case broadcast(LinkBroadcast)
    /// The device was reset: every token it had is void.
    case reset(generation: Int)
    /// The gateway is stopping and closes the link next: connect again after a random wait of up
    /// to `reconnectWithin`, to another node when there is one (docs/device-link.md, "Draining").
    case goAway(reconnectWithin: Duration)
    /// The link closed; `reason` says why when the gateway said.
    case closed(reason: String?)
}

/// A request the gateway refused.
public struct GatewayLinkFailure: Error, Equatable, CustomStringConvertible {
    /// The gateway's code (`BadSignature`, `UnknownDevice`, `NotFound`, …).
    public var code: LinkErrorCode
    /// Its message.
    public var message: String
    /// `code: message`.
    public var description: String { "\(code): \(message)" }
    /// Creates a failure.
    public init(code: LinkErrorCode, message: String) {
        self.code = code
        self.message = message
    }
}
