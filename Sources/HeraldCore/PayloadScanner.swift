/// A single-pass, allocation-free check of a push payload for the provider API's hot path.
///
/// It verifies the body is one well-formed JSON object (RFC 8259) and notes what the gateway
/// needs to know from `aps`: whether it has an alert, sound or badge (to infer the push type)
/// and whether `content-available` is 1. The bytes themselves are forwarded unchanged; the
/// device parses them fully (HeraldCore's `Payload`).
public struct PayloadSummary: Sendable, Equatable {
    /// `aps.alert` is present.
    public var hasAlert = false
    /// `aps.sound` is present.
    public var hasSound = false
    /// `aps.badge` is present.
    public var hasBadge = false
    /// `aps.content-available` is a number other than 0 (`1`, as Apple documents it).
    public var contentAvailable = false

    /// Alert, sound or badge: what makes APNs infer `alert` when `apns-push-type` is absent.
    public var hasUserVisibleContent: Bool { hasAlert || hasSound || hasBadge }

    /// Why a body is not a JSON object.
    public struct ScanError: Error, Equatable, Sendable, CustomStringConvertible {
        /// The byte offset of the problem.
        public var offset: Int
        /// What is wrong there.
        public var message: String
        /// The message and offset.
        public var description: String { "\(message) at byte \(offset)" }
    }

    /// Scans a body's bytes in place.
    public static func scan(_ bytes: UnsafeRawBufferPointer) throws(ScanError) -> PayloadSummary {
        var scanner = Scanner(bytes: bytes)
        return try scanner.document()
    }

