import Crypto
import Foundation
import HeraldCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A plain TCP connection to a loopback port, for clients no library would be: half a preface,
/// garbage, silence.
final class RawSocket {
    let fd: Int32
    let opened = Date()

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let connected = withLoopbackAddress(port: port) { Glibc.connect(fd, $0, $1) }
        guard connected == 0 else { throw CocoaError(.fileReadUnknown, userInfo: ["connect": port]) }
    }

    func send(_ text: String) { send(Array(text.utf8)) }
    func send(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) } }

    /// Reads until the peer closes (or resets) the connection, or `limit` seconds pass: what came, whether
    /// it was closed, and the seconds since the connection was opened.
    func readUntilClosed(limit: TimeInterval = 20) -> (text: String, closed: Bool, after: TimeInterval) {
        let (text, closed) = receive(limit: limit) { _ in false }
        return (text, closed, Date().timeIntervalSince(opened))
    }

    /// Reads until an answer's head has ended (a blank line), the peer closes, or `limit` seconds
    /// pass: what came, and whether the connection was closed.
    func readHead(limit: TimeInterval = 10) -> (text: String, closed: Bool) {
        receive(limit: limit) { $0.contains("\r\n\r\n") }
    }

    /// Reads until `enough` says so of what came, the peer closes (or resets) the connection, or
    /// `limit` seconds pass.
    private func receive(limit: TimeInterval, until enough: (String) -> Bool) -> (text: String, closed: Bool) {
        var timeout = timeval(tv_sec: Int(limit), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { return (String(decoding: received, as: UTF8.self), n == 0 || errno == ECONNRESET) }
            received += buffer[0..<n]
            let text = String(decoding: received, as: UTF8.self)
            if enough(text) { return (text, false) }
        }
    }

    /// Whether the connection is open, as far as this side has heard: no close or reset has arrived.
    var isOpen: Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    }

    deinit { close(fd) }
}

/// The TCP addresses a process listens on, read from /proc (`127.0.0.1:2197`, `0.0.0.0:5223`, `[::1]:8080`).
func listeningAddresses(pid: Int32) -> [String] {
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
    var inodes = Set<String>()
    for fd in fds {
        if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
            target.hasPrefix("socket:[")
        {
            inodes.insert(String(target.dropFirst(8).dropLast()))
        }
    }
    var addresses: [String] = []
    for table in ["tcp", "tcp6"] {
        // /proc files have no size: read to the end, however many reads it takes.
        let data = FileHandle(forReadingAtPath: "/proc/net/\(table)")?.readDataToEndOfFile() ?? Data()
        let text = String(decoding: data, as: UTF8.self)
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9, fields[3] == "0A", inodes.contains(String(fields[9])) else { continue }
            let parts = fields[1].split(separator: ":")
            let port = Int(parts[1], radix: 16) ?? 0
            let hex = String(parts[0])
            if hex.count == 8 {
                let value = UInt32(hex, radix: 16) ?? 0
                let bytes = [value & 0xFF, (value >> 8) & 0xFF, (value >> 16) & 0xFF, value >> 24]
                addresses.append(bytes.map(String.init).joined(separator: ".") + ":\(port)")
            } else {
                addresses.append(
                    (hex == "00000000000000000000000001000000"
                        ? "[::1]"
                        : hex == String(repeating: "0", count: 32)
                            ? "[::]" : "[\(hex)]") + ":\(port)")
            }
        }
    }
    return addresses.sorted()
}

/// Runs a client that ships with the tests (Tests/Clients) with Debian's python3.
func pythonClient(_ name: String, _ arguments: [String]) throws -> (status: Int32, json: [String: Any]?, stderr: String)
{
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Clients").appendingPathComponent(name).path
    let r = try run("/usr/bin/python3", [script] + arguments)
    let json = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
    return (r.status, json, r.stderr)
}

extension URL {
    /// The port of a URL string.
    static func port(_ text: String?) -> Int { text.flatMap { URLComponents(string: $0)?.port } ?? 0 }
}

