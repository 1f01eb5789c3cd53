import Foundation
import HeraldCore
import HeraldNIO
import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// An APNs provider client over HTTP/2: works against Apple's hosts and, unchanged but for the
/// server, against a Herald gateway.
///
/// Requests are multiplexed over HTTP/2 connections the client keeps open, one per server unless
/// ``Configuration/connections`` asks for more, driven at the frame level (HeraldNIO, shared
/// with a gateway's forwarding): no stream channel or task per request. A connection opens on first
/// use and again after it goes away; requests the server did not take (GOAWAY) go to the new one by
/// themselves. `https://` servers get TLS with ALPN `h2`; an `http://` server (a gateway's
/// development listener) gets cleartext HTTP/2 with prior knowledge. Each request has a deadline;
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
        public var tokenRefreshAge: Duration
        /// HTTP/2 connections per server, which requests take in turn (at least 1). One connection
        /// carries as many streams at once as the server allows (APNs: 1,000).
        public var connections: Int

        /// A configuration.
        public init(
            server: APNsServer, authentication: APNsAuthentication, trustedCAPEM: String? = nil,
            timeout: Duration = .seconds(30), retry: APNsRetryPolicy = APNsRetryPolicy(),
            tokenRefreshAge: Duration = .seconds(50 * 60), connections: Int = 1
        ) {
            self.server = server
            self.authentication = authentication
            self.trustedCAPEM = trustedCAPEM
            self.timeout = timeout
            self.retry = retry
            self.tokenRefreshAge = tokenRefreshAge
            self.connections = connections
        }
    }

    /// The configuration.
    public let configuration: Configuration
    let http: HTTP2Client
    let tokens: APNsTokenCache?
    let sleep: @Sendable (Duration) async throws -> Void
    let logger: Logger?

    /// A client whose connections live on `eventLoopGroup`. `now` and `sleep` are the clock and the
    /// wait between attempts (tests inject both). Without a `logger` the client logs nothing; with
    /// one, it logs its retries at debug level.
    public init(
        configuration: Configuration, eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger? = nil,
        now: @escaping @Sendable () -> Date = { Date() },
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        let context: NIOSSLContext
        do {
            if let pem = configuration.trustedCAPEM {
                tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
            }
            switch configuration.authentication {
            case .token(let key):
                tokens = APNsTokenCache(key: key, refreshAge: configuration.tokenRefreshAge.timeInterval, now: now)
            case .certificate(let chain, let key):
                tls.certificateChain = try NIOSSLCertificate.fromPEMBytes(Array(chain.utf8)).map { .certificate($0) }
                tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: Array(key.utf8), format: .pem))
                tokens = nil
            }
            context = try NIOSSLContext(configuration: tls)
        } catch {
            throw APNsClientError.invalidConfiguration("TLS credentials: \(error)")
        }
        guard configuration.connections >= 1 else {
            throw APNsClientError.invalidConfiguration(
                "connections must be at least 1, not \(configuration.connections)")
        }
        // A connection that does not open fails what waits for it by the time a request may take.
        let connectTimeout = min(TimeAmount.seconds(10), TimeAmount(configuration.timeout))
        self.http = HTTP2Client(
            configuration: .init(
                tls: context, connectTimeout: connectTimeout, spread: .connections(configuration.connections)),
            group: eventLoopGroup)
        self.configuration = configuration
        self.sleep = sleep
        self.logger = logger
    }

    /// Sends one notification to a device token (hex) and returns once the service accepted it.
    /// Throws ``APNsError`` when it refused it and ``APNsClientError`` when no answer came.
    public func send(_ notification: APNsNotification, to deviceToken: String) async throws -> APNsDelivery {
        guard DeviceToken(hex: deviceToken) != nil else { throw APNsClientError.invalidDeviceToken(deviceToken) }
        return try await attempts(
            notification, to: deviceToken, apnsID: notification.apnsID ?? RandomUUID.lowercaseString(),
            deadline: .now() + TimeAmount(configuration.timeout))
    }

    /// What one attempt's answer calls for.
    enum Verdict {
        case delivered(APNsDelivery)
        /// The answer, thrown: a refusal, or no answer in time.
        case final(any Error)
        /// The provider token was refused as expired: discard it and try again at once, once.
        case renewToken(String)
        /// Try again after the policy's wait, unless the attempts or the time are used up.
        case retry(any Error)
    }

    /// Judges the answer to attempt number `attempts` of a push, which carried `headers`.
    func verdict(
        _ result: Result<HTTP2ClientResponse, HTTP2ClientFailure>, apnsID: String, attempts: Int,
        headers: [(String, String)], renewedToken: Bool
    ) -> Verdict {
        switch result {
        case .success(let response):
            let answeredID = response.headers.first(name: "apns-id") ?? apnsID
            if response.status == 200 {
                return .delivered(
                    APNsDelivery(
                        apnsID: answeredID, uniqueID: response.headers.first(name: "apns-unique-id"),
                        attempts: attempts))
            }
            let error = APNsError.parse(
                status: response.status, body: Data(response.body.readableBytesView), apnsID: answeredID)
            if error.reason == .known(.expiredProviderToken), !renewedToken, tokens != nil,
                let sent = headers.first(where: { $0.0 == "authorization" })?.1
            {
                // Refused as too old (a clock that jumped, a laptop that slept): sign a new one.
                return .renewToken(String(sent.dropFirst("bearer ".count)))
            }
            return error.isRetryable ? .retry(error) : .final(error)
        case .failure(let error) where error.kind == .timedOut:
            return .final(APNsClientError.deadlineExceeded(attempts: attempts))
        case .failure(let error):
            return .retry(APNsClientError.transport(error.description, attempts: attempts))
        }
    }

    /// Attempts a push until it is delivered or refused, the attempts are used up, or `deadline`
    /// passes. `made` attempts were made already (by a bulk send), the last one ending in `failure`
    /// (to be waited after) or in an expired token (`renewedToken`).
    func attempts(
        _ notification: APNsNotification, to deviceToken: String, apnsID: String, deadline: NIODeadline,
        made: Int = 0, failure: (any Error)? = nil, renewedToken: Bool = false
    ) async throws -> APNsDelivery {
        var attempts = made
        var failure = failure
        var renewedToken = renewedToken
        let (endpoint, base) = try configuration.server.endpoint()
        while true {
            if let last = failure {
                guard attempts < configuration.retry.maximumAttempts else { throw last }
                let wait = configuration.retry.backoff(after: attempts)
                // No time left for another attempt: the last failure is the answer.
                guard NIODeadline.now() + TimeAmount(wait) < deadline else { throw last }
                logger?.debug("retrying", metadata: ["apns-id": "\(apnsID)", "after": "\(last)", "wait": "\(wait)"])
                try await sleep(wait)
                failure = nil
            }
            attempts += 1
            let headers = try headers(for: notification, apnsID: apnsID)
            let request = HTTP2ClientRequest(
                path: base + "/3/device/" + deviceToken, headers: headers,
                body: ByteBuffer(bytes: notification.payload),
                deadline: deadline)
            let answer = await http.execute(request, to: endpoint)
            switch verdict(answer, apnsID: apnsID, attempts: attempts, headers: headers, renewedToken: renewedToken) {
            case .delivered(let delivery): return delivery
            case .final(let error): throw error
            case .renewToken(let sent):
                renewedToken = true
                tokens?.discard(sent)
            case .retry(let error): failure = error
            }
        }
    }

    func headers(for n: APNsNotification, apnsID: String) throws -> [(String, String)] {
        var headers: [(String, String)] = []
        headers.reserveCapacity(8)
        if let tokens { headers.append(("authorization", try tokens.authorization())) }
        headers.append(("apns-topic", n.topic))
        headers.append(("apns-id", apnsID))
        if let t = n.pushType { headers.append(("apns-push-type", t.rawValue)) }
        if let p = n.priority { headers.append(("apns-priority", String(p.rawValue))) }
        if let e = n.expiration { headers.append(("apns-expiration", String(e))) }
        if let c = n.collapseID { headers.append(("apns-collapse-id", c)) }
        // No `content-type`: APNs' request headers do not include one (the body is JSON by
        // definition), and on a bulk send it was one more field to look up and encode per push.
        return headers
    }

    /// Closes the connections. Call it before the client goes away.
    public func shutdown() async throws {
        await http.shutdown()
    }
}

extension APNsServer {
    /// Where requests go, and the path its URL puts before theirs (usually none).
    func endpoint() throws -> (HTTP2Endpoint, String) {
        guard let endpoint = HTTP2Endpoint(url: url) else {
            throw APNsClientError.invalidConfiguration("the server must be an https:// or http:// URL, not \(url)")
        }
        let afterScheme = url.drop { $0 != "/" }.dropFirst(2)
        let path = afterScheme.drop { $0 != "/" }
        return (endpoint, String(path.hasSuffix("/") ? path.dropLast() : path))
    }
}
