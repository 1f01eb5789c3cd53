import Foundation
import HeraldCore
import NIOCore

/// One provider request as the transport read it: method, path, authority, the headers APNs
/// defines, and the body. The transport adds headers one by one; a repeated header is remembered
/// so the request answers `DuplicateHeaders`.
public struct ProviderRequest: Sendable {
    /// `:method`.
    public var method: String
    /// `:path`.
    public var path: String
    /// `:authority`, or the `host` header when a client sends that instead.
    public var authority: String?
    /// `authorization`.
    public var authorization: String?
    /// `apns-id`.
    public var apnsID: String?
    /// `apns-topic`.
    public var topic: String?
    /// `apns-push-type`.
    public var pushType: String?
    /// `apns-priority`.
    public var priority: String?
    /// `apns-expiration`.
    public var expiration: String?
    /// `apns-collapse-id`.
    public var collapseID: String?
    /// `herald-forward`: only on a push another node of the cluster forwards
    /// (``ClusterForwarding/header``).
    public var forward: String?
    /// `apns-channel-id` (the channel management and broadcast APIs).
    public var channelID: String?
    /// `apns-request-id` (the channel management and broadcast APIs).
    public var requestID: String?
    /// The first header that appeared twice, if any.
    public var duplicateHeader: String?
    /// The body bytes.
    public var body: ByteBuffer

    /// Creates a request; add headers with ``addHeader(name:value:)``.
    public init(method: String, path: String, authority: String? = nil, body: ByteBuffer = ByteBuffer()) {
        self.method = method
        self.path = path
        self.authority = authority
        self.body = body
    }

    /// Whether `name` is `lowercase`, ignoring ASCII case (without allocating: every request
    /// goes through here).
    static func `is`(_ name: String, _ lowercase: StaticString) -> Bool {
        name.utf8.count == lowercase.utf8CodeUnitCount && ASCIICase.hasPrefix(name.utf8, lowercase)
    }

    /// Records one header. Names compare case-insensitively; unknown headers are ignored.
    public mutating func addHeader(name: String, value: String) {
        func set(_ field: inout String?, _ canonical: String) {
            if field != nil {
                if duplicateHeader == nil { duplicateHeader = canonical }
            } else {
                field = value
            }
        }
        switch name.utf8.count {
        case 4 where Self.is(name, "host"):
            if authority == nil { authority = value }
        case 7 where Self.is(name, "apns-id"): set(&apnsID, "apns-id")
        case 10 where Self.is(name, "apns-topic"): set(&topic, "apns-topic")
        case 13 where Self.is(name, "authorization"): set(&authorization, "authorization")
        case 13 where Self.is(name, "apns-priority"): set(&priority, "apns-priority")
        case 14 where Self.is(name, "apns-push-type"): set(&pushType, "apns-push-type")
        case 14 where Self.is(name, "herald-forward"): set(&forward, "herald-forward")
        case 15 where Self.is(name, "apns-expiration"): set(&expiration, "apns-expiration")
        case 15 where Self.is(name, "apns-channel-id"): set(&channelID, "apns-channel-id")
        case 15 where Self.is(name, "apns-request-id"): set(&requestID, "apns-request-id")
        case 16 where Self.is(name, "apns-collapse-id"): set(&collapseID, "apns-collapse-id")
        default: break
        }
    }
}

/// Comparisons of header text that ignore ASCII case, without allocating (they run for every
/// request).
enum ASCIICase {
    /// `body` over the UTF-8 bytes of `a` and `b`: in place when both are contiguous (native strings,
    /// all that HPACK decodes, always are), else over copies. Copying a string into a `var` for
    /// `withUTF8` would retain and release it, and header text is read so for every request.
    static func withUTF8<R>(
        _ a: some StringProtocol, _ b: some StringProtocol,
        _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> R
    ) -> R {
        let inPlace = a.utf8.withContiguousStorageIfAvailable { a in
            b.utf8.withContiguousStorageIfAvailable { b in body(a, b) }
        }
        if let inPlace, let inPlace { return inPlace }
        return Array(a.utf8).withUnsafeBufferPointer { a in Array(b.utf8).withUnsafeBufferPointer { b in body(a, b) } }
    }

    /// Whether `text` starts with `lowercase` (lowercase ASCII), letters compared in either case.
    static func hasPrefix(_ text: some Collection<UInt8>, _ lowercase: StaticString) -> Bool {
        let expected = UnsafeBufferPointer(start: lowercase.utf8Start, count: lowercase.utf8CodeUnitCount)
        func matches(_ c: UInt8, _ e: UInt8) -> Bool {
            c == e || (e >= UInt8(ascii: "a") && e <= UInt8(ascii: "z") && c == e - 0x20)
        }
        // Header text is contiguous UTF-8: compare by index (a zip of two iterators costs several
        // times more, and this runs for every header of every request).
        let contiguous = text.withContiguousStorageIfAvailable { bytes -> Bool in
            guard bytes.count >= expected.count else { return false }
            for i in 0..<expected.count where !matches(bytes[i], expected[i]) { return false }
            return true
        }
        if let contiguous { return contiguous }
        guard text.count >= expected.count else { return false }
        return zip(text, expected).allSatisfy(matches)
    }

    /// `text` without the spaces and tabs around it (RFC 9110 OWS).
    static func trimmed(_ text: Substring) -> Substring {
        let u = text.utf8
        var start = u.startIndex
        var end = u.endIndex
        func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 }
        while start < end, isSpace(u[start]) { start = u.index(after: start) }
        while end > start, isSpace(u[u.index(before: end)]) { end = u.index(before: end) }
        return text[start..<end]
    }
}