/// Every listener tells what a client speaks from its first bytes, and no client can keep a
/// connection waiting forever; provider tokens in every form real clients send.
@Suite(.serialized, .ownThread) struct ListenerEndToEndTests {
    @Test func everyRealClientGetsItsAnswer() throws {
        let p = try Provisioned()
        let tls = p.gateway.tls
        // curl: HTTP/2 with ALPN over TLS, HTTP/1.1 over TLS, h2c with prior knowledge, HTTP/1.1 in the clear.
        let h2 = try p.push(tls, http: "--http2", extra: ["--cacert", p.gateway.ca])
        #expect(h2.status == 200 && h2.version == "HTTP/2", "\(h2)")
        let h1tls = try p.push(tls, http: "--http1.1", extra: ["--cacert", p.gateway.ca])
        #expect(h1tls.status == 200 && h1tls.version == "HTTP/1.1", "\(h1tls)")
        let h2c = try p.push(http: "--http2-prior-knowledge")
        #expect(h2c.status == 200 && h2c.version == "HTTP/2", "\(h2c)")
        let h1 = try p.push(http: "--http1.1")
        #expect(h1.status == 200 && h1.version == "HTTP/1.1", "\(h1)")

        // A Python h2 client that opens TLS without ALPN and sends the preface at once.
        let port = URL.port(tls)
        let python = try pythonClient(
            "h2_no_alpn.py",
            [
                "localhost", "\(port)", "/3/device/\(p.token)", p.gateway.ca, #"{"aps":{"alert":"from python"}}"#,
                "authorization: bearer \(p.jwt)", "apns-topic: \(Provisioned.topic)",
            ])
        #expect(python.status == 0, "\(python.json ?? [:]) \(python.stderr)")
        #expect(python.json?["alpn"] is NSNull)
        #expect(python.json?["status"] as? Int == 200)
        #expect((python.json?["headers"] as? [String: String])?["apns-id"]?.count == 36)

        // nghttp over TLS (ALPN h2) and in the clear (prior knowledge).
        let body = p.gateway.state.appendingPathComponent("nghttp.json")
        try Data(#"{"aps":{"alert":"from nghttp"}}"#.utf8).write(to: body)
        for url in [tls, p.gateway.dev] {
            let trace = try run(
                "/usr/bin/env",
                [
                    "nghttp", "-nv", "-d", body.path, "-H", "authorization: bearer \(p.jwt)", "-H",
                    "apns-topic: \(Provisioned.topic)", url + "/3/device/" + p.token,
                ])
            #expect(trace.status == 0, "\(trace.stderr)")
            #expect(trace.stdout.contains(":status: 200"), "\(url): \(trace.stdout)")
        }

        // A bad request line on the development listener is answered 400 by the first bytes' check.
        let bad = try curl(["--http1.1", "-X", "GET /x", p.gateway.dev + "/"])
        #expect(bad.status == 400, "\(bad)")
        #expect(p.gateway.stop() == 0)
    }

    @Test func halfPrefacesSilenceAndGarbageAreClosedWithAReason() throws {
        let g = try GatewayProcess(arguments: ["--first-bytes-timeout", "2"])
        let dev = URL.port(g.dev)
        let admin = URL.port(g.admin)
        let link = URL.port(g.info.linkDevelopmentURL)
        let ports: [(String, Int)] = [
            ("provider API", URL.port(g.tls)), ("development listener", dev), ("device link", link),
            ("admin API", admin), ("binary gateway", Int(g.info.binaryAddress!.split(separator: ":")[1])!),
            ("feedback service", Int(g.info.feedbackAddress!.split(separator: ":")[1])!),
        ]
        // Silent clients on every listener, half a preface, and a request head that never ends.
        let silent = try ports.map { ($0.0, try RawSocket(port: $0.1)) }
        let halfPreface = try RawSocket(port: dev)
        halfPreface.send("PRI * HTTP/2.0\r\n\r\n")
        let slowHead = try RawSocket(port: dev)
        slowHead.send("POST /3/device/00 HTTP/1.1\r\nhost: localhost\r\napns-top")
        // The admin API's sign-in is open to anyone: a body that stops short of its length is closed
        // at the same deadline from its head (Hummingbird's idle deadline would wait 60 s, and
        // restart at every byte).
        let slowBody = try RawSocket(port: admin)
        slowBody.send("POST /console/session HTTP/1.1\r\nhost: localhost\r\ncontent-length: 100000\r\n\r\n{\"to")

        // Garbage is closed at once, and a readable line that is no request gets a 400 first.
        let garbage = try RawSocket(port: dev)
        garbage.send([0x00, 0x01, 0x02, 0xFF])
        let closed = garbage.readUntilClosed()
        #expect(closed.closed && closed.text.isEmpty && closed.after < 1.5, "\(closed)")
        for port in [dev, admin, link] {
            let hello = try RawSocket(port: port)
            hello.send("HELLO THERE\r\n")
            let answer = hello.readUntilClosed()
            #expect(answer.closed && answer.after < 1.5, "\(port): \(answer)")
            #expect(answer.text.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(port): \(answer.text)")
            #expect(answer.text.hasSuffix("not an HTTP/1.x request line: \"HELLO THERE\"\n"), "\(answer.text)")
        }
        // The device link and the admin API speak HTTP/1.1 only: an HTTP/2 preface is closed at once.
        for port in [admin, link] {
            let h2 = try RawSocket(port: port)
            h2.send("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            let answer = h2.readUntilClosed()
            #expect(answer.closed && answer.text.isEmpty && answer.after < 1.5, "\(port): \(answer)")
        }

        // The rest are closed at the first-bytes deadline (2 s here), not before.
        for (name, socket) in silent + [
            ("half preface", halfPreface), ("slow head", slowHead), ("admin API's slow body", slowBody),
        ] {
            let end = socket.readUntilClosed()
            #expect(end.closed, "\(name) was not closed")
            #expect(end.after >= 1.9 && end.after < 8, "\(name) closed after \(end.after) s")
        }
        // Each closed connection is counted by listener.
        let metrics = try g.adminCall("GET", "/metrics").body
        for (listener, least) in [
            ("development listener", 4), ("admin API", 3), ("device link", 3), ("provider API", 1),
            ("binary gateway", 1), ("feedback service", 1),
        ] {
            let line = metrics.split(separator: "\n").first {
                $0.hasPrefix("herald_connections_refused_total{listener=\"\(listener)\"}")
            }
            let count = line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
            #expect(count >= least, "\(listener): \(line ?? "no line")")
        }
        // And the gateway still answers.
        #expect(try g.adminCall("GET", "/healthz").status == 200)
        #expect(g.stop() == 0)
    }

    /// `--max-connections-per-address` and `--link-max-connections-per-address`: a connection from
    /// an address that holds the limit already is closed at once, before anything is read, counted
    /// and logged (at most once per 10 s), on the provider API, the device link, the binary gateway,
    /// the feedback service and the channel management API, each limited on its own; those held go
    /// on; once one of them closes, another is taken. The
    /// development listener, loopback only, has no limit. One event loop each, so that connections
    /// are admitted in the order they are made.
    @Test func aConnectionOverTheLimitPerAddressIsClosedAtOnce() throws {
        let p = try Provisioned(arguments: [
            "--max-connections-per-address", "1", "--link-max-connections-per-address", "1", "--threads", "1",
            "--link-threads", "1",
        ])
        let g = p.gateway
        let tls = URL.port(g.tls)
        let link = URL.port(g.info.linkDevelopmentURL)
        // Every raw socket is closed before the gateway stops (a stop waits for open connections).
        do {
            // The device link: one held (and answered: its upgrade gets the 101), one more closed at once.
            let heldLink = try RawSocket(port: link)
            heldLink.send(
                "GET /device/v1 HTTP/1.1\r\nhost: localhost\r\nupgrade: websocket\r\nconnection: upgrade\r\n"
                    + "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n\r\n")
            #expect(heldLink.readHead().text.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
            // The provider API (TLS): one held, silent; two more closed at once, with nothing sent.
            var held: RawSocket? = try RawSocket(port: tls)
            for (port, name) in [(link, "device link"), (tls, "provider API"), (tls, "provider API")] {
                let over = try RawSocket(port: port)
                let end = over.readUntilClosed()
                #expect(end.closed && end.text.isEmpty && end.after < 1.5, "\(name): \(end)")
            }
            // The binary gateway, the feedback service and the channel management API (TLS, each
            // limited on its own): one held each, one more closed at once.
            func port(ofAddress address: String?) throws -> Int {
                try #require(address.flatMap { $0.split(separator: ":").last.flatMap { Int($0) } })
            }
            let others = [
                (try port(ofAddress: g.info.binaryAddress), "binary gateway"),
                (try port(ofAddress: g.info.feedbackAddress), "feedback service"),
                (URL.port(g.info.channelsURL), "channel management API"),
            ]
            let heldOthers = try others.map { try RawSocket(port: $0.0) }
            for (port, name) in others {
                let over = try RawSocket(port: port)
                let end = over.readUntilClosed()
                #expect(end.closed && end.text.isEmpty && end.after < 1.5, "\(name): \(end)")
            }
            // The held ones are open still (admitted first, they would have been closed before these).
            #expect(held?.isOpen == true && heldLink.isOpen)
            #expect(heldOthers.allSatisfy { $0.isOpen })
            // The development listener has no limit: two held, and curl is answered beside them.
            let dev = try (0..<2).map { _ in try RawSocket(port: URL.port(g.dev)) }
            #expect(try p.push().status == 200)
            let devOpen = dev.allSatisfy { $0.isOpen }
            #expect(devOpen)
            // The held TLS connection closes: the gateway frees its place as it sees the close, and
            // curl over TLS is answered then (polled for, within 10 s).
            held = nil
            let deadline = Date().addingTimeInterval(10)
            // (curl fails while its connection is still refused: that is tried again.)
            var answered = try? p.push(g.tls, http: "--http2", extra: ["--cacert", g.ca])
            while answered?.status != 200 && Date() < deadline {
                answered = try? p.push(g.tls, http: "--http2", extra: ["--cacert", g.ca])
            }
            #expect(answered?.status == 200, "\(String(describing: answered))")
        }
        let metrics = try g.adminCall("GET", "/metrics").body
        for (listener, least) in [
            ("provider API", 2), ("device link", 1), ("binary gateway", 1), ("feedback service", 1),
            ("channel management API", 1),
        ] {
            let line = metrics.split(separator: "\n").first {
                $0.hasPrefix("herald_connections_refused_total{listener=\"\(listener)\"}")
            }
            let count = line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
            #expect(count >= least, "\(listener): \(line ?? "none")")
        }
        // Logged at most once per 10 s on each listener, not once per connection (a sixth line if
        // curl was refused for 10 s after the provider API's first).
        let refusals = g.log.components(separatedBy: "\n").filter {
            $0.contains("127.0.0.1 holds 1 connection already (the limit per address)")
        }
        #expect((5...6).contains(refusals.count), "\(refusals)")
        for listener in ["binary gateway", "feedback service", "channel management API"] {
            #expect(refusals.contains { $0.contains("listener=\(listener) ") }, "\(listener): \(refusals)")
        }
        #expect(g.stop() == 0)
    }

    /// Signs a token with `header` and `claims` as given (JSON text), the way any client library might.
    static func token(header: String, claims: String, key: P256.Signing.PrivateKey) throws -> String {
        let input = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data(claims.utf8))
        let signature = try key.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }

    @Test func providerTokensInEveryFormRealClientsSend() throws {
        let p = try Provisioned()
        let key = try P256.Signing.PrivateKey(pemRepresentation: try String(contentsOfFile: p.p8, encoding: .utf8))
        let other = P256.Signing.PrivateKey()
        let now = Date().timeIntervalSince1970
        let whole = Int64(now)
        let header = #"{"alg":"ES256","kid":"\#(Provisioned.key)"}"#
        func claims(_ iat: String, iss: String = Provisioned.team) -> String { #"{"iss":"\#(iss)","iat":\#(iat)}"# }
        let fraction = String(format: "%.6f", now)
        let cases: [(String, String, P256.Signing.PrivateKey, Int, String?)] = [
            ("iat an integer", claims("\(whole)"), key, 200, nil),
            ("iat a fraction, straight from the clock", claims(fraction), key, 200, nil),
            ("iat a string", claims("\"\(whole)\""), key, 200, nil),
            ("iat a fraction in a string", claims("\"\(fraction)\""), key, 200, nil),
            ("iat within the stated skew ahead", claims("\(whole + 200)"), key, 200, nil),
            (
                "extra claims",
                #"{"iss":"\#(Provisioned.team)","iat":\#(whole),"kid":"\#(Provisioned.key)","jti":"x"}"#,
                key, 200, nil
            ),
            ("a bad signature", claims("\(whole)"), other, 403, "InvalidProviderToken"),
            ("a wrong team", claims("\(whole)", iss: "OTHER12345"), key, 403, "InvalidProviderToken"),
            ("iat older than an hour", claims("\(whole - 3601)"), key, 403, "ExpiredProviderToken"),
            ("iat too far ahead", claims("\(whole + 400)"), key, 403, "InvalidProviderToken"),
            ("iat not a number", claims("\"soon\""), key, 403, "InvalidProviderToken"),
        ]
        for (name, body, signer, status, reason) in cases {
            let jwt = try Self.token(header: header, claims: body, key: signer)
            let r = try p.push(headers: ["authorization: bearer \(jwt)"], auth: false)
            #expect(r.status == status, "\(name): \(r.status) \(r.body)")
            #expect(r.reason == reason, "\(name): \(r.body)")
        }
        // Extra header fields, and an unknown key.
        let typ = try Self.token(
            header: #"{"alg":"ES256","kid":"\#(Provisioned.key)","typ":"JWT","x5t":"y"}"#, claims: claims(fraction),
            key: key)
        #expect(try p.push(headers: ["authorization: bearer \(typ)"], auth: false).status == 200)
        let unknown = try Self.token(
            header: #"{"alg":"ES256","kid":"NOKEY12345"}"#, claims: claims("\(whole)"), key: key)
        #expect(try p.push(headers: ["authorization: bearer \(unknown)"], auth: false).reason == "InvalidProviderToken")

        // The Python client that failed before: no ALPN, and a fractional iat.
        let python = try pythonClient(
            "h2_no_alpn.py",
            [
                "localhost", "\(URL.port(p.gateway.tls))", "/3/device/\(p.token)", p.gateway.ca,
                #"{"aps":{"alert":"x"}}"#,
                "authorization: bearer \(try Self.token(header: header, claims: claims(fraction), key: key))",
                "apns-topic: \(Provisioned.topic)",
            ])
        #expect(python.json?["status"] as? Int == 200, "\(python.json ?? [:]) \(python.stderr)")
        #expect(p.gateway.stop() == 0)
    }
}

/// `herald gateway --capture FILE`: the provider API's traffic after TLS, as a pcap file.
@Suite(.serialized, .ownThread) struct CaptureEndToEndTests {
    @Test func theProviderAPIsTrafficAfterTLSIsCapturedForTshark() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-capture-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("provider.pcap").path
        let p = try Provisioned(arguments: ["--capture", file])
        let body = #"{"aps":{"alert":"captured after TLS"}}"#
        let tls = try p.push(p.gateway.tls, body: body, http: "--http2", extra: ["--cacert", p.gateway.ca])
        #expect(tls.status == 200)
        let h1 = try p.push(body: #"{"aps":{"alert":"and in cleartext"}}"#, http: "--http1.1")
        #expect(h1.status == 200)
        // The file is written as the gateway goes; stopping it writes the rest and closes it.
        #expect(p.gateway.stop() == 0)

        let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        // A pcap file (magic number, either byte order) …
        #expect([Data([0xd4, 0xc3, 0xb2, 0xa1]), Data([0xa1, 0xb2, 0xc3, 0xd4])].contains(bytes.prefix(4)))
        // … holding the HTTP/2 connection preface and the payload as the client sent them: plain, not TLS.
        #expect(bytes.range(of: Data("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)) != nil)
        #expect(bytes.range(of: Data(body.utf8)) != nil)
        // The development listener's HTTP/1.1 request too, and the gateway's answer to it.
        #expect(bytes.range(of: Data("and in cleartext".utf8)) != nil)
        #expect(bytes.range(of: Data("HTTP/1.1 200 OK".utf8)) != nil)
        // Readable by its owner only: it holds tokens.
        let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func aCaptureFileThatCannotBeCreatedIsAnError() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("herald-capture-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: state) }
        let r = try run(
            try heraldExecutable().path,
            [
                "gateway", "--state", state.path, "--port", "0", "--dev-port", "0", "--admin-port", "0",
                "--link-port", "0", "--no-legacy", "--no-channels", "--capture", "/nonexistent-directory/provider.pcap",
            ])
        #expect(r.status != 0)
        #expect(r.stderr.contains("cannot create the packet capture file /nonexistent-directory/provider.pcap"))
    }
}
