import Crypto
import Foundation
import HeraldCore
import Synchronization

/// A provider key: the `.p8` file Apple (or `herald keys new`) hands out, with the ids a token
/// names (docs/provider-api.md).
public struct APNsSigningKey: Sendable {
    /// The key id (`kid`), 10 characters.
    public var keyID: String
    /// The team id (`iss`), 10 characters.
    public var teamID: String
    /// The private key.
    public var privateKey: P256.Signing.PrivateKey

    /// Wraps a key.
    public init(keyID: String, teamID: String, privateKey: P256.Signing.PrivateKey) {
        self.keyID = keyID
        self.teamID = teamID
        self.privateKey = privateKey
    }

    /// Reads a `.p8` key (PEM, PKCS#8, P-256).
    public init(p8 pem: String, keyID: String, teamID: String) throws {
        self.init(keyID: keyID, teamID: teamID, privateKey: try P256.Signing.PrivateKey(pemRepresentation: pem))
    }

    /// Reads a `.p8` file.
    public init(p8File path: String, keyID: String, teamID: String) throws {
        try self.init(p8: try String(contentsOfFile: path, encoding: .utf8), keyID: keyID, teamID: teamID)
    }

    /// A provider authentication token: ES256 JWT, `{"alg":"ES256","kid":…}` and
    /// `{"iss":…,"iat":…}`, signature in the raw r‖s form.
    public func token(issuedAt: Date) throws -> String {
        try ProviderTokenSigner.token(keyID: keyID, teamID: teamID, privateKey: privateKey, issuedAt: issuedAt)
    }
}

/// Keeps one provider token and renews it as Apple asks: not more often than every 20 minutes
/// (APNs answers `TooManyProviderTokenUpdates`) and before it is an hour old (APNs answers
/// `ExpiredProviderToken`).
public final class APNsTokenCache: Sendable {
    /// The earliest a token may be replaced.
    public static let minimumAge: TimeInterval = 20 * 60
    /// APNs refuses tokens older than this.
    public static let maximumAge: TimeInterval = 60 * 60

    /// The key that signs.
    public let key: APNsSigningKey
    /// How old a token gets before it is replaced (clamped to 20…59 minutes).
    public let refreshAge: TimeInterval
    private let now: @Sendable () -> Date
    /// The token, when it was signed, and the `authorization` field's value that carries it.
    private let current = Mutex<(token: String, issuedAt: Date, authorization: String)?>(nil)

    /// A cache for `key`; tokens are replaced once `refreshAge` old (50 minutes by default).
    /// `now` is the clock (injected by tests).
    public init(
        key: APNsSigningKey, refreshAge: TimeInterval = 50 * 60, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.key = key
        self.refreshAge = min(max(refreshAge, Self.minimumAge), Self.maximumAge - 60)
        self.now = now
    }

    /// The token to send now: the current one, or a new one if it has reached `refreshAge`.
    /// Signing happens under the lock, so concurrent first requests share one token (ES256
    /// signatures differ every time, and APNs refuses a second token on a connection within 20
    /// minutes with `TooManyProviderTokenUpdates`).
    public func token() throws -> String { try entry().token }

    /// ``token()`` as the `authorization` field's value, `bearer <token>`, made once per token
    /// rather than once per request.
    func authorization() throws -> String { try entry().authorization }

    private func entry() throws -> (token: String, issuedAt: Date, authorization: String) {
        let key = self.key
        let refreshAge = self.refreshAge
        return try current.withLock { current in
            // Read under the lock: a time read before it could be older than the token another
            // caller signed meanwhile, look like a clock gone back, and sign a second token.
            let now = self.now()
            if let entry = current, now.timeIntervalSince(entry.issuedAt) < refreshAge, now >= entry.issuedAt {
                return entry
            }
            let token = try key.token(issuedAt: now)
            let entry = (token: token, issuedAt: now, authorization: "bearer " + token)
            current = entry
            return entry
        }
    }

    /// Drops `token` (APNs said it expired, for instance after the clock jumped), so the next
    /// ``token()`` signs a new one. A token replaced meanwhile is left alone.
    public func discard(_ token: String) {
        current.withLock { if $0?.token == token { $0 = nil } }
    }
}
