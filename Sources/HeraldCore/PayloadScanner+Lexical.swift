/// The scanner's lexical part: arrays, literals, numbers and strings (with UTF-8 and escape
/// checks), split from the part that knows what the keys mean.
extension PayloadSummary.Scanner {
    mutating func array(depth: Int) throws(PayloadSummary.ScanError) {
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

    mutating func literal(_ word: StaticString) throws(PayloadSummary.ScanError) {
        let n = word.utf8CodeUnitCount
        guard i + n <= bytes.count, equals(i, i + n, word) else { throw fail("invalid literal") }
        i += n
    }

    mutating func digits() -> Int {
        let start = i
        while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 { i += 1 }
        return i - start
    }

    mutating func number() throws(PayloadSummary.ScanError) {
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
    mutating func string() throws(PayloadSummary.ScanError) {
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
    func hexUnit(at start: Int) throws(PayloadSummary.ScanError) -> UInt16 {
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

    mutating func utf8Sequence() throws(PayloadSummary.ScanError) {
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
