import Foundation
import HeraldCore
import NIOCore

/// A push the provider API accepted: what the router delivers or stores.
public struct AcceptedPush: Sendable {
    /// `apns-id`.
    public var apnsID: String
    /// `apns-unique-id` (development only).
    public var uniqueID: String?
    /// The target registration.
    public var registration: Registration
    /// The `apns-topic` as sent (with its push-type suffix).
    public var topic: String
    /// The push type (given or inferred).
    public var pushType: PushType
    /// The priority (given or the default for the push type).
    public var priority: PushPriority
    /// `apns-expiration` in seconds since 1970: `0` = deliver now or never, `nil` = the default policy.
    public var expiration: Int64?
    /// `apns-collapse-id`.
    public var collapseID: String?
    /// The payload, byte for byte as the provider sent it.
    public var payload: ByteBuffer
    /// Whether the payload carries `content-available: 1` (a background wake-up).
    public var contentAvailable: Bool
    /// When the gateway accepted it.
    public var receivedAt: Date
    /// The provider's identifier, for a notification from the legacy binary interface.
    public var binaryIdentifier: UInt32? = nil
    /// Whether another node of the cluster accepted it and forwarded it here: it goes to a device
    /// linked here or to the store, never on to a third node.
    public var forwarded = false
    /// What Apple would do quietly with it (``PushWarning``): in its delivery log and, on its 200,
    /// the `herald-warnings` header.
    public var warnings = PushWarnings()
    /// What a fault rule does to the connection once the push is answered.
    public var connectionFault: ConnectionFaultAction?
}
