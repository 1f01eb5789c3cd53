import AsyncHTTPClient
import Foundation
import HeraldCore
import Logging
import NIOCore
import NIOHTTP1
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

/// How the client proves who it is (spec/APNS.md §2).
public enum APNsAuthentication: Sendable {
    /// Token authentication: every request carries a JWT signed with the key, renewed as
    /// ``APNsTokenCache`` describes.
    case token(APNsSigningKey)
    /// Certificate authentication: a TLS client certificate (PEM chain, leaf first) and its key.
    case certificate(chainPEM: String, privateKeyPEM: String)
}

/// When a failed request is sent again.
///
/// Only what spec/APNS.md §1 allows is retried: 500 and 503 answers, 429 `TooManyRequests`, and
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

/// One notification to send.
public struct APNsNotification: Sendable, Equatable {
    /// The payload: a JSON object, at most 4096 bytes (5120 for VoIP).
    public var payload: Data
    /// `apns-topic`: the bundle id, with the push type's suffix where it has one.
    public var topic: String
    /// `apns-push-type`; `nil` lets the service infer it.
    public var pushType: PushType?
    /// `apns-priority`; `nil` = 10 (5 for background).
    public var priority: PushPriority?
    /// `apns-expiration` in UNIX seconds; 0 = deliver once or never; `nil` = the service's default.
    public var expiration: Int64?
    /// `apns-collapse-id`: at most 64 bytes.
    public var collapseID: String?
    /// `apns-id`; `nil` makes one (a version-4 UUID) so that retries carry the same id.
    public var apnsID: String?

    /// Creates a notification.
    public init(
        payload: Data, topic: String, pushType: PushType? = nil, priority: PushPriority? = nil,
        expiration: Int64? = nil, collapseID: String? = nil, apnsID: String? = nil
    ) {
        self.payload = payload
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
    }
}

/// A notification the service accepted.
public struct APNsDelivery: Sendable, Equatable {
    /// `apns-id`.
    public var apnsID: String
    /// `apns-unique-id` (development environment only): the delivery log's handle.
    public var uniqueID: String?
    /// How many attempts it took.
    public var attempts: Int
}

/// The service refused a notification: its status, reason and (for 410) when the token stopped
/// being valid.
public struct APNsError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A reason APNs documents, or one this client does not know.
    public enum Reason: Sendable, Equatable, CustomStringConvertible {
        /// One of the 32 documented reasons.
        case known(APNsReason)
        /// One of the reasons the broadcast and channel management APIs add (spec/APNS.md §8).
        case broadcast(BroadcastReason)
        /// A reason string not in spec/APNS.md (or no reason at all: the empty string).
        case unknown(String)

        /// Reads a reason string.
        public init(_ text: String) {
            if let known = APNsReason(rawValue: text) {
                self = .known(known)
            } else if let broadcast = BroadcastReason(rawValue: text) {
                self = .broadcast(broadcast)
            } else {
                self = .unknown(text)
            }
        }

        /// The reason string.
        public var description: String {
            switch self {
            case .known(let r): r.rawValue
            case .broadcast(let r): r.rawValue
            case .unknown(let s): s
            }
        }
    }

    /// The HTTP status.
    public var status: Int
    /// The reason.
    public var reason: Reason
    /// `apns-id` of the refused notification (`apns-request-id` of a refused channel request).
    public var apnsID: String?
    /// For 410: when the token stopped being valid for the topic.
    public var timestamp: Date?

    /// Creates an error.
    public init(status: Int, reason: Reason, apnsID: String?, timestamp: Date? = nil) {
        self.status = status
        self.reason = reason
        self.apnsID = apnsID
        self.timestamp = timestamp
    }

    /// Whether spec/APNS.md allows sending it again: 500, 503 and 429 `TooManyRequests`.
    public var isRetryable: Bool {
        status == 500 || status == 503 || reason == .known(.tooManyRequests)
    }

    /// Whether the token should be dropped: 410 (`Unregistered`, `ExpiredToken`) and
    /// `BadDeviceToken`.
    public var tokenIsInvalid: Bool {
        status == 410 || reason == .known(.badDeviceToken)
    }

    /// `400 BadDeviceToken (apns-id …)`.
    public var description: String {
        var text = "\(status) \(reason)"
        if let timestamp { text += " since \(Int64(timestamp.timeIntervalSince1970 * 1000)) ms" }
        if let apnsID { text += " (apns-id \(apnsID))" }
        return text
    }

    /// Reads an error answer's body, `{"reason":"…","timestamp":…}`.
    public static func parse(status: Int, body: Data, apnsID: String?) -> APNsError {
        let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
        let reason = Reason(object["reason"] as? String ?? "")
        let milliseconds = (object["timestamp"] as? NSNumber)?.doubleValue
        return APNsError(
            status: status, reason: reason, apnsID: apnsID,
            timestamp: milliseconds.map { Date(timeIntervalSince1970: $0 / 1000) })
    }
}

