import Crypto
import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import NIOCore

// What the admin API reads and answers (docs/admin-api.md).
extension AdminAPI {
    /// `POST /teams`, `PUT /teams/{id}`: a team's fields (a client sends what it sets).
    public struct TeamBody: Codable, Sendable {
        public var id: String?
        public var name: String?
        public var suspended: Bool?
        /// Creates a body.
        public init(id: String? = nil, name: String? = nil, suspended: Bool? = nil) {
            self.id = id
            self.name = name
            self.suspended = suspended
        }
    }
    /// `POST /keys`: a key to make (no `publicKey`: the answer has its `privateKey`) or to register.
    public struct KeyBody: Codable, Sendable {
        public var teamID: String
        public var keyID: String?
        public var publicKey: String?
        public var topics: [String]?
        public var environment: APNsEnvironment?
        /// Creates a body.
        public init(
            teamID: String, keyID: String? = nil, publicKey: String? = nil, topics: [String]? = nil,
            environment: APNsEnvironment? = nil
        ) {
            self.teamID = teamID
            self.keyID = keyID
            self.publicKey = publicKey
            self.topics = topics
            self.environment = environment
        }
    }
    /// A provider key as `/keys` lists it; a made key's answer has its `privateKey` (PEM), once.
    public struct KeyView: Codable, Sendable, ResponseEncodable {
        public var keyID: String
        public var teamID: String
        public var topics: [String]?
        public var environment: APNsEnvironment?
        public var revoked: Bool
        public var publicKey: String
        public var privateKey: String?
        init(_ k: ProviderKey, privateKey: String? = nil) {
            keyID = k.id
            teamID = k.teamID
            topics = k.topics
            environment = k.environment
            revoked = k.revoked
            publicKey = k.signingKey?.pemRepresentation ?? ""
            self.privateKey = privateKey
        }
    }
    /// `POST /apps`: an app of a team.
    public struct AppBody: Codable, Sendable {
        public var bundleID: String
        public var teamID: String
        public var broadcast: Bool?
        /// Creates a body.
        public init(bundleID: String, teamID: String, broadcast: Bool? = nil) {
            self.bundleID = bundleID
            self.teamID = teamID
            self.broadcast = broadcast
        }
    }
    /// `POST /apps/{bundleID}/certificates`: what the app certificate covers.
    public struct CertificateBody: Codable, Sendable {
        public var environments: [APNsEnvironment]?
        public var topics: [String]?
        public var days: Int?
        /// Creates a body.
        public init(environments: [APNsEnvironment]? = nil, topics: [String]? = nil, days: Int? = nil) {
            self.environments = environments
            self.topics = topics
            self.days = days
        }
    }
    /// An issued app certificate and its private key (PEM).
    public struct CertificateView: Codable, Sendable, ResponseEncodable {
        public var certificate: String
        public var privateKey: String
    }
    struct DeviceBody: Codable { var id: String? }
    /// A device as `/devices` lists it, with its apps' tokens.
    public struct DeviceView: Codable, Sendable, ResponseEncodable {
        public var id: String
        public var generation: Int
        public var createdAt: Date
        public var resetAt: Date?
        public var deletedAt: Date?
        /// Whether its link is open: to this node, or on a cluster to any node.
        public var online: Bool
        /// On a cluster, the node that holds its link.
        public var node: String?
        /// When its link last connected or closed (since the gateway started); `nil` if not since.
        public var lastSeen: Date?
        /// Pushes waiting for it in the offline store.
        public var stored: Int
        public var apps: [RegistrationView]
    }
    struct RegistrationBody: Codable { var bundleID: String; var environment: APNsEnvironment? }
    /// A device's token for one app.
    public struct RegistrationView: Codable, Sendable, ResponseEncodable {
        public var token: String
        public var deviceID: String
        public var bundleID: String
        public var environment: APNsEnvironment
        public var registeredAt: Date
        public var invalidatedAt: Date?
        /// A Live Activity's token or a push-to-start token (docs/live-activities.md); absent for
        /// the app's own.
        public var scope: TokenScope?
        init(_ r: Registration) {
            scope = r.scope
            token = r.token.hex
            deviceID = r.deviceID
            bundleID = r.bundleID
            environment = r.environment
            registeredAt = r.registeredAt
            invalidatedAt = r.invalidatedAt
        }
    }
    struct StoredView: Codable, ResponseEncodable {
        var apnsID: String
        var topic: String
        var pushType: PushType
        var priority: Int
        var collapseID: String?
        var expiresAt: Date
        var receivedAt: Date
        var payload: String
    }

    struct NodeView: Codable, ResponseEncodable {
        var id: String
        var address: String
        var startedAt: Date
        var heartbeatAt: Date
        var stoppedAt: Date?
        var alive: Bool
        var devices: Int
        /// Whether this is the node that answered.
        var this: Bool
    }

    struct FeedbackView: Codable, ResponseEncodable {
        var token: String
        var removedAt: Date
        init(_ f: FeedbackEntry) {
            token = f.token.hex
            removedAt = f.removedAt
        }
    }
}
