/// A single-pass, allocation-free check of a push payload for the provider API's hot path.
///
/// It verifies the body is one well-formed JSON object (RFC 8259) and notes what the gateway
/// needs to know from `aps`: whether it has an alert, sound or badge (to infer the push type),
/// whether `content-available` is 1, and the facts ``PushWarnings`` judges a push by (what the
/// alert shows and how long it is, the Live Activity keys, the badge's kind). The bytes
/// themselves are forwarded unchanged; the device parses them fully (HeraldCore's `Payload`).
public struct PayloadSummary: Sendable, Equatable {
    /// `aps.alert` is present.
    public var hasAlert = false
    /// `aps.sound` is present.
    public var hasSound = false
    /// `aps.badge` is present.
    public var hasBadge = false
    /// `aps.content-available` is a number other than 0 (`1`, as Apple documents it).
    public var contentAvailable = false
    /// The alert has text to show: a non-empty string, or an object with a non-empty `title`,
    /// `subtitle`, `body` or one of their `*loc-key`s.
    public var alertHasText = false
    /// `aps.badge` is a whole number of at least 0 (false when there is no badge).
    public var badgeIsCount = false
    /// `aps.mutable-content` is a number other than 0.
    public var mutableContent = false
    /// `aps.timestamp` is present.
    public var hasTimestamp = false
    /// `aps.event` is present.
    public var hasEvent = false
    /// `aps.event` is `"start"`.
    public var startsActivity = false
    /// `aps.content-state` is present.
    public var hasContentState = false
    /// `aps.attributes-type` is present.
    public var hasAttributesType = false
    /// `aps.attributes` is present.
    public var hasAttributes = false
    /// `aps.content-changed` is present (widgets and controls pushes).
    public var hasContentChanged = false
    /// The alert's title, subtitle and body in Unicode scalars (an escape counts as what it
    /// stands for); 0 when absent. A string alert is the body.
    public var titleLength = 0
    /// See ``titleLength``.
    public var subtitleLength = 0
    /// See ``titleLength``.
    public var bodyLength = 0

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

    struct Scanner {
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
            try object(depth: 0, level: .root)
            skipSpace()
            guard i == bytes.count else { throw fail("unexpected data after the JSON object") }
            return summary
        }

        /// Which object's keys are being read: only these three have keys that mean something here.
        enum Level { case root, aps, alert, other }

        /// Key classification at the root, inside `aps` and inside `aps.alert`.
        enum Key {
            case other, aps
            case alert, sound, badge, contentAvailable, mutableContent, timestamp, event, contentState
            case attributesType, attributes, contentChanged
            case title, subtitle, body, textKey
        }

        mutating func object(depth: Int, level: Level) throws(ScanError) {
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
                let key = level == .other ? Key.other : classify(keyStart, keyEnd, level: level)
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
                if key == .other {
                    try value(depth: depth + 1)
                } else {
                    try known(key, depth: depth)
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

        /// Reads the value of a key that means something, noting what it says.
        mutating func known(_ key: Key, depth: Int) throws(ScanError) {
            let start = i
            let isString = bytes[i] == UInt8(ascii: "\"")
            switch key {
            case .aps where bytes[i] == UInt8(ascii: "{"):
                try object(depth: depth + 1, level: .aps)
                return
            case .alert:
                summary.hasAlert = true
                if bytes[i] == UInt8(ascii: "{") {
                    try object(depth: depth + 1, level: .alert)
                    return
                }
            default: break
            }
            try value(depth: depth + 1)
            let nonEmptyText = isString && i - start > 2
            switch key {
            case .alert:
                if nonEmptyText {
                    summary.alertHasText = true
                    summary.bodyLength = scalars(start, i)
                }
            case .sound: summary.hasSound = true
            case .badge:
                summary.hasBadge = true
                summary.badgeIsCount = (start..<i).allSatisfy { (0x30...0x39).contains(bytes[$0]) }
            case .contentAvailable: summary.contentAvailable = isNonZeroNumber(start, i)
            case .mutableContent: summary.mutableContent = isNonZeroNumber(start, i)
            case .timestamp: summary.hasTimestamp = true
            case .event:
                summary.hasEvent = true
                summary.startsActivity = equals(start, i, "\"start\"")
            case .contentState: summary.hasContentState = true
            case .attributesType: summary.hasAttributesType = true
            case .attributes: summary.hasAttributes = true
            case .contentChanged: summary.hasContentChanged = true
            case .title, .subtitle, .body, .textKey:
                guard nonEmptyText else { break }
                summary.alertHasText = true
                switch key {
                case .title: summary.titleLength = scalars(start, i)
                case .subtitle: summary.subtitleLength = scalars(start, i)
                case .body: summary.bodyLength = scalars(start, i)
                default: break
                }
            case .other, .aps: break
            }
        }

        /// The Unicode scalars of the string literal at `start..<end` (quotes included): UTF-8 lead
        /// bytes, with each escape counted once (a surrogate pair as two; they are rare in alerts).
        func scalars(_ start: Int, _ end: Int) -> Int {
            var count = 0
            var k = start + 1
            while k < end - 1 {
                let b = bytes[k]
                if b == UInt8(ascii: "\\") {
                    k += bytes[k + 1] == UInt8(ascii: "u") ? 6 : 2
                } else {
                    k += 1
                    if b & 0xC0 == 0x80 { continue }
                }
                count += 1
            }
            return count
        }

        func equals(_ start: Int, _ end: Int, _ literal: StaticString) -> Bool {
            guard end - start == literal.utf8CodeUnitCount else { return false }
            let p = literal.utf8Start
            for k in 0..<(end - start) where bytes[start + k] != p[k] { return false }
            return true
        }

        /// The names looked for at each level.
        static let root: [(StaticString, Key)] = [("aps", .aps)]
        static let aps: [(StaticString, Key)] = [
            ("alert", .alert), ("sound", .sound), ("badge", .badge), ("content-available", .contentAvailable),
            ("mutable-content", .mutableContent), ("timestamp", .timestamp), ("event", .event),
            ("content-state", .contentState), ("attributes-type", .attributesType), ("attributes", .attributes),
            ("content-changed", .contentChanged),
        ]
        static let alert: [(StaticString, Key)] = [
            ("title", .title), ("subtitle", .subtitle), ("body", .body), ("loc-key", .textKey),
            ("title-loc-key", .textKey), ("subtitle-loc-key", .textKey),
        ]

        func classify(_ start: Int, _ end: Int, level: Level) -> Key {
            let names: [(StaticString, Key)]
            switch level {
            case .root: names = Self.root
            case .aps: names = Self.aps
            case .alert: names = Self.alert
            case .other: return .other
            }
            var escaped = false
            for k in start..<end where bytes[k] == UInt8(ascii: "\\") {
                escaped = true
                break
            }
            if !escaped {
                // The usual case, without allocating.
                for (name, key) in names where equals(start, end, name) { return key }
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
            for (literal, key) in names
            where name.count == literal.utf8CodeUnitCount
                && name.withUnsafeBufferPointer({
                    $0.elementsEqual(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
                })
            {
                return key
            }
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
            case UInt8(ascii: "{"): try object(depth: depth, level: .other)
            case UInt8(ascii: "["): try array(depth: depth)
            case UInt8(ascii: "\""): try string()
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
            default: throw fail("unexpected character")
            }
        }
    }
}
