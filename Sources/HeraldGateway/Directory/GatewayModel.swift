import Crypto
import Foundation
import HeraldCore

/// A provider team (the `iss` of its tokens).
public struct Team: Sendable, Hashable, Codable {
    /// The 10-character team id.
    public var id: String
    /// A display name.
    public var name: String
    /// A suspended team's requests answer 403 `Forbidden`.
    public var suspended: Bool

    /// Creates a team.
    public init(id: String, name: String = "", suspended: Bool = false) {
        self.id = id
        self.name = name
        self.suspended = suspended
    }
}

/// A provider signing key: the public half of a `.p8` key, looked up by its key id.
public struct ProviderKey: Sendable, Codable, Equatable {
    /// The 10-character key id (`kid`).
    public var id: String
    /// The team the key belongs to.
    public var teamID: String
    /// The P-256 public key, X9.63 (uncompressed point) bytes.
    public var publicKey: Data
    /// The topics (bundle ids) the key may push to; `nil` = every app of the team.
    public var topics: [String]?
    /// The one environment the key may be used in; `nil` = both.
    public var environment: APNsEnvironment?
    /// A revoked key's tokens answer `InvalidProviderToken`.
    public var revoked: Bool

    /// Creates a key record.
    public init(
        id: String, teamID: String, publicKey: P256.Signing.PublicKey, topics: [String]? = nil,
        environment: APNsEnvironment? = nil, revoked: Bool = false
    ) {
        self.id = id
        self.teamID = teamID
        self.publicKey = publicKey.x963Representation
        self.topics = topics
        self.environment = environment
        self.revoked = revoked
    }

    /// The key as swift-crypto's type.
    public var signingKey: P256.Signing.PublicKey? { try? P256.Signing.PublicKey(x963Representation: publicKey) }
}

/// An app as the push service knows it: a bundle id owned by a team. Its topics are the bundle id
/// plus the push-type suffixes. (The device's `AppRecord` is another thing: all an installed app has.)
public struct TeamApp: Sendable, Codable, Equatable {
    /// The bundle id (the plain topic).
    public var bundleID: String
    /// The owning team.
    public var teamID: String
    /// Whether the app may use broadcast channels (Apple's Broadcast capability); on unless the
    /// admin API turns it off. Off, the channel and broadcast APIs answer `FeatureNotEnabled`.
    public var broadcast: Bool

    /// Creates a team app.
    public init(bundleID: String, teamID: String, broadcast: Bool = true) {
        self.bundleID = bundleID
        self.teamID = teamID
        self.broadcast = broadcast
    }

    enum CodingKeys: String, CodingKey { case bundleID, teamID, broadcast }

    /// Reads an app; one saved before `broadcast` existed has it on.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        bundleID = try c.decode(String.self, forKey: .bundleID)
        teamID = try c.decode(String.self, forKey: .teamID)
        broadcast = try c.decodeIfPresent(Bool.self, forKey: .broadcast) ?? true
    }
}

/// A device known to the gateway. It proves itself with the private half of `publicKey`.
public struct DeviceRecord: Sendable, Codable, Equatable {
    /// The device id.
    public var id: String
    /// The device's P-256 public key (X9.63), or empty for a device registered through the admin API.
    public var publicKey: Data
    /// Goes up on every reset; tokens of older generations answer 410 `Unregistered`.
    public var generation: Int
    /// When the device registered.
    public var createdAt: Date
    /// When the device was last reset, if ever.
    public var resetAt: Date?
    /// When an administrator deleted the device; its tokens answer `ExpiredToken`.
    public var deletedAt: Date?

    /// Creates a device record.
    public init(id: String, publicKey: Data, generation: Int = 1, createdAt: Date, resetAt: Date? = nil) {
        self.id = id
        self.publicKey = publicKey
        self.generation = generation
        self.createdAt = createdAt
        self.resetAt = resetAt
    }
}

/// One app registered on one device in one environment, and the token issued for it.
public struct Registration: Sendable, Codable, Equatable {
    /// The issued token.
    public var token: DeviceToken
    /// The device.
    public var deviceID: String
    /// The app's bundle id.
    public var bundleID: String
    /// The environment the token lives in.
    public var environment: APNsEnvironment
    /// The device generation the token was issued for.
    public var generation: Int
    /// When the app registered (or re-registered).
    public var registeredAt: Date
    /// Set when the token stopped being valid: the app was removed, the device was reset
    /// (`Unregistered`) or deleted (`ExpiredToken`).
    public var invalidatedAt: Date?
    /// Which 410 reason an invalidated token answers.
    public var invalidation: Invalidation?
    /// What the token is for beyond the app's own notifications (a Live Activity's token, a
    /// push-to-start token); `nil` for the app's token. Records written before it existed read `nil`.
    public var scope: TokenScope?

    /// Why a token stopped being valid.
    public enum Invalidation: String, Sendable, Codable {
        /// The app was removed from the device: 410 `Unregistered`, and the token goes on the feedback list.
        case appRemoved
        /// The device was reset: 410 `Unregistered`.
        case deviceReset
        /// The device was deleted by an administrator: 410 `ExpiredToken`.
        case deviceDeleted

        /// The reason a push to such a token answers.
        public var reason: APNsReason { self == .deviceDeleted ? .expiredToken : .unregistered }
    }

    /// Creates a registration.
    public init(
        token: DeviceToken, deviceID: String, bundleID: String, environment: APNsEnvironment, generation: Int,
        registeredAt: Date, invalidatedAt: Date? = nil, invalidation: Invalidation? = nil, scope: TokenScope? = nil
    ) {
        self.scope = scope
        self.token = token
        self.deviceID = deviceID
        self.bundleID = bundleID
        self.environment = environment
        self.generation = generation
        self.registeredAt = registeredAt
        self.invalidatedAt = invalidatedAt
        self.invalidation = invalidation
    }
}
