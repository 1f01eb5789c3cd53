import Foundation
import HeraldCore

/// A notification kept for a device that is offline (or not yet acknowledged).
public struct StoredPush: Sendable, Codable, Equatable {
    /// `apns-id`.
    public var apnsID: String
    /// `apns-unique-id`, development only.
    public var uniqueID: String?
    /// The device it is for.
    public var deviceID: String
    /// The token it was sent to.
    public var token: DeviceToken
    /// The environment of that token.
    public var environment: APNsEnvironment
    /// `apns-topic` as sent.
    public var topic: String
    /// The push type.
    public var pushType: PushType
    /// The priority.
    public var priority: PushPriority
    /// `apns-collapse-id`.
    public var collapseID: String?
    /// `apns-expiration` as the provider sent it (UNIX seconds), if it did.
    public var expiration: Int64?
    /// When the gateway gives up on it (`apns-expiration`, capped at 30 days).
    public var expiresAt: Date
    /// When the gateway accepted it.
    public var receivedAt: Date
    /// The payload bytes, unchanged.
    public var payload: Data
    /// `content-available: 1`.
    public var contentAvailable: Bool

    /// Creates a stored push.
    public init(
        apnsID: String, uniqueID: String?, deviceID: String, token: DeviceToken, environment: APNsEnvironment,
        topic: String, pushType: PushType, priority: PushPriority, collapseID: String?, expiration: Int64? = nil,
        expiresAt: Date, receivedAt: Date, payload: Data, contentAvailable: Bool
    ) {
        self.apnsID = apnsID
        self.uniqueID = uniqueID
        self.deviceID = deviceID
        self.token = token
        self.environment = environment
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.collapseID = collapseID
        self.expiration = expiration
        self.expiresAt = expiresAt
        self.receivedAt = receivedAt
        self.payload = payload
        self.contentAvailable = contentAvailable
    }
}
