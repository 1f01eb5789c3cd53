/// What the first bytes of a connection say it speaks, when TLS did not say (no ALPN, or cleartext).
///
/// - The HTTP/2 connection preface (`PRI * HTTP/2.0␍␊␍␊SM␍␊␍␊`): HTTP/2.
/// - An HTTP/1.x request line (`METHOD SP target SP HTTP/1.x`, after any empty lines): HTTP/1.1.
/// - Anything else is refused: at once when a byte shows it cannot become either, with a 400 when a
///   whole line was readable (it was text, just not a request line).
public enum FirstBytes {
    /// The verdict on the bytes read so far.
    public enum Verdict: Equatable, Sendable {
        /// Not enough bytes to tell yet.
        case needMore
        /// The whole HTTP/2 preface.
        case http2
        /// A complete HTTP/1.0 or HTTP/1.1 request line.
        case http1
        /// Neither, and it cannot become either. `badRequest`: a line of text was readable, so the
        /// peer speaks something line-based and gets `400 Bad Request` before the close.
        case refuse(reason: String, badRequest: Bool)
    }

    /// The HTTP/2 connection preface (RFC 9113 §3.4).
    public static let http2Preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    /// The longest request line waited for.
    public static let maximumLine = 8192

    /// Classifies the first bytes of a connection.
    public static func classify(_ bytes: some BidirectionalCollection<UInt8>) -> Verdict {
        if bytes.isEmpty { return .needMore }
        // The preface, or the start of it.
        let n = min(bytes.count, http2Preface.count)
        if bytes.prefix(n).elementsEqual(http2Preface.prefix(n)) {
            return n == http2Preface.count ? .http2 : .needMore
        }
        // Empty lines before a request line are allowed (RFC 9112 §2.2).
        var line = bytes.drop(while: { $0 == 0x0D || $0 == 0x0A })[...]
        if line.isEmpty { return bytes.count > 4 ? .refuse(reason: "only empty lines", badRequest: false) : .needMore }
        if line.first == 0x16 {
            return .refuse(
                reason: "a TLS handshake on a cleartext listener (use http://, or the TLS port)", badRequest: false)
        }
        guard let end = line.firstIndex(of: 0x0A) else {
            // No whole line yet: refuse as soon as a byte cannot be part of one.
            if let bad = line.firstIndex(where: { !isLineByte($0) && $0 != 0x0D }) {
                return .refuse(
                    reason: describe(line[bad], at: line.distance(from: line.startIndex, to: bad)), badRequest: false)
            }
            if let first = line.first, !isTokenByte(first) {
                return .refuse(reason: "the first byte \(hex(first)) cannot begin a request line", badRequest: false)
            }
            if line.count > maximumLine {
                return .refuse(reason: "no line end within \(maximumLine) bytes", badRequest: true)
            }
            return .needMore
        }
        line = line[..<end]
        if line.last == 0x0D { line = line.dropLast() }
        if let bad = line.firstIndex(where: { !isLineByte($0) }) {
            return .refuse(
                reason: describe(line[bad], at: line.distance(from: line.startIndex, to: bad)), badRequest: false)
        }
        return isRequestLine(line)
            ? .http1
            : .refuse(reason: "not an HTTP/1.x request line: \(quote(line))", badRequest: true)
    }

    /// `method SP request-target SP HTTP/1.x` (RFC 9112 §3).
    static func isRequestLine(_ line: some Collection<UInt8>) -> Bool {
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy(isTokenByte), !parts[1].isEmpty else {
            return false
        }
        let version = Array(parts[2])
        return version.count == 8 && version[0..<7].elementsEqual("HTTP/1.".utf8)
            && (version[7] == 0x30 || version[7] == 0x31)
    }

    /// `tchar` (RFC 9110 §5.6.2): what a method is made of.
    static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default: return false
        }
    }

    /// Printable ASCII, space and tab: what a request line may hold.
    static func isLineByte(_ b: UInt8) -> Bool { (0x20...0x7E).contains(b) || b == 0x09 }

    static func hex(_ b: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return "0x" + String(digits[Int(b >> 4)]) + String(digits[Int(b & 0xF)])
    }

    static func describe(_ b: UInt8, at offset: Int) -> String {
        "byte \(hex(b)) at offset \(offset) is not text: not HTTP/1.x, and not the HTTP/2 preface"
    }

    static func quote(_ line: some Collection<UInt8>) -> String {
        let shown = String(decoding: line.prefix(80), as: UTF8.self)
        return "\"" + shown + (line.count > 80 ? "…" : "") + "\""
    }
}
