import Crypto
import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import NIOCore

// What the admin API reads and answers (docs/admin-api.md).
extension AdminAPI {
    struct TeamBody: Codable { var id: String?; var name: String?; var suspended: Bool? }
    struct KeyBody: Codable {
        var teamID: String
        var keyID: String?
        var publicKey: String?
        var topics: [String]?
        var environment: APNsEnvironment?
    }
    struct KeyView: Codable, ResponseEncodable {
        var keyID: String
        var teamID: String
        var topics: [String]?
        var environment: APNsEnvironment?
        var revoked: Bool
        var publicKey: String
        var privateKey: String?
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
    struct AppBody: Codable { var bundleID: String; var teamID: String; var broadcast: Bool? }
    struct CertificateBody: Codable { var environments: [APNsEnvironment]?; var topics: [String]?; var days: Int? }
    struct CertificateView: Codable, ResponseEncodable { var certificate: String; var privateKey: String }
    struct DeviceBody: Codable { var id: String? }
    struct DeviceView: Codable, ResponseEncodable {
        var id: String
        var generation: Int
        var createdAt: Date
        var resetAt: Date?
        var deletedAt: Date?
        /// Whether its link is open: to this node, or on a cluster to any node.
        var online: Bool
        /// On a cluster, the node that holds its link.
        var node: String?
        /// When its link last connected or closed (since the gateway started); `nil` if not since.
        var lastSeen: Date?
        /// Pushes waiting for it in the offline store.
        var stored: Int
        var apps: [RegistrationView]
    }
    struct RegistrationBody: Codable { var bundleID: String; var environment: APNsEnvironment? }
    struct RegistrationView: Codable, ResponseEncodable {
        var token: String
        var deviceID: String
        var bundleID: String
        var environment: APNsEnvironment
        var registeredAt: Date
        var invalidatedAt: Date?
        /// A Live Activity's token or a push-to-start token (docs/live-activities.md); absent for
        /// the app's own.
        var scope: TokenScope?
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
