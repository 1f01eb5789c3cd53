import AsyncHTTPClient
import Foundation
import HeraldCore
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL

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
        public var tokenRefreshAge: Duration

        /// A configuration.
        public init(
            server: APNsServer, authentication: APNsAuthentication, trustedCAPEM: String? = nil,
            timeout: Duration = .seconds(30), retry: APNsRetryPolicy = APNsRetryPolicy(),
            tokenRefreshAge: Duration = .seconds(50 * 60)
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
    let logger: Logger?

    /// A client. `now` and `sleep` are the clock and the wait between attempts (tests inject
    /// both). Without a `logger` the client logs nothing, as AsyncHTTPClient's own
    /// `backgroundActivityLogger`; with one, it logs its retries at debug level.
    public init(
        configuration: Configuration, eventLoopGroup: any EventLoopGroup = HTTPClient.defaultEventLoopGroup,
        logger: Logger? = nil,
        now: @escaping @Sendable () -> Date = { Date() },
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
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
        } catch {
            throw APNsClientError.invalidConfiguration("TLS credentials: \(error)")
        }
        var http = HTTPClient.Configuration(tlsConfiguration: tls)
        http.httpVersion = .automatic  // h2 through ALPN over TLS; HTTP/1.1 to a cleartext development listener
        http.connectionPool = .init(idleTimeout: .minutes(10))
        // Without a logger, AsyncHTTPClient logs nothing either (its own default).
        if let logger {
            self.http = HTTPClient(eventLoopGroup: eventLoopGroup, configuration: http, backgroundActivityLogger: logger)
        } else {
            self.http = HTTPClient(eventLoopGroup: eventLoopGroup, configuration: http)
        }
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
            logger?.debug(
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