    /// Scans raw bytes.
    public static func scan(_ bytes: [UInt8]) throws(ScanError) -> PayloadSummary {
        let result: Result<PayloadSummary, ScanError> = bytes.withUnsafeBytes { raw in
            do throws(ScanError) {
                return .success(try scan(raw))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private struct Scanner {
        let bytes: UnsafeRawBufferPointer
        var i = 0
        var summary = PayloadSummary()

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        func fail(_ message: String) -> ScanError { ScanError(offset: i, message: message) }

        mutating func skipSpace() {
            while i < bytes.count {
                switch bytes[i] {
                case 0x20, 0x09, 0x0A, 0x0D: i += 1
                default: return
                }
            }
        }

        mutating func document() throws(ScanError) -> PayloadSummary {
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "{") else {
                throw fail("the payload must be a JSON object")
            }
            try object(depth: 0, isRoot: true, isAPS: false)
            skipSpace()
            guard i == bytes.count else { throw fail("unexpected data after the JSON object") }
            return summary
        }

        /// Key classification inside `aps` and at the root.
        enum Key { case other, aps, alert, sound, badge, contentAvailable }

        mutating func object(depth: Int, isRoot: Bool, isAPS: Bool) throws(ScanError) {
            guard depth < 64 else { throw fail("JSON nested too deeply") }
            i += 1  // {
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
                i += 1
                return
            }
            var sawAPS = false
            while true {
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
                let keyStart = i + 1
                try string()
                let keyEnd = i - 1
                var key = Key.other
                if isRoot || isAPS { key = classify(keyStart, keyEnd, isRoot: isRoot) }
                if key == .aps {
                    // Decoders differ on which of two keys wins: a payload with two is refused.
                    if sawAPS {
                        i = keyStart - 1
                        throw fail("duplicate aps key")
                    }
                    sawAPS = true
                }
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                i += 1
                skipSpace()
                guard i < bytes.count else { throw fail("unexpected end of the payload") }
                switch key {
                case .aps where bytes[i] == UInt8(ascii: "{"):
                    try object(depth: depth + 1, isRoot: false, isAPS: true)
                case .alert:
                    summary.hasAlert = true
                    try value(depth: depth + 1)
                case .sound:
                    summary.hasSound = true
                    try value(depth: depth + 1)
                case .badge:
                    summary.hasBadge = true
                    try value(depth: depth + 1)
                case .contentAvailable:
                    let start = i
                    try value(depth: depth + 1)
                    summary.contentAvailable = isNonZeroNumber(start, i)
                default:
                    try value(depth: depth + 1)
                }
                skipSpace()
                guard i < bytes.count else { throw fail("unexpected end of the payload") }
                if bytes[i] == UInt8(ascii: ",") {
                    i += 1
                    continue
                }
                if bytes[i] == UInt8(ascii: "}") {
                    i += 1
                    return
                }
                throw fail("expected ',' or '}'")
            }
        }

        func equals(_ start: Int, _ end: Int, _ literal: StaticString) -> Bool {
            guard end - start == literal.utf8CodeUnitCount else { return false }
            let p = literal.utf8Start
            for k in 0..<(end - start) where bytes[start + k] != p[k] { return false }
            return true
        }

        func classify(_ start: Int, _ end: Int, isRoot: Bool) -> Key {
            var escaped = false
            for k in start..<end where bytes[k] == UInt8(ascii: "\\") {
                escaped = true
                break
            }
            if !escaped {
                // The usual case, without allocating.
                if isRoot { return equals(start, end, "aps") ? .aps : .other }
                switch end - start {
                case 5:
                    if equals(start, end, "alert") { return .alert }
                    if equals(start, end, "sound") { return .sound }
                    if equals(start, end, "badge") { return .badge }
                case 17:
                    if equals(start, end, "content-available") { return .contentAvailable }
                default: break
                }
                return .other
            }
            // A key written with escapes (`"ap\u0073"`) is the same key to a JSON decoder: compare
            // what it decodes to. Every key looked for is short ASCII, so only that needs decoding.
            var name: [UInt8] = []
            var k = start
            while k < end, name.count <= 17 {
                guard bytes[k] == UInt8(ascii: "\\") else {
                    name.append(bytes[k])
                    k += 1
                    continue
                }
                guard k + 1 < end else { return .other }
                switch bytes[k + 1] {
                case UInt8(ascii: "u"):
                    guard let unit = try? hexUnit(at: k + 2), unit < 0x80 else { return .other }
                    name.append(UInt8(unit))
                    k += 6
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"):
                    name.append(bytes[k + 1])
                    k += 2
                default:
                    return .other  // \b, \f, \n, \r, \t: in no key looked for
                }
            }
            func named(_ literal: StaticString) -> Bool {
                name.count == literal.utf8CodeUnitCount
                    && name.withUnsafeBufferPointer {
                        $0.elementsEqual(
                            UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
                    }
            }
            if isRoot { return named("aps") ? .aps : .other }
            if named("alert") { return .alert }
            if named("sound") { return .sound }
            if named("badge") { return .badge }
            if named("content-available") { return .contentAvailable }
            return .other
        }

        /// Whether the value at `start..<end` is a number other than zero: what a device reads as a
        /// set flag (`content-available: 1`; HeraldCore's `Payload` reads any non-zero integer so).
        func isNonZeroNumber(_ start: Int, _ end: Int) -> Bool {
            guard start < end, bytes[start] == UInt8(ascii: "-") || (0x30...0x39).contains(bytes[start]) else {
                return false
            }
            // Any non-zero digit before the exponent makes it non-zero.
            for k in start..<end {
                let b = bytes[k]
                if b == UInt8(ascii: "e") || b == UInt8(ascii: "E") { break }
                if (0x31...0x39).contains(b) { return true }
            }
            return false
        }

        mutating func value(depth: Int) throws(ScanError) {
            guard depth < 64 else { throw fail("JSON nested too deeply") }
            guard i < bytes.count else { throw fail("unexpected end of the payload") }
            switch bytes[i] {
            case UInt8(ascii: "{"): try object(depth: depth, isRoot: false, isAPS: false)
            case UInt8(ascii: "["): try array(depth: depth)
            case UInt8(ascii: "\""): try string()
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
            default: throw fail("unexpected character")
            }
        }

        mutating func array(depth: Int) throws(ScanError) {
            i += 1
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
                i += 1
                return
            }
            while true {
                skipSpace()
                try value(depth: depth + 1)
                skipSpace()
                guard i < bytes.count else { throw fail("unexpected end of the payload") }
                if bytes[i] == UInt8(ascii: ",") {
                    i += 1
                    continue
                }
                if bytes[i] == UInt8(ascii: "]") {
                    i += 1
                    return
                }
                throw fail("expected ',' or ']'")
            }
        }

        mutating func literal(_ word: StaticString) throws(ScanError) {
            let n = word.utf8CodeUnitCount
            guard i + n <= bytes.count, equals(i, i + n, word) else { throw fail("invalid literal") }
            i += n
        }

        mutating func digits() -> Int {
            let start = i
            while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 { i += 1 }
            return i - start
        }

        mutating func number() throws(ScanError) {
            let start = i
            var integerDigits = 0
            if bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < bytes.count else { throw fail("invalid number") }
            if bytes[i] == UInt8(ascii: "0") {
                i += 1
            } else {
                integerDigits = digits()
                if integerDigits == 0 { throw fail("invalid number") }
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
                i += 1
                guard digits() > 0 else { throw fail("invalid number") }
            }
            var exponent = false
            if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
                exponent = true
                i += 1
                if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
                guard digits() > 0 else { throw fail("invalid number") }
            }
            // A number no double can hold (1e999) is well-formed JSON that no decoder reads: refused
            // like malformed JSON. Only numbers that could be that large are looked at again.
            if exponent || integerDigits > 300 {
                let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
                guard let value = Double(text), value.isFinite else {
                    i = start
                    throw fail("number out of range")
                }
            }
        }

        /// A string, including UTF-8 well-formedness (APNs payloads are UTF-8 JSON).
        mutating func string() throws(ScanError) {
            i += 1
            while i < bytes.count {
                let c = bytes[i]
                switch c {
                case UInt8(ascii: "\""):
                    i += 1
                    return
                case UInt8(ascii: "\\"):
                    i += 1
                    guard i < bytes.count else { break }
                    switch bytes[i] {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                        UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        i += 1
                    case UInt8(ascii: "u"):
                        // An escaped UTF-16 unit; a surrogate must come in a pair (high, then low),
                        // or the string is no Unicode text at all and no JSON decoder will read it.
                        let unit = try hexUnit(at: i + 1)
                        i += 5
                        if (0xDC00...0xDFFF).contains(unit) { throw fail("unpaired surrogate escape") }
                        if (0xD800...0xDBFF).contains(unit) {
                            guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"),
                                bytes[i + 1] == UInt8(ascii: "u"),
                                (0xDC00...0xDFFF).contains(try hexUnit(at: i + 2))
                            else { throw fail("unpaired surrogate escape") }
                            i += 6
                        }
                    default:
                        throw fail("invalid escape")
                    }
                case 0x00..<0x20:
                    throw fail("control character in a string")
                case 0x80...:
                    try utf8Sequence()
                default:
                    i += 1
                }
            }
            throw fail("unterminated string")
        }

        /// The four hex digits at `at` as a UTF-16 unit.
        func hexUnit(at start: Int) throws(ScanError) -> UInt16 {
            guard start + 3 < bytes.count else { throw fail("invalid \\u escape") }
            var unit: UInt16 = 0
            for k in 0..<4 {
                let h = bytes[start + k]
                let digit: UInt8
                switch h {
                case 0x30...0x39: digit = h - 0x30
                case 0x41...0x46: digit = h - 0x41 + 10
                case 0x61...0x66: digit = h - 0x61 + 10
                default: throw fail("invalid \\u escape")
                }
                unit = unit << 4 | UInt16(digit)
            }
            return unit
        }

        mutating func utf8Sequence() throws(ScanError) {
            let c = bytes[i]
            let length: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch c {
            case 0xC2...0xDF: length = 2
            case 0xE0:
                length = 3
                low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED:
                length = 3
                high = 0x9F
            case 0xF0:
                length = 4
                low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4:
                length = 4
                high = 0x8F
            default: throw fail("invalid UTF-8")
            }
            guard i + length <= bytes.count else { throw fail("invalid UTF-8") }
            let second = bytes[i + 1]
            guard second >= low, second <= high else { throw fail("invalid UTF-8") }
            for k in 2..<length where bytes[i + k] & 0xC0 != 0x80 { throw fail("invalid UTF-8") }
            i += length
        }
    }
}
