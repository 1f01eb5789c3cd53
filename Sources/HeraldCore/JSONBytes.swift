import Foundation

/// Writes JSON by hand into bytes, for hot paths where a `JSONEncoder` costs more than the rest
/// of the work (a device-link `push` goes out for every notification; a delivery-log record is
/// written for every push).
///
/// The caller writes the punctuation and keys with ``raw(_:)``; values go through the typed
/// methods, which quote and escape.
public struct JSONWriter {
    /// What has been written.
    public private(set) var bytes: [UInt8]

    /// Starts empty, with room for `capacity` bytes.
    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Empties the writer, keeping its capacity for what is written next.
    public mutating func clear() { bytes.removeAll(keepingCapacity: true) }

    /// Appends literal text (keys and punctuation) unchanged.
    public mutating func raw(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends the UTF-8 of `s` unchanged, for text kept next to the JSON (the writer also lays out
    /// the values of a database row end to end).
    public mutating func text(_ s: String) {
        var s = s
        s.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// Appends one byte unchanged, for a binary record laid out beside the JSON (the delivery log's
    /// record of a delivered push).
    public mutating func byte(_ value: UInt8) { bytes.append(value) }

    /// Appends `s` as a JSON string literal, quotes included: `"`, `\` and control characters
    /// are escaped; everything else is copied as UTF-8.
    public mutating func string(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        stringContent(s)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends `s` escaped as in ``string(_:)`` but without the quotes, for a string literal
    /// written in pieces (the caller writes the quotes).
    public mutating func stringContent(_ s: String) {
        var s = s
        s.withUTF8 { utf8 in
            var start = 0
            for i in 0..<utf8.count {
                let c = utf8[i]
                guard c < 0x20 || c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<i]))
                start = i + 1
                bytes.append(UInt8(ascii: "\\"))
                switch c {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(c)
                case UInt8(ascii: "\n"): bytes.append(UInt8(ascii: "n"))
                case UInt8(ascii: "\r"): bytes.append(UInt8(ascii: "r"))
                case UInt8(ascii: "\t"): bytes.append(UInt8(ascii: "t"))
                default:
                    bytes.append(contentsOf: [UInt8(ascii: "u"), 0x30, 0x30])
                    bytes.append(Self.hexDigits[Int(c >> 4)])
                    bytes.append(Self.hexDigits[Int(c & 0x0F)])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
    }

    /// Appends an integer.
    public mutating func integer(_ value: Int64) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits = 0
        var probe = magnitude
        repeat {
            digits += 1
            probe /= 10
        } while probe > 0
        // Digits are written from the last one back, in place.
        let first = bytes.count
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: digits))
        bytes.withUnsafeMutableBufferPointer { out in
            var i = first + digits
            repeat {
                i -= 1
                out[i] = UInt8(truncatingIfNeeded: magnitude % 10) &+ 0x30
                magnitude /= 10
            } while magnitude > 0
        }
    }

    /// Appends `bytes` as a quoted lowercase hex string.
    public mutating func hex(_ data: [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for b in data {
            bytes.append(Self.hexDigits[Int(b >> 4)])
            bytes.append(Self.hexDigits[Int(b & 0x0F)])
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends `data` as a quoted base64 string (standard alphabet, padded: what `JSONDecoder`
    /// reads as `Data`).
    public mutating func base64(_ data: Data) {
        bytes.append(UInt8(ascii: "\""))
        let length = (data.count + 2) / 3 * 4
        // Encoded in place, into room made at the end.
        let first = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: length))
        bytes.withUnsafeMutableBufferPointer { whole in
            let out = UnsafeMutableBufferPointer(rebasing: whole[first...])
            data.withUnsafeBytes { (input: UnsafeRawBufferPointer) in
                Self.base64Alphabet.withUnsafeBufferPointer { alphabet in
                    var i = 0
                    var o = 0
                    while i + 3 <= input.count {
                        let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
                        out[o] = alphabet[Int(n >> 18)]
                        out[o + 1] = alphabet[Int(n >> 12 & 63)]
                        out[o + 2] = alphabet[Int(n >> 6 & 63)]
                        out[o + 3] = alphabet[Int(n & 63)]
                        i += 3
                        o += 4
                    }
                    let rest = input.count - i
                    if rest > 0 {
                        let n = UInt32(input[i]) << 16 | (rest == 2 ? UInt32(input[i + 1]) << 8 : 0)
                        out[o] = alphabet[Int(n >> 18)]
                        out[o + 1] = alphabet[Int(n >> 12 & 63)]
                        out[o + 2] = rest == 2 ? alphabet[Int(n >> 6 & 63)] : UInt8(ascii: "=")
                        out[o + 3] = UInt8(ascii: "=")
                        o += 4
                    }
                }
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
    static let base64Alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
}

/// Base64 read without Foundation, for the device link's payloads.
enum Base64 {
    /// Decodes standard, padded base64 in its canonical form (what ``JSONWriter/base64(_:)`` and
    /// Foundation write); `nil` for anything else (other characters, missing padding, stray bits),
    /// which the caller leaves to Foundation so that what is accepted stays exactly what
    /// `Data(base64Encoded:)` accepts.
    static func decodeCanonical(_ text: UnsafeRawBufferPointer) -> Data? {
        let n = text.count
        guard n % 4 == 0 else { return nil }
        if n == 0 { return Data() }
        let padding = text[n - 1] != UInt8(ascii: "=") ? 0 : text[n - 2] != UInt8(ascii: "=") ? 1 : 2
        var data = Data(count: n / 4 * 3 - padding)
        let valid = data.withUnsafeMutableBytes { (out: UnsafeMutableRawBufferPointer) -> Bool in
            decodeTable.withUnsafeBufferPointer { (table: UnsafeBufferPointer<UInt8>) -> Bool in
                let full = padding == 0 ? n : n - 4
                var i = 0
                var o = 0
                while i < full {
                    let a = table[Int(text[i])]
                    let b = table[Int(text[i + 1])]
                    let c = table[Int(text[i + 2])]
                    let d = table[Int(text[i + 3])]
                    guard (a | b | c | d) & 0x80 == 0 else { return false }
                    let v = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    out[o] = UInt8(truncatingIfNeeded: v >> 16)
                    out[o + 1] = UInt8(truncatingIfNeeded: v >> 8)
                    out[o + 2] = UInt8(truncatingIfNeeded: v)
                    i += 4
                    o += 3
                }
                guard padding > 0 else { return true }
                let a = table[Int(text[i])]
                let b = table[Int(text[i + 1])]
                guard (a | b) & 0x80 == 0 else { return false }
                out[o] = a << 2 | b >> 4
                if padding == 2 { return b & 0x0F == 0 }
                let c = table[Int(text[i + 2])]
                guard c & 0x80 == 0, c & 0x03 == 0 else { return false }
                out[o + 1] = (b & 0x0F) << 4 | c >> 2
                return true
            }
        }
        return valid ? data : nil
    }

    /// Each byte's 6-bit value in the standard alphabet; 0xFF for every other byte (`=` included).
    static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, c) in JSONWriter.base64Alphabet.enumerated() { table[Int(c)] = UInt8(value) }
        return table
    }()
}

/// Reads a JSON object whose values are all strings, integers or arrays of strings, without
/// `JSONDecoder`: the device link's `push` and `ack` messages, one per notification each way.
///
/// It answers `nil` for anything else (nested objects, other numbers, `true`, `null`, repeated
/// keys, invalid UTF-8, malformed text); the caller then decodes with `JSONDecoder`, whose errors
/// name the field. So it only ever speeds up what `JSONDecoder` would also accept.
public enum FlatJSONObject {
    /// A value of a flat object.
    public enum Value: Equatable, Sendable {
        /// A string.
        case string(String)
        /// An integer that fits in 64 bits.
        case integer(Int64)
        /// An array of strings.
        case strings([String])
    }

    /// A string as it stands in the text: for readers that convert it themselves, without making
    /// a `String` of it first.
    public enum Text {
        /// The literal was ASCII without escapes: its bytes, pointing into the input (valid only
        /// during the call that hands them over).
        case bytes(UnsafeRawBufferPointer)
        /// The literal had escapes or non-ASCII text: the string it stands for (checked UTF-8).
        case unescaped(String)

        /// The string it stands for.
        public var string: String {
            switch self {
            case .bytes(let bytes): return String(decoding: bytes, as: UTF8.self)
            case .unescaped(let string): return string
            }
        }
    }

    /// A value of a flat object as ``forEachRawField(of:_:)`` hands it over.
    public enum RawValue {
        /// A string.
        case text(Text)
        /// An integer that fits in 64 bits.
        case integer(Int64)
        /// An array of strings.
        case strings([String])
    }

    /// Parses `bytes` as one flat JSON object, or answers `nil` (the whole reader at once, as the
    /// tests compare it with Foundation).
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> [String: Value]? {
        var result: [String: Value] = [:]
        let read = forEachRawField(of: bytes) { key, raw in
            let value: Value
            switch raw {
            case .text(let text): value = .string(text.string)
            case .integer(let n): value = .integer(n)
            case .strings(let items): value = .strings(items)
            }
            return result.updateValue(value, forKey: key.string) == nil
        }
        return read ? result : nil
    }

    /// Reads `bytes` as one flat JSON object, handing each field to `field` in order, without
    /// building a dictionary; keys and string values come as they stand in the text, so that a
    /// reader that knows its fields compares keys and converts values (hex, base64) without a
    /// `String` in between. `false` when the text is not such an object or `field` answered `false`
    /// (then fields before the fault have been handed over already).
    public static func forEachRawField(
        of bytes: UnsafeRawBufferPointer, _ field: (Text, RawValue) -> Bool
    ) -> Bool {
        var reader = Reader(bytes: bytes)
        return reader.object(field)
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var i = 0

        mutating func skipSpace() {
            while i < bytes.count {
                switch bytes[i] {
                case 0x20, 0x09, 0x0A, 0x0D: i += 1
                default: return
                }
            }
        }

        mutating func expect(_ c: UInt8) -> Bool {
            skipSpace()
            guard i < bytes.count, bytes[i] == c else { return false }
            i += 1
            return true
        }

        mutating func peek() -> UInt8? {
            skipSpace()
            return i < bytes.count ? bytes[i] : nil
        }

        mutating func object(_ field: (Text, RawValue) -> Bool) -> Bool {
            guard expect(UInt8(ascii: "{")) else { return false }
            if peek() == UInt8(ascii: "}") {
                i += 1
            } else {
                while true {
                    guard peek() == UInt8(ascii: "\""), let key = text(), expect(UInt8(ascii: ":")),
                        let value = value(), field(key, value)
                    else { return false }
                    if expect(UInt8(ascii: ",")) { continue }
                    guard expect(UInt8(ascii: "}")) else { return false }
                    break
                }
            }
            skipSpace()
            return i == bytes.count
        }

        mutating func value() -> RawValue? {
            guard let first = peek() else { return nil }
            switch first {
            case UInt8(ascii: "\""): return text().map(RawValue.text)
            case UInt8(ascii: "["):
                i += 1
                var items: [String] = []
                if peek() == UInt8(ascii: "]") {
                    i += 1
                    return .strings(items)
                }
                while true {
                    guard peek() == UInt8(ascii: "\""), let item = text() else { return nil }
                    items.append(item.string)
                    if expect(UInt8(ascii: ",")) { continue }
                    return expect(UInt8(ascii: "]")) ? .strings(items) : nil
                }
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return integer().map(RawValue.integer)
            default: return nil
            }
        }

        /// An integer as RFC 8259 writes one (no leading zeros, no fraction or exponent).
        mutating func integer() -> Int64? {
            let negative = bytes[i] == UInt8(ascii: "-")
            if negative { i += 1 }
            let start = i
            var value: Int64 = 0
            while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 {
                let (m, o1) = value.multipliedReportingOverflow(by: 10)
                let (a, o2) = m.addingReportingOverflow(Int64(bytes[i] - 0x30))
                guard !o1, !o2 else { return nil }
                value = a
                i += 1
            }
            let digits = i - start
            guard digits > 0, !(digits > 1 && bytes[start] == 0x30) else { return nil }
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") || bytes[i] | 0x20 == UInt8(ascii: "e") {
                return nil
            }
            return negative ? -value : value
        }

        /// A string literal, the opening quote at `i`.
        mutating func text() -> Text? {
            i += 1
            let start = i
            var ascii = true
            skipPlainWords()
            while i < bytes.count {
                let c = bytes[i]
                if c == UInt8(ascii: "\"") {
                    let text = UnsafeRawBufferPointer(rebasing: bytes[start..<i])
                    i += 1
                    // ASCII is valid UTF-8 as it stands; anything else is checked.
                    if ascii { return .bytes(text) }
                    return String(validating: text, as: UTF8.self).map(Text.unescaped)
                }
                if c >= 0x80 { ascii = false }
                if c == UInt8(ascii: "\\") {
                    i = start
                    return escapedString().map(Text.unescaped)
                }
                if c < 0x20 { return nil }
                i += 1
            }
            return nil
        }

        /// Skips eight bytes at a time while none of them is a quote, a backslash, a control
        /// character or non-ASCII: a base64 payload is hundreds of such bytes. The byte loop after
        /// it looks at whatever is left, so this only ever skips what that loop would pass over.
        mutating func skipPlainWords() {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let high: UInt64 = 0x8080_8080_8080_8080
            // Whether a byte of `v` is below `n` (exact when no byte has its high bit set).
            func hasByteBelow(_ v: UInt64, _ n: UInt64) -> Bool { (v &- ones &* n) & ~v & high != 0 }
            while i + 8 <= bytes.count {
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                if word & high != 0 || hasByteBelow(word, 0x20) || hasByteBelow(word ^ (ones &* 0x22), 1)
                    || hasByteBelow(word ^ (ones &* 0x5C), 1)
                {
                    return
                }
                i += 8
            }
        }

        /// A string literal with escapes, `i` just after the opening quote.
        mutating func escapedString() -> String? {
            var out: [UInt8] = []
            while i < bytes.count {
                let c = bytes[i]
                i += 1
                switch c {
                case UInt8(ascii: "\""):
                    return String(validating: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard i < bytes.count else { return nil }
                    let e = bytes[i]
                    i += 1
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        guard var scalar = hex4() else { return nil }
                        if (0xD800..<0xDC00).contains(scalar) {
                            guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u")
                            else { return nil }
                            i += 2
                            guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let s = Unicode.Scalar(scalar) else { return nil }
                        out.append(contentsOf: UTF8.encode(s)!)
                    default: return nil
                    }
                default:
                    guard c >= 0x20 else { return nil }
                    out.append(c)
                }
            }
            return nil
        }

        mutating func hex4() -> UInt32? {
            guard i + 4 <= bytes.count else { return nil }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = bytes[i]
                let d: UInt8
                switch c {
                case 0x30...0x39: d = c - 0x30
                case 0x41...0x46: d = c - 0x41 + 10
                case 0x61...0x66: d = c - 0x61 + 10
                default: return nil
                }
                v = v << 4 | UInt32(d)
                i += 1
            }
            return v
        }
    }
}
