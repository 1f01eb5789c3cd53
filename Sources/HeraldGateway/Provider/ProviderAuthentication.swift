import Foundation
import HeraldCore

/// What a TLS client certificate from the gateway's CA grants (docs/provider-api.md): one app's
/// topics in the environments the certificate names.
public struct CertificateGrant: Sendable, Equatable {
    /// The `UID` in the subject: the app's bundle id.
    public var bundleID: String
    /// The topics the certificate lists (the bundle id and its suffixed topics).
    public var topics: [String]
    /// The environments the certificate may be used in.
    public var environments: Set<APNsEnvironment>
    /// Set when the certificate cannot be used at all (not issued by the gateway's CA, expired,
    /// no UID): every request answers 403 `BadCertificate`. The text says why, for the log.
    public var problem: String?

    /// Creates a grant.
    public init(bundleID: String, topics: [String], environments: Set<APNsEnvironment>, problem: String? = nil) {
        self.bundleID = bundleID
        self.topics = topics
        self.environments = environments
        self.problem = problem
    }

    /// Whether the certificate covers `topic`: the listed topics, or the bundle id and its
    /// push-type suffixes when the certificate lists none.
    public func covers(_ topic: String) -> Bool {
        if topics.isEmpty { return topic == bundleID || topic.hasPrefix(bundleID + ".") }
        return topics.contains(topic)
    }

    /// A single-topic certificate supplies its own topic when `apns-topic` is absent.
    public var impliedTopic: String? {
        if topics.isEmpty { return bundleID }
        return topics.count == 1 ? topics[0] : nil
    }
}

/// One provider connection's authentication state (docs/provider-api.md), a value the transport keeps
/// per connection and the provider API updates on every request.
///
/// Token rules: a verified token is cached until the client sends a different one; a different
/// token within 20 minutes of the one it replaces answers 429 `TooManyProviderTokenUpdates`; the
/// connection is bound to the team of its first valid token, and a later key of another team
/// answers `UnrelatedKeyIdInToken`.
public struct ProviderConnectionState: Sendable {
    /// The client certificate's grant, when the connection presented one.
    public var certificate: CertificateGrant?
    /// The environment requests on this connection address when the authority names none.
    public var defaultEnvironment: APNsEnvironment
    /// The team the connection is bound to.
    public private(set) var boundTeam: String?
    /// Set once a request on this connection carried the cluster's credential: the connection is
    /// another node's, forwarding pushes (docs/cluster.md).
    var isClusterPeer = false
    /// Whether the client on this connection has shown who it is: a usable client certificate at
    /// the TLS handshake, a request whose provider token was accepted, or a forwarded push with the
    /// cluster's credential. Until then nothing the client sends, nor any request it has under way,
    /// keeps the connection open past its idle deadline (``ProviderAPI/Configuration/idleTimeout``)
    /// from its start; only each answer a fault rule gives it counts.
    public var hasAuthenticated: Bool {
        // Read in place, the token's case first: this runs on every read of a connection.
        if boundTeam != nil || isClusterPeer { return true }
        return certificate != nil && certificate?.problem == nil
    }
    /// Pushes to devices asked for on this connection so far (fault rules' `afterStreams`).
    public internal(set) var pushes = 0

    struct Verified {
        var compact: String
        var key: ProviderKey
        var issuedAt: Int64
        var acceptedAt: Date
    }
    var verified: Verified?
    /// The last token that failed, and why, so a client repeating it is not verified again.
    var rejected: (compact: String, reason: APNsReason)?

    /// A connection's initial state.
    public init(defaultEnvironment: APNsEnvironment, certificate: CertificateGrant? = nil) {
        self.defaultEnvironment = defaultEnvironment
        self.certificate = certificate
    }

    /// Tokens older than this answer `ExpiredProviderToken`.
    public static let tokenLifetime: TimeInterval = 3600
    /// A connection may switch to a new token at most once in this interval.
    public static let tokenUpdateInterval: TimeInterval = 20 * 60
    /// `iat` further in the future than this is refused (`InvalidProviderToken`).
    public static let clockSkew: TimeInterval = 5 * 60

