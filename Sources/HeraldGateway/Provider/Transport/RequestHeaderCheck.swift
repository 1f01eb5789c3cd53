/// Whether a request's HTTP/2 header block is well formed (RFC 9113, sections 8.2 and 8.3.1), checked
/// field by field in the one pass that also reads the request (``ProviderConnectionStateMachine``).
///
/// swift-nio-http2 can check the same, but only in both directions at once and in a pass of its own
/// over every field; the provider API turns that off (``ProviderPipeline``) and checks what a client
/// sends here. A malformed block is a stream error: the stream is reset with PROTOCOL_ERROR, as the
/// codec would, and the connection goes on.
///
/// - Pseudo-header fields: only `:method`, `:scheme`, `:path` and `:authority`, each at most once, all
///   before the first regular field, their values without controls, space or DEL; `:path` not empty;
///   `:method`, `:scheme` and `:path` present. (The gateway serves no CONNECT.)
/// - Regular fields: names of lowercase token characters, none of the connection-specific fields
///   (`connection`, `keep-alive`, `proxy-connection`, `transfer-encoding`, `upgrade`), `te` only as
///   `trailers`; values without NUL, CR or LF.
/// - `content-length` (RFC 9110, section 8.6): digits, or a list of the same digits separated by
///   commas; every such field the same number. The number is ``contentLength``, which the body must
///   match (RFC 9113, section 8.1.1): the connection's state machine counts it, since the codec's own
///   count is off too.
/// - Trailers: regular fields only.
struct RequestHeaderCheck {
    private struct Seen: OptionSet {
        var rawValue: UInt8
        static let method = Seen(rawValue: 1)
        static let scheme = Seen(rawValue: 2)
        static let path = Seen(rawValue: 4)
        static let authority = Seen(rawValue: 8)
        static let regular = Seen(rawValue: 16)
    }
    private var seen: Seen = []
    private let trailers: Bool
    /// The request's `content-length`, when it gave one.
    private(set) var contentLength: Int?

    /// A check of a request's first header block, or (`trailers`) of its trailers.
    init(trailers: Bool = false) { self.trailers = trailers }

    /// Whether the block read so far, with this field, is still well formed.
    mutating func accept(name: String, value: String) -> Bool {
        ASCIICase.withUTF8(name, value) { name, value in accept(name: name, value: value) }
    }

    /// Whether every mandatory pseudo-header field came.
    var isComplete: Bool { trailers || seen.isSuperset(of: [.method, .scheme, .path]) }

    private mutating func accept(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = name.first else { return false }
        if first == UInt8(ascii: ":") {
            guard !trailers, !seen.contains(.regular), let field = Self.pseudoField(name) else { return false }
            guard !seen.contains(field), Self.isPseudoValue(value) else { return false }
            if field == .path && value.isEmpty { return false }
            seen.insert(field)
            return true
        }
        seen.insert(.regular)
        guard Self.isTokenName(name), Self.isFieldValue(value) else { return false }
        switch name.count {
        case 2: return !Self.equals(name, "te") || Self.equals(value, "trailers")
        case 7: return !Self.equals(name, "upgrade")
        case 10: return !Self.equals(name, "connection") && !Self.equals(name, "keep-alive")
        case 14 where !trailers && Self.equals(name, "content-length"):
            guard let length = Self.contentLength(value), contentLength == nil || contentLength == length else {
                return false
            }
            contentLength = length
            return true
        case 16: return !Self.equals(name, "proxy-connection")
        case 17: return !Self.equals(name, "transfer-encoding")
        default: return true
        }
    }

    private static func pseudoField(_ name: UnsafeBufferPointer<UInt8>) -> Seen? {
        switch name.count {
        case 5: return equals(name, ":path") ? .path : nil
        case 7: return equals(name, ":method") ? .method : equals(name, ":scheme") ? .scheme : nil
        case 10: return equals(name, ":authority") ? .authority : nil
        default: return nil
        }
    }

    private static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
        bytes.count == text.utf8CodeUnitCount
            && bytes.elementsEqual(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// RFC 9110's token characters without uppercase letters (HTTP/2 names are lowercase).
    private static func isTokenName(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        for byte in name {
            switch byte {
            case 0x21, 0x23...0x27, 0x2a, 0x2b, 0x2d, 0x2e, 0x30...0x39, 0x5e...0x7a, 0x7c, 0x7e: continue
            default: return false
            }
        }
        return true
    }

    /// A `content-length` value: digits (at most 18), or the same digits repeated in a list separated
    /// by commas and optional spaces or tabs (RFC 9110, section 8.6); `nil` for anything else.
    private static func contentLength(_ value: UnsafeBufferPointer<UInt8>) -> Int? {
        var length: Int?
        var i = 0
        while true {
            while i < value.count, value[i] == 0x20 || value[i] == 0x09 { i += 1 }
            let start = i
            var number = 0
            while i < value.count, value[i] >= 0x30, value[i] <= 0x39, i - start < 18 {
                number = number * 10 + Int(value[i] - 0x30)
                i += 1
            }
            guard i > start, length == nil || length == number else { return nil }
            length = number
            while i < value.count, value[i] == 0x20 || value[i] == 0x09 { i += 1 }
            if i == value.count { return length }
            guard value[i] == UInt8(ascii: ",") else { return nil }
            i += 1
        }
    }

    /// No NUL, CR or LF (RFC 9113, section 8.2.1).
    private static func isFieldValue(_ value: UnsafeBufferPointer<UInt8>) -> Bool {
        for byte in value where byte == 0 || byte == 0x0a || byte == 0x0d { return false }
        return true
    }

    /// No controls, space or DEL: a pseudo-header's value becomes part of a request line.
    private static func isPseudoValue(_ value: UnsafeBufferPointer<UInt8>) -> Bool {
        for byte in value where byte <= 0x20 || byte == 0x7f { return false }
        return true
    }
}
