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
    /// When the registration it was sent to was made (`nil` in records from before it was kept).
    /// Once that registration ends (the app removed, the device reset) the push is void, even when
    /// the app is registered again, with the same token, before the device comes back.
    public var registeredAt: Date?

    /// Creates a stored push.
    public init(
        apnsID: String, uniqueID: String?, deviceID: String, token: DeviceToken, environment: APNsEnvironment,
        topic: String, pushType: PushType, priority: PushPriority, collapseID: String?, expiration: Int64? = nil,
        expiresAt: Date, receivedAt: Date, payload: Data, contentAvailable: Bool, registeredAt: Date? = nil
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
        self.registeredAt = registeredAt
    }
}

extension StoredPush {
    /// Whether `registration` (its token's registration now) is still the one the push was sent
    /// to: live, and not made since it was sent (the app removed and registered again, which gives
    /// the same token). Without that, a push stored before a removal would reach the app installed
    /// again whenever the device registered before its backlog was read.
    func isFor(_ registration: Registration?) -> Bool {
        guard let registration, registration.invalidatedAt == nil else { return false }
        guard let registeredAt else { return true }
        // Records keep milliseconds: only a registration made later than that is a new one.
        return registration.registeredAt.timeIntervalSince(registeredAt) < 0.001
    }
}
