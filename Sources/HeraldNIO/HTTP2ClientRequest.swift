import NIOCore
import NIOHPACK

/// Where requests go: `https://host[:port]` (HTTP/2 over TLS, ALPN `h2`) or `http://host[:port]`
/// (cleartext HTTP/2 with prior knowledge, as a Herald gateway's development listener speaks).
public struct HTTP2Endpoint: Hashable, Sendable, CustomStringConvertible {
    /// Whether the connection is TLS.
    public var tls: Bool
    /// The host name or IP address.
    public var host: String
    /// The port.
    public var port: Int

    /// An endpoint from a URL's scheme, host and port (443 or 80 when it names none); `nil` for
    /// anything else than `https://` and `http://` with a host. A path after the port is ignored.
    public init?(url: String) {
        let tls: Bool
        let rest: Substring
        if url.hasPrefix("https://") {
            (tls, rest) = (true, url.dropFirst("https://".count))
        } else if url.hasPrefix("http://") {
            (tls, rest) = (false, url.dropFirst("http://".count))
        } else {
            return nil
        }
        let hostPort = rest.prefix { $0 != "/" && $0 != "?" }
        var host: Substring
        var portText: Substring?
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { return nil }
            host = hostPort[hostPort.index(after: hostPort.startIndex)..<close]
            let after = hostPort[hostPort.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty { return nil }
        } else if let colon = hostPort.lastIndex(of: ":") {
            host = hostPort[..<colon]
            portText = hostPort[hostPort.index(after: colon)...]
        } else {
            host = hostPort
        }
        guard !host.isEmpty else { return nil }
        let port = portText.map { Int($0) } ?? (tls ? 443 : 80)
        guard let port, (1...65535).contains(port) else { return nil }
        self.init(tls: tls, host: String(host), port: port)
    }

    /// An endpoint.
    public init(tls: Bool, host: String, port: Int) {
        self.tls = tls
        self.host = host
        self.port = port
    }

    /// `:authority`: host and port, an IPv6 address in brackets.
    public var authority: String { "\(host.contains(":") ? "[\(host)]" : host):\(port)" }

    /// The URL it was made from, normalized.
    public var description: String { "\(tls ? "https" : "http")://\(authority)" }
}

/// One request: a stream's HEADERS (and DATA when there is a body).
public struct HTTP2ClientRequest: Sendable {
    /// `:method`.
    public var method: String
    /// `:path`.
    public var path: String
    /// The fields after the pseudo-header fields, lowercase names. Only those whose values repeat from
    /// request to request (`HTTP2ClientHandler.repeats`: the token, topic, push type, priority, content
    /// type and length) enter the HPACK dynamic table; the rest are sent without entering it.
    public var headers: [(String, String)]
    /// The body, if any.
    public var body: ByteBuffer?
    /// When the answer must have come; the stream is reset after it.
    public var deadline: NIODeadline
    /// How much of the answer's body is kept; the rest is dropped.
    public var bodyLimit: Int

    /// A request.
    public init(
        method: String = "POST", path: String, headers: [(String, String)] = [], body: ByteBuffer? = nil,
        deadline: NIODeadline, bodyLimit: Int = 64 * 1024
    ) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.deadline = deadline
        self.bodyLimit = bodyLimit
    }
}

/// What the server answered.
public struct HTTP2ClientResponse: Sendable {
    /// `:status`.
    public var status: Int
    /// The fields of the answer (`:status` among them).
    public var headers: HPACKHeaders
    /// The body, up to the request's ``HTTP2ClientRequest/bodyLimit``.
    public var body: ByteBuffer
}

/// Why a request got no answer.
public struct HTTP2ClientFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// What happened.
    public enum Kind: Sendable, Equatable {
        /// No connection could be made (or TLS, or ALPN, failed).
        case connect
        /// The connection closed or failed while the request was in flight.
        case closed
        /// The server reset the stream.
        case reset
        /// The server is going away and did not take the request (GOAWAY): it was not processed.
        case refused
        /// The deadline passed.
        case timedOut
        /// The client was shut down.
        case stopped
    }

    /// What happened.
    public var kind: Kind
    /// In words, for a log.
    public var description: String

    /// A failure.
    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}

/// Called exactly once per request: with the answer, or with why there is none.
public typealias HTTP2ClientCompletion = @Sendable (Result<HTTP2ClientResponse, HTTP2ClientFailure>) -> Void