    /// Authenticates a token-auth request. Returns the key that signed it, or the reason to answer.
    mutating func authenticate(
        authorization: String?, environment: APNsEnvironment, registry: Registry, now: Date
    ) -> Result<ProviderKey, APNsReason> {
        guard let authorization else { return .failure(.missingProviderToken) }
        // Byte-wise: this runs for every push, and a token is ASCII.
        var compact = Substring(authorization)
        if compact.utf8.count > 7, ASCIICase.hasPrefix(compact.utf8, "bearer ") {
            compact = Substring(compact.utf8[compact.utf8.index(compact.startIndex, offsetBy: 7)...])
        }
        compact = ASCIICase.trimmed(compact)
        guard !compact.isEmpty else { return .failure(.missingProviderToken) }

        // The cached token is compared where it is kept: binding `verified` would copy it whole
        // (its key's strings and data) for every push.
        let keyID: String
        let teamID: String
        let issuedAt: Int64
        if let cached = verified?.compact, Self.same(cached, compact) {
            keyID = verified!.key.id
            teamID = verified!.key.teamID
            issuedAt = verified!.issuedAt
        } else {
            if let rejected, Self.same(rejected.compact, compact) { return .failure(rejected.reason) }
            switch verify(compact, registry: registry, now: now) {
            case .failure(let reason):
                rejected = (String(compact), reason)
                return .failure(reason)
            case .success(let (newKey, token)):
                if let boundTeam, boundTeam != newKey.teamID {
                    return .failure(.unrelatedKeyIdInToken)
                }
                // Replacing a token sooner than 20 minutes is refused, unless the one it replaces has
                // expired meanwhile (it was already old when it arrived): the client must renew then.
                if let verified, now.timeIntervalSince(verified.acceptedAt) < Self.tokenUpdateInterval,
                    now.timeIntervalSince1970 - Double(verified.issuedAt) <= Self.tokenLifetime
                {
                    return .failure(.tooManyProviderTokenUpdates)
                }
                verified = Verified(compact: String(compact), key: newKey, issuedAt: token.issuedAt, acceptedAt: now)
                rejected = nil
                keyID = newKey.id
                teamID = newKey.teamID
                issuedAt = token.issuedAt
            }
        }
        if now.timeIntervalSince1970 - Double(issuedAt) > Self.tokenLifetime {
            return .failure(.expiredProviderToken)
        }
        // The key may have been revoked or changed since it was cached.
        guard let current = registry.key(keyID), !current.revoked, current.teamID == teamID else {
            verified = nil
            return .failure(.invalidProviderToken)
        }
        if let scope = current.environment, scope != environment {
            return .failure(.badEnvironmentKeyIdInToken)
        }
        if boundTeam == nil { boundTeam = current.teamID }
        return .success(current)
    }

    /// Whether a cached token is `compact`, byte for byte.
    private static func same(_ cached: String, _ compact: Substring) -> Bool {
        ASCIICase.withUTF8(cached, compact) { a, b in
            a.count == b.count && (a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
        }
    }

    private func verify(_ compact: Substring, registry: Registry, now: Date) -> Result<
        (ProviderKey, ProviderToken), APNsReason
    > {
        guard let token = try? ProviderToken(compact: compact) else { return .failure(.invalidProviderToken) }
        guard let (key, publicKey) = registry.verifier(token.keyID) else {
            // No fallback key: an unknown kid is invalid, whatever else the connection has used.
            return .failure(.invalidProviderToken)
        }
        guard !key.revoked, key.teamID == token.teamID else { return .failure(.invalidProviderToken) }
        guard token.isSigned(by: publicKey) else { return .failure(.invalidProviderToken) }
        if Double(token.issuedAt) > now.timeIntervalSince1970 + Self.clockSkew {
            return .failure(.invalidProviderToken)
        }
        if now.timeIntervalSince1970 - Double(token.issuedAt) > Self.tokenLifetime {
            return .failure(.expiredProviderToken)
        }
        return .success((key, token))
    }
}
