import Crypto
import Foundation
import HeraldCore

/// How one node of a cluster hands a push it accepted to the node that holds the device's link
/// (docs/cluster.md): an HTTP/2 request to that node's provider API at ``pathPrefix`` plus the
/// device token, with the cluster's credential in `authorization` and what the accepting node
/// decided in the usual `apns-*` headers and in ``header``.
public enum ClusterForwarding {
    /// The path of a forwarded push, followed by the device token in hex.
    public static let pathPrefix = "/herald/forward/"
    /// The header with what is not an APNs header: `<environment> <accepted at, ms since 1970>
    /// <apns-unique-id or -> <binary identifier or ->`.
    public static let header = "herald-forward"

    /// The credential every node of a cluster holds: an HMAC of a fixed label under the cluster's
    /// token secret (shared through the database), so that only a node can forward.
    public struct Credential: Sendable {
        /// The `authorization` header's value.
        public let authorization: String

        /// The credential of the cluster whose token secret is `secret`.
        public init(tokenSecret secret: [UInt8]) {
            let mac = HMAC<SHA256>.authenticationCode(
                for: Array("herald cluster forwarding v1".utf8), using: SymmetricKey(data: secret))
            authorization = "herald-cluster " + DeviceToken(bytes: Array(mac)).hex
        }

        /// Whether `given` is this credential (compared in constant time).
        public func accepts(_ given: String?) -> Bool {
            guard let given else { return false }
            let a = Array(given.utf8)
            let b = Array(authorization.utf8)
            guard a.count == b.count else { return false }
            var difference: UInt8 = 0
            for i in 0..<a.count { difference |= a[i] ^ b[i] }
            return difference == 0
        }
    }

    /// What ``header`` carries.
    public struct Fields: Sendable, Equatable {
        /// The environment of the registration the push is for.
        public var environment: APNsEnvironment
        /// When the accepting node took it.
        public var acceptedAt: Date
        /// Its `apns-unique-id`, if it has one.
        public var uniqueID: String?
        /// The provider's identifier, for a push from the legacy binary interface.
        public var binaryIdentifier: UInt32?

        /// The fields as given.
        public init(environment: APNsEnvironment, acceptedAt: Date, uniqueID: String?, binaryIdentifier: UInt32?) {
            self.environment = environment
            self.acceptedAt = acceptedAt
            self.uniqueID = uniqueID
            self.binaryIdentifier = binaryIdentifier
        }

        /// The header's value.
        public var text: String {
            let ms = Int64((acceptedAt.timeIntervalSince1970 * 1000).rounded(.down))
            return "\(environment.rawValue) \(ms) \(uniqueID ?? "-") \(binaryIdentifier.map(String.init) ?? "-")"
        }

        /// Reads the header; `nil` when it is not one.
        public init?(text: String) {
            let parts = text.split(separator: " ")
            // A time a node could have written (UNIX milliseconds, 1970 to about the year 33,000):
            // the delivery log turns it back into milliseconds, which a larger one would overflow.
            guard parts.count == 4, let environment = APNsEnvironment(rawValue: String(parts[0])),
                let ms = Int64(parts[1]), (0...1_000_000_000_000_000).contains(ms)
            else { return nil }
            self.environment = environment
            acceptedAt = Date(timeIntervalSince1970: Double(ms) / 1000)
            uniqueID = parts[2] == "-" ? nil : String(parts[2])
            if parts[3] == "-" {
                binaryIdentifier = nil
            } else {
                guard let id = UInt32(parts[3]) else { return nil }
                binaryIdentifier = id
            }
        }
    }
}