/// A failure of the client rather than an answer from the service.
public enum APNsClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The device token is not hex.
    case invalidDeviceToken(String)
    /// No answer before the deadline.
    case deadlineExceeded(attempts: Int)
    /// The connection failed on every attempt; the last error.
    case transport(String, attempts: Int)
    /// The configuration cannot work (a key or certificate that does not parse).
    case invalidConfiguration(String)

    /// What went wrong.
    public var description: String {
        switch self {
        case .invalidDeviceToken(let t): "device token \"\(t)\" is not hex"
        case .deadlineExceeded(let n): "no answer before the deadline (\(n) attempt\(n == 1 ? "" : "s"))"
        case .transport(let e, let n): "\(e) (\(n) attempt\(n == 1 ? "" : "s"))"
        case .invalidConfiguration(let e): e
        }
    }
}

/// An APNs provider client over HTTP/2 (AsyncHTTPClient): works against Apple's hosts and,
/// unchanged but for the server, against a Herald gateway.
///
/// Requests are multiplexed over HTTP/2 connections that AsyncHTTPClient keeps open (a new one
/// when a connection's stream limit is reached or it goes away). Each request has a deadline;
/// failed requests are retried only as ``APNsRetryPolicy`` describes.
public final class APNsClient: Sendable {
    /// Everything a client needs.
    public struct Configuration: Sendable {
        /// Where to send.
        public var server: APNsServer
        /// How to authenticate.
        public var authentication: APNsAuthentication
        /// A CA certificate (PEM) to trust instead of the system's roots: a Herald gateway's
        /// `ca.pem`. `nil` trusts the system's roots (Apple's hosts).
        public var trustedCAPEM: String?
        /// How long one `send` may take, retries included.
        public var timeout: Duration
        /// When to retry.
        public var retry: APNsRetryPolicy
        /// When a provider token is renewed (see ``APNsTokenCache``).
        public var tokenRefreshAge: TimeInterval

        /// A configuration.
        public init(
            server: APNsServer, authentication: APNsAuthentication, trustedCAPEM: String? = nil,
            timeout: Duration = .seconds(30), retry: APNsRetryPolicy = APNsRetryPolicy(),
            tokenRefreshAge: TimeInterval = 50 * 60
        ) {
            self.server = server
            self.authentication = authentication
            self.trustedCAPEM = trustedCAPEM
            self.timeout = timeout
            self.retry = retry
            self.tokenRefreshAge = tokenRefreshAge
        }
    }

    /// The configuration.
    public let configuration: Configuration
    let http: HTTPClient
    let tokens: APNsTokenCache?
    let sleep: @Sendable (Duration) async throws -> Void
    let logger: Logger

