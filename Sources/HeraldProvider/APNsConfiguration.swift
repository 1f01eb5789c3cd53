import Foundation
import HeraldCore
import Logging
import NIOCore
import NIOSSL

/// Where a client sends: Apple's hosts, or a Herald gateway.
public struct APNsServer: Sendable, Equatable, CustomStringConvertible {
    /// `scheme://host:port`, without a path.
    public var url: String

    /// Creates a server from its base URL, for instance `https://localhost:2197` (a Herald
    /// gateway's TLS listener) or `http://127.0.0.1:2198` (its development listener, HTTP/1.1).
    public init(url: String) {
        self.url = url.hasSuffix("/") ? String(url.dropLast()) : url
    }

    /// Apple's production service, `api.push.apple.com`.
    public static let production = APNsServer(url: "https://api.push.apple.com:443")
    /// Apple's development (sandbox) service, `api.sandbox.push.apple.com`.
    public static let sandbox = APNsServer(url: "https://api.sandbox.push.apple.com:443")

    /// The URL.
    public var description: String { url }
}

/// How the client proves who it is (docs/provider-client.md "Authentication").
public enum APNsAuthentication: Sendable {
    /// Token authentication: every request carries a JWT signed with the key, renewed as
    /// ``APNsTokenCache`` describes.
    case token(APNsSigningKey)
    /// Certificate authentication: a TLS client certificate (PEM chain, leaf first) and its key.
    case certificate(chainPEM: String, privateKeyPEM: String)
}

/// When a failed request is sent again.
///
/// Only what APNs allows is retried (docs/provider-client.md "Retries"): 500 and 503 answers, 429 `TooManyRequests`, and
/// requests that got no answer at all (the connection failed). `ExpiredProviderToken` is retried
/// once with a newly signed token. Every retry reuses the request's `apns-id`, so a device that
/// did receive an earlier attempt drops the copy.
public struct APNsRetryPolicy: Sendable, Equatable {
    /// Attempts in all, the first included (1 = never retry).
    public var maximumAttempts: Int
    /// The wait before the first retry; it doubles for each further one, with jitter.
    public var initialBackoff: Duration
    /// The longest wait between attempts.
    public var maximumBackoff: Duration

    /// A policy; the defaults try three times, waiting about 0.5 s and then 1 s.
    public init(
        maximumAttempts: Int = 3, initialBackoff: Duration = .milliseconds(500), maximumBackoff: Duration = .seconds(8)
    ) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
    }

    /// Never retry.
    public static let never = APNsRetryPolicy(maximumAttempts: 1)

    /// The wait before attempt `attempt + 1` (full jitter over the doubled backoff).
    func backoff(after attempt: Int) -> Duration {
        let doubled = initialBackoff * (1 << min(attempt - 1, 20))
        let cap = min(doubled, maximumBackoff)
        let seconds = Double(cap.components.seconds) + Double(cap.components.attoseconds) / 1e18
        return .milliseconds(Int64(Double.random(in: 0.5...1.0) * seconds * 1000))
    }
}
