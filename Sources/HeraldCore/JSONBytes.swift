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

    /// Appends literal text (keys and punctuation) unchanged.
    public mutating func raw(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends `s` as a JSON string literal, quotes included: `"`, `\` and control characters
    /// are escaped; everything else is copied as UTF-8.
    public mutating func string(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
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
        bytes.append(UInt8(ascii: "\""))
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

    /// Parses `bytes` as one flat JSON object, or answers `nil`.
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> [String: Value]? {
        var result: [String: Value] = [:]
        let read = forEachField(of: bytes) { key, value in result.updateValue(value, forKey: key) == nil }
        return read ? result : nil
    }

    /// Reads `bytes` as one flat JSON object, handing each field to `field` in order, without
    /// building a dictionary; `false` when the text is not such an object or `field` answered `false`
    /// (then fields before the fault have been handed over already).
    public static func forEachField(
        of bytes: UnsafeRawBufferPointer, _ field: (String, Value) -> Bool
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

        mutating func object(_ field: (String, Value) -> Bool) -> Bool {
            guard expect(UInt8(ascii: "{")) else { return false }
            if peek() == UInt8(ascii: "}") {
                i += 1
            } else {
                while true {
                    guard peek() == UInt8(ascii: "\""), let key = string(), expect(UInt8(ascii: ":")),
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

        mutating func value() -> Value? {
            guard let first = peek() else { return nil }
            switch first {
            case UInt8(ascii: "\""): return string().map(Value.string)
            case UInt8(ascii: "["):
                i += 1
                var items: [String] = []
                if peek() == UInt8(ascii: "]") {
                    i += 1
                    return .strings(items)
                }
                while true {
                    guard peek() == UInt8(ascii: "\""), let item = string() else { return nil }
                    items.append(item)
                    if expect(UInt8(ascii: ",")) { continue }
                    return expect(UInt8(ascii: "]")) ? .strings(items) : nil
                }
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return integer().map(Value.integer)
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
        mutating func string() -> String? {
            i += 1
            let start = i
            var ascii = true
            while i < bytes.count {
                let c = bytes[i]
                if c == UInt8(ascii: "\"") {
                    let text = UnsafeRawBufferPointer(rebasing: bytes[start..<i])
                    i += 1
                    // ASCII is valid UTF-8 as it stands; anything else is checked.
                    return ascii ? String(decoding: text, as: UTF8.self) : String(validating: text, as: UTF8.self)
                }
                if c >= 0x80 { ascii = false }
                if c == UInt8(ascii: "\\") {
                    i = start
                    return escapedString()
                }
                if c < 0x20 { return nil }
                i += 1
            }
            return nil
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