    /// A client. `now` and `sleep` are the clock and the wait between attempts (tests inject
    /// both).
    public init(
        configuration: Configuration, eventLoopGroup: any EventLoopGroup = HTTPClient.defaultEventLoopGroup,
        logger: Logger = Logger(label: "herald.provider"), now: @escaping @Sendable () -> Date = { Date() },
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        do {
            if let pem = configuration.trustedCAPEM {
                tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
            }
            switch configuration.authentication {
            case .token(let key):
                tokens = APNsTokenCache(key: key, refreshAge: configuration.tokenRefreshAge, now: now)
            case .certificate(let chain, let key):
                tls.certificateChain = try NIOSSLCertificate.fromPEMBytes(Array(chain.utf8)).map { .certificate($0) }
                tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: Array(key.utf8), format: .pem))
                tokens = nil
            }
        } catch {
            throw APNsClientError.invalidConfiguration("TLS credentials: \(error)")
        }
        var http = HTTPClient.Configuration(tlsConfiguration: tls)
        http.httpVersion = .automatic  // h2 through ALPN over TLS; HTTP/1.1 to a cleartext development listener
        http.connectionPool = .init(idleTimeout: .minutes(10))
        self.http = HTTPClient(eventLoopGroup: eventLoopGroup, configuration: http, backgroundActivityLogger: logger)
        self.configuration = configuration
        self.sleep = sleep
        self.logger = logger
    }

    /// Sends `notification` to each device token, `concurrency` requests in flight at once over the
    /// client's connections, at most `perSecond` started a second (0: as fast as answered); each
    /// push gets its own `apns-id`. `progress` gets the tally after every answer; the tally is
    /// returned once every push is answered (refusals and failures are counted, not thrown).
    public func send(
        _ notification: APNsNotification, to deviceTokens: [String], concurrency: Int, perSecond: Double = 0,
        progress: @Sendable (APNsBulkTally) -> Void = { _ in }
    ) async -> APNsBulkTally {
        var each = notification
        each.apnsID = nil
        return await APNsBulkSend(concurrency: concurrency, perSecond: perSecond, clock: ContinuousClock())
            .run(deviceTokens, send: { [each] token in try await self.send(each, to: token) }, progress: progress)
    }

    /// Sends one notification to a device token (hex) and returns once the service accepted it.
    /// Throws ``APNsError`` when it refused it and ``APNsClientError`` when no answer came.
    public func send(_ notification: APNsNotification, to deviceToken: String) async throws -> APNsDelivery {
        guard DeviceToken(hex: deviceToken) != nil else { throw APNsClientError.invalidDeviceToken(deviceToken) }
        let apnsID = notification.apnsID ?? RandomUUID.lowercaseString()
        let deadline = NIODeadline.now() + TimeAmount(configuration.timeout)
        var attempts = 0
        var renewedToken = false
        while true {
            attempts += 1
            var request = HTTPClientRequest(url: configuration.server.url + "/3/device/" + deviceToken)
            request.method = .POST
            request.headers = try headers(for: notification, apnsID: apnsID)
            request.body = .bytes(ByteBuffer(bytes: notification.payload))
            let failure: any Error
            do {
                let response = try await http.execute(request, deadline: deadline, logger: logger)
                let body = try await response.body.collect(upTo: 64 * 1024)
                let answeredID = response.headers.first(name: "apns-id") ?? apnsID
                if response.status == .ok {
                    return APNsDelivery(
                        apnsID: answeredID, uniqueID: response.headers.first(name: "apns-unique-id"),
                        attempts: attempts)
                }
                let error = APNsError.parse(
                    status: Int(response.status.code), body: Data(body.readableBytesView), apnsID: answeredID)
                if error.reason == .known(.expiredProviderToken), !renewedToken, let tokens,
                    let sent = request.headers.first(name: "authorization")
                {
                    // The token was refused as too old (a clock that jumped, a laptop that slept):
                    // sign a new one and try again at once.
                    renewedToken = true
                    tokens.discard(String(sent.dropFirst("bearer ".count)))
                    continue
                }
                guard error.isRetryable else { throw error }
                failure = error
            } catch let error as APNsError {
                throw error
            } catch let error as HTTPClientError where error == .deadlineExceeded {
                throw APNsClientError.deadlineExceeded(attempts: attempts)
            } catch {
                failure = APNsClientError.transport("\(error)", attempts: attempts)
            }
            guard attempts < configuration.retry.maximumAttempts else { throw failure }
            let wait = configuration.retry.backoff(after: attempts)
            // No time left for another attempt: the last failure is the answer.
            guard NIODeadline.now() + TimeAmount(wait) < deadline else { throw failure }
            logger.debug(
                "retrying", metadata: ["apns-id": "\(apnsID)", "after": "\(failure)", "wait": "\(wait)"])
            try await sleep(wait)
        }
    }

    func headers(for n: APNsNotification, apnsID: String) throws -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.reserveCapacity(8)
        if let tokens { headers.add(name: "authorization", value: "bearer " + (try tokens.token())) }
        headers.add(name: "apns-topic", value: n.topic)
        headers.add(name: "apns-id", value: apnsID)
        if let t = n.pushType { headers.add(name: "apns-push-type", value: t.rawValue) }
        if let p = n.priority { headers.add(name: "apns-priority", value: String(p.rawValue)) }
        if let e = n.expiration { headers.add(name: "apns-expiration", value: String(e)) }
        if let c = n.collapseID { headers.add(name: "apns-collapse-id", value: c) }
        headers.add(name: "content-type", value: "application/json")
        return headers
    }

    /// Closes the connections. Call it before the client goes away.
    public func shutdown() async throws {
        try await http.shutdown()
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
