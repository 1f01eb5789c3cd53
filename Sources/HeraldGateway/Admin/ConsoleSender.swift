import Crypto
import Foundation
import HeraldCore
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import X509

/// Sends the console's pushes the way a provider does: over a new HTTP/2 connection to the gateway's
/// own provider API, authenticated with a provider token (signed with the key the user gave) or an
/// app certificate (issued by the gateway's CA for that one send). The push takes the same path as
/// every other: no side door.
struct ConsoleSender: Sendable {
    /// Where the provider API listens.
    struct Targets: Sendable {
        /// The host to connect to (the listen address, loopback for a wildcard).
        var host: String
        /// The TLS listener's port.
        var tlsPort: Int
        /// The cleartext development listener's port, when it is on.
        var developmentPort: Int?
    }

    /// How the push is authenticated.
    enum Authentication: Sendable {
        /// A provider token (JWT), sent over the development listener when it is on (else TLS).
        case token(String)
        /// TLS with this app certificate and key.
        case certificate(chainPEM: String, keyPEM: String)
    }

    /// The provider API's answer.
    struct Answer: Sendable, Codable {
        var status: Int
        var reason: String?
        var timestamp: Int64?
        var apnsID: String?
        var uniqueID: String?
        /// `herald-warnings`: what Apple would do quietly with the push (``PushWarning`` names).
        var warnings: String?
        /// From the request's first byte to the answer's last, in milliseconds.
        var milliseconds: Double
        /// Which listener it went to (`https://…` or `http://…`).
        var url: String

        /// Takes the reason and the timestamp from an error answer's JSON body.
        mutating func read(body: ByteBuffer) {
            guard body.readableBytes > 0,
                case .object(let object)? = try? JSONValue.parse(Data(body.readableBytesView))
            else { return }
            reason = object["reason"]?.stringValue
            if case .int(let t)? = object["timestamp"] { timestamp = t }
        }
    }

    let targets: Targets
    let ca: GatewayCA
    let group: any EventLoopGroup

    /// Sends one push: `path` is `/3/device/<token>`, `headers` the `apns-*` headers.
    func send(
        path: String, headers: [(String, String)], body: Data, environment: APNsEnvironment,
        authentication: Authentication
    ) async throws -> Answer {
        let (tls, port, head) = try route(authentication, headers: headers)
        let scheme = tls == nil ? "http" : "https"
        let authority = environment == .production ? "api.push.apple.com" : "api.sandbox.push.apple.com"
        let host = targets.host
        let sslContext = tls
        let (channel, multiplexer) = try await ClientBootstrap(group: group)
            .connectTimeout(.seconds(5))
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if let sslContext {
                        try sync.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: nil))
                    }
                    let multiplexer = try sync.configureAsyncHTTP2Pipeline(mode: .client) { stream in
                        stream.eventLoop.makeSucceededVoidFuture()
                    }
                    return (channel as any Channel, multiplexer)
                }
            }
        defer { channel.close(promise: nil) }
        let clock = ContinuousClock()
        let start = clock.now
        let stream = try await multiplexer.openStream { stream in
            stream.eventLoop.makeCompletedFuture {
                try NIOAsyncChannel<HTTP2Frame.FramePayload, HTTP2Frame.FramePayload>(
                    wrappingChannelSynchronously: stream)
            }
        }
        var answer = Answer(status: 0, milliseconds: 0, url: "\(scheme)://\(host):\(port)")
        var responseBody = ByteBuffer()
        try await stream.executeThenClose { inbound, outbound in
            let request = HPACKHeaders(
                [(":method", "POST"), (":scheme", scheme), (":path", path), (":authority", authority)] + head)
            try await outbound.write(.headers(.init(headers: request, endStream: body.isEmpty)))
            if !body.isEmpty {
                try await outbound.write(.data(.init(data: .byteBuffer(ByteBuffer(bytes: body)), endStream: true)))
            }
            reading: for try await frame in inbound {
                switch frame {
                case .headers(let h):
                    for (name, value, _) in h.headers {
                        switch name {
                        case ":status": answer.status = Int(value) ?? 0
                        case "apns-id": answer.apnsID = value
                        case "apns-unique-id": answer.uniqueID = value
                        case "herald-warnings": answer.warnings = value
                        default: break
                        }
                    }
                    if h.endStream { break reading }
                case .data(let d):
                    if case .byteBuffer(var buffer) = d.data { responseBody.writeBuffer(&buffer) }
                    if d.endStream { break reading }
                case .rstStream:
                    break reading
                default:
                    break
                }
            }
        }
        answer.milliseconds = Double((clock.now - start) / .microseconds(1)) / 1000
        answer.read(body: responseBody)
        return answer
    }

    /// Where and how a push with `authentication` goes: a token over the development listener when
    /// it is on (else TLS), with its `authorization` header; a certificate over TLS, presenting it.
    func route(_ authentication: Authentication, headers: [(String, String)]) throws -> (
        tls: NIOSSLContext?, port: Int, headers: [(String, String)]
    ) {
        switch authentication {
        case .token(let jwt):
            let head = headers + [("authorization", "bearer \(jwt)")]
            if let development = targets.developmentPort { return (nil, development, head) }
            return (try context(certificate: nil), targets.tlsPort, head)
        case .certificate(let chain, let key):
            return (try context(certificate: (chain, key)), targets.tlsPort, headers)
        }
    }

    /// A TLS client context trusting the gateway's CA (the connection is to this very gateway, so the
    /// host name is not checked), with a client certificate when given.
    func context(certificate: (chain: String, key: String)?) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(try ca.certificatePEM.utf8)))
        configuration.certificateVerification = .noHostnameVerification
        configuration.applicationProtocols = ["h2"]
        if let certificate {
            configuration.certificateChain = try NIOSSLCertificate.fromPEMBytes(Array(certificate.chain.utf8)).map {
                .certificate($0)
            }
            configuration.privateKey = .privateKey(
                try NIOSSLPrivateKey(bytes: Array(certificate.key.utf8), format: .pem))
        }
        return try NIOSSLContext(configuration: configuration)
    }
}
