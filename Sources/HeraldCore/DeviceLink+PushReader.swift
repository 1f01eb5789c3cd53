import Foundation

extension LinkPush {
    /// Reads a `push` message in exactly the form the gateway writes it (``writeMessage(to:)``):
    /// the keys in that order, no whitespace, strings of printable ASCII without escapes, integers
    /// without leading zeros, the token in hex and the payload in canonical base64. A device reads
    /// one per notification, and this reads it in one pass without the general reader's table of
    /// every message's fields.
    ///
    /// `nil` for anything else, even a valid message in another form (other key order, escapes,
    /// unknown keys, non-ASCII text): the general reader decides those. So what this accepts, it
    /// reads exactly as the general reader would.
    init?(gatewayForm bytes: UnsafeRawBufferPointer) {
        var r = PushFormReader(bytes: bytes)
        guard r.literal(#"{"type":"push","apnsID":"#), let apnsID = r.string() else { return nil }
        var uniqueID: String?
        if r.literal(#","uniqueID":"#) {
            guard let value = r.string() else { return nil }
            uniqueID = value
        }
        guard r.literal(#","topic":"#), let topic = r.string(),
            r.literal(#","token":"#), let token = r.token(),
            r.literal(#","environment":"#), let environment = r.string().flatMap(APNsEnvironment.init(rawValue:)),
            r.literal(#","pushType":"#), let pushType = r.string().flatMap(PushType.init(rawValue:)),
            r.literal(#","priority":"#),
            let priority = r.integer().flatMap({ Int(exactly: $0) }).flatMap(PushPriority.init(rawValue:))
        else { return nil }
        var expiration: Int64?
        if r.literal(#","expiration":"#) {
            guard let value = r.integer() else { return nil }
            expiration = value
        }
        var collapseID: String?
        if r.literal(#","collapseID":"#) {
            guard let value = r.string() else { return nil }
            collapseID = value
        }
        guard r.literal(#","payload":"#), let payload = r.base64(), r.literal("}"), r.atEnd else { return nil }
        self.init(
            apnsID: apnsID, uniqueID: uniqueID, topic: topic, token: token, environment: environment,
            pushType: pushType, priority: priority, expiration: expiration, collapseID: collapseID, payload: payload)
    }
}

/// A cursor over a `push` message's bytes for ``LinkPush/init(gatewayForm:)``: each read moves on
/// past what it read, or fails and leaves the cursor where it was.
private struct PushFormReader {
    let bytes: UnsafeRawBufferPointer
    var at = 0

    init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var atEnd: Bool { at == bytes.count }

    /// Moves past `text` if the bytes go on with it.
    mutating func literal(_ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard bytes.count - at >= count, memcmp(bytes.baseAddress! + at, text.utf8Start, count) == 0 else {
            return false
        }
        at += count
        return true
    }

    /// The content of a string in quotes: printable ASCII up to the closing quote, which it moves
    /// past. `nil` without the opening quote, at an escape, a control or non-ASCII byte, or the end.
    private mutating func stringSpan() -> UnsafeRawBufferPointer? {
        guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { return nil }
        let start = at + 1
        var i = start
        while i < bytes.count {
            let c = bytes[i]
            if c == UInt8(ascii: "\"") {
                at = i + 1
                return UnsafeRawBufferPointer(rebasing: bytes[start..<i])
            }
            guard c >= 0x20, c < 0x7F, c != UInt8(ascii: "\\") else { return nil }
            i += 1
        }
        return nil
    }

    /// A string.
    mutating func string() -> String? {
        stringSpan().map { String(decoding: $0, as: UTF8.self) }
    }

    /// The content of a string in quotes whose reader takes only a few ASCII characters (hex
    /// digits, base64's alphabet), none of them `"`, `\` or a control: it looks only for the
    /// closing quote (`memchr`) and leaves the rest to that reader, which refuses anything else.
    private mutating func plainSpan() -> UnsafeRawBufferPointer? {
        guard at < bytes.count, bytes[at] == UInt8(ascii: "\""), let base = bytes.baseAddress else { return nil }
        let start = at + 1
        guard let quote = memchr(base + start, Int32(UInt8(ascii: "\"")), bytes.count - start) else { return nil }
        let end = base.distance(to: UnsafeRawPointer(quote))
        at = end + 1
        return UnsafeRawBufferPointer(rebasing: bytes[start..<end])
    }

    /// A device token in hex, in quotes.
    mutating func token() -> DeviceToken? {
        plainSpan().flatMap(DeviceToken.init(hexUTF8:))
    }

    /// Data in canonical base64, in quotes.
    mutating func base64() -> Data? {
        plainSpan().flatMap(Base64.decodeCanonical)
    }

    /// An integer as JSON writes it: an optional minus, then `0` or digits not starting with `0`;
    /// at most 18 digits, so that it cannot overflow.
    mutating func integer() -> Int64? {
        var i = at
        let negative = i < bytes.count && bytes[i] == UInt8(ascii: "-")
        if negative { i += 1 }
        let first = i
        var value: Int64 = 0
        while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") {
            // A 19th digit could overflow: such a number is the general reader's.
            guard i - first < 18 else { return nil }
            value = value * 10 + Int64(bytes[i] - UInt8(ascii: "0"))
            i += 1
        }
        let digits = i - first
        guard digits > 0, digits == 1 || bytes[first] != UInt8(ascii: "0") else { return nil }
        // JSON has no "-0" that JSONDecoder would read as an integer differently; leave it to it.
        guard !(negative && value == 0) else { return nil }
        at = i
        return negative ? -value : value
    }
}
