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

/// What the provider API answers.
public struct ProviderResponse: Sendable, Equatable {
    /// The HTTP status.
    public var status: Int
    /// `apns-id`: echoed or generated.
    public var apnsID: String
    /// `apns-unique-id`: development environment, successful pushes only.
    public var uniqueID: String?
    /// The reason, for errors.
    public var reason: APNsReason?
    /// For 410: milliseconds since 1970 at which the token stopped being valid for the topic.
    public var timestamp: Int64?
    /// Why the request was refused, in more words than the reason, for the gateway's log; never
    /// sent to the client.
    public var note: String?
    /// Answers of the channel management and broadcast APIs name their identifier
    /// `apns-request-id` (its value is ``apnsID``) instead of `apns-id`.
    public var identifiesRequest = false
    /// `apns-channel-id`: on a channel created.
    public var channelID: String?
    /// A reason of the broadcast and channel management APIs, for their errors.
    public var broadcastReason: BroadcastReason?
    /// A JSON body other than a reason's (a channel's settings, a list of channels).
    public var json: String?

    /// The reason's name, whichever API's it is.
    public var reasonText: String? { reason?.rawValue ?? broadcastReason?.rawValue }

    /// An answer of the channel management or broadcast API.
    public static func request(
        _ status: Int, requestID: String, channelID: String? = nil, uniqueID: String? = nil, json: String? = nil
    ) -> ProviderResponse {
        var response = ProviderResponse(
            status: status, apnsID: requestID, uniqueID: uniqueID, reason: nil, timestamp: nil)
        response.identifiesRequest = true
        response.channelID = channelID
        response.json = json
        return response
    }

    /// An error of the channel management or broadcast API with one of their own reasons.
    public static func requestError(_ reason: BroadcastReason, requestID: String, note: String? = nil)
        -> ProviderResponse
    {
        var response = ProviderResponse(
            status: reason.status, apnsID: requestID, uniqueID: nil, reason: nil, timestamp: nil, note: note)
        response.identifiesRequest = true
        response.broadcastReason = reason
        return response
    }

    /// An error of the channel management or broadcast API with a reason they share with the
    /// provider API.
    public static func requestError(_ reason: APNsReason, requestID: String, note: String? = nil) -> ProviderResponse {
        var response = ProviderResponse.error(reason, apnsID: requestID, note: note)
        response.identifiesRequest = true
        return response
    }

    /// A 200.
    public static func ok(apnsID: String, uniqueID: String?) -> ProviderResponse {
        ProviderResponse(status: 200, apnsID: apnsID, uniqueID: uniqueID, reason: nil, timestamp: nil)
    }

    /// An error answer.
    public static func error(_ reason: APNsReason, apnsID: String, timestamp: Int64? = nil, note: String? = nil)
        -> ProviderResponse
    {
        ProviderResponse(
            status: reason.status, apnsID: apnsID, uniqueID: nil, reason: reason,
            timestamp: reason.status == 410 ? timestamp : nil, note: note)
    }

    /// The JSON body: empty for 200, `{"reason":"…"}` (plus `"timestamp"` for 410) otherwise; a
    /// channel's settings or a list of channels for those answers.
    public var body: String? {
        if let json { return json }
        if let broadcastReason { return #"{"reason":"\#(broadcastReason.rawValue)"}"# }
        guard let reason else { return nil }
        if let timestamp { return #"{"reason":"\#(reason.rawValue)","timestamp":\#(timestamp)}"# }
        return #"{"reason":"\#(reason.rawValue)"}"#
    }
}

/// A push the provider API accepted: what the router delivers or stores.
public struct AcceptedPush: Sendable {
    /// `apns-id`.
    public var apnsID: String
    /// `apns-unique-id` (development only).
    public var uniqueID: String?
    /// The target registration.
    public var registration: Registration
    /// The `apns-topic` as sent (with its push-type suffix).
    public var topic: String
    /// The push type (given or inferred).
    public var pushType: PushType
    /// The priority (given or the default for the push type).
    public var priority: PushPriority
    /// `apns-expiration` in seconds since 1970: `0` = deliver now or never, `nil` = the default policy.
    public var expiration: Int64?
    /// `apns-collapse-id`.
    public var collapseID: String?
    /// The payload, byte for byte as the provider sent it.
    public var payload: ByteBuffer
    /// Whether the payload carries `content-available: 1` (a background wake-up).
    public var contentAvailable: Bool
    /// When the gateway accepted it.
    public var receivedAt: Date
    /// The provider's identifier, for a notification from the legacy binary interface.
    public var binaryIdentifier: UInt32? = nil
    /// Whether another node of the cluster accepted it and forwarded it here: it goes to a device
    /// linked here or to the store, never on to a third node.
    public var forwarded = false
}

/// Comparisons of header text that ignore ASCII case, without allocating (they run for every
/// request).
enum ASCIICase {
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
