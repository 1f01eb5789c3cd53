import Foundation

/// A notification as it travels down the device link: the headers the provider sent and the
/// payload bytes exactly as the provider sent them.
public struct LinkPush: Sendable, Equatable {
    /// `apns-id`; the device acknowledges by it and drops a second copy by it.
    public var apnsID: String
    /// `apns-unique-id` (development only).
    public var uniqueID: String?
    /// `apns-topic`.
    public var topic: String
    /// The token it was sent to.
    public var token: DeviceToken
    /// The token's environment.
    public var environment: APNsEnvironment
    /// `apns-push-type`.
    public var pushType: PushType
    /// `apns-priority`.
    public var priority: PushPriority
    /// `apns-expiration` as UNIX seconds: 0 = one attempt only; `nil` = none given.
    public var expiration: Int64?
    /// `apns-collapse-id`.
    public var collapseID: String?
    /// The payload, byte for byte.
    public var payload: Data

    /// Creates a push.
    public init(
        apnsID: String, uniqueID: String? = nil, topic: String, token: DeviceToken, environment: APNsEnvironment,
        pushType: PushType, priority: PushPriority, expiration: Int64?, collapseID: String?, payload: Data
    ) {
        self.apnsID = apnsID
        self.uniqueID = uniqueID
        self.topic = topic
        self.token = token
        self.environment = environment
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.payload = payload
    }
}

extension LinkPush {
    /// The `push` message, written by hand: the gateway sends one per notification, and this is
    /// several times faster than `JSONEncoder`.
    public func encodedMessage() -> [UInt8] {
        // Room for the whole message, so that it is written into one allocation: the fixed text
        // is under 160 bytes, and a string may grow when escaped.
        let strings = apnsID.utf8.count + (uniqueID?.utf8.count ?? 0) + topic.utf8.count + (collapseID?.utf8.count ?? 0)
        var w = JSONWriter(capacity: 192 + strings + strings / 4 + token.bytes.count * 2 + (payload.count + 2) / 3 * 4)
        writeMessage(to: &w)
        return w.bytes
    }

    /// Appends the `push` message to `w`: a writer kept for every push spares an allocation each.
    public func writeMessage(to w: inout JSONWriter) {
        w.raw(#"{"type":"push","apnsID":"#)
        w.string(apnsID)
        if let uniqueID {
            w.raw(#","uniqueID":"#)
            w.string(uniqueID)
        }
        w.raw(#","topic":"#)
        w.string(topic)
        w.raw(#","token":"#)
        w.hex(token.bytes)
        w.raw(#","environment":"#)
        w.string(environment.rawValue)
        w.raw(#","pushType":"#)
        w.string(pushType.rawValue)
        w.raw(#","priority":"#)
        w.integer(Int64(priority.rawValue))
        if let expiration {
            w.raw(#","expiration":"#)
            w.integer(expiration)
        }
        if let collapseID {
            w.raw(#","collapseID":"#)
            w.string(collapseID)
        }
        w.raw(#","payload":"#)
        w.base64(payload)
        w.raw("}")
    }
}
