import Foundation

/// A notification as it travels down the device link: the headers the provider sent and the
/// payload bytes exactly as the provider sent them.
///
/// Its fields live in one shared, immutable object: a push is copied several times on its way
/// through the gateway (the offer, the link's entry, the write, the acknowledgement), and a copy
/// then costs one reference count instead of one for each of its strings, its token and its
/// payload. Setting a field makes a new object (nothing on the hot path does).
public struct LinkPush: Sendable, Equatable {
    /// The stored fields.
    @usableFromInline
    struct Fields: Sendable, Equatable {
        @usableFromInline var apnsID: String
        @usableFromInline var uniqueID: String?
        @usableFromInline var topic: String
        @usableFromInline var token: DeviceToken
        @usableFromInline var environment: APNsEnvironment
        @usableFromInline var pushType: PushType
        @usableFromInline var priority: PushPriority
        @usableFromInline var expiration: Int64?
        @usableFromInline var collapseID: String?
        @usableFromInline var payload: Data
    }

    /// The fields, shared by every copy.
    @usableFromInline
    final class Box: Sendable {
        @usableFromInline let fields: Fields
        @usableFromInline init(_ fields: Fields) { self.fields = fields }
    }

    @usableFromInline var box: Box

    /// Sets a field: a new box, since copies share this one.
    private mutating func update(_ change: (inout Fields) -> Void) {
        var fields = box.fields
        change(&fields)
        box = Box(fields)
    }

    /// `apns-id`; the device acknowledges by it and drops a second copy by it.
    public var apnsID: String {
        @inlinable get { box.fields.apnsID }
        set { update { $0.apnsID = newValue } }
    }
    /// `apns-unique-id` (development only).
    public var uniqueID: String? {
        @inlinable get { box.fields.uniqueID }
        set { update { $0.uniqueID = newValue } }
    }
    /// `apns-topic`.
    public var topic: String {
        @inlinable get { box.fields.topic }
        set { update { $0.topic = newValue } }
    }
    /// The token it was sent to.
    public var token: DeviceToken {
        @inlinable get { box.fields.token }
        set { update { $0.token = newValue } }
    }
    /// The token's environment.
    public var environment: APNsEnvironment {
        @inlinable get { box.fields.environment }
        set { update { $0.environment = newValue } }
    }
    /// `apns-push-type`.
    public var pushType: PushType {
        @inlinable get { box.fields.pushType }
        set { update { $0.pushType = newValue } }
    }
    /// `apns-priority`.
    public var priority: PushPriority {
        @inlinable get { box.fields.priority }
        set { update { $0.priority = newValue } }
    }
    /// `apns-expiration` as UNIX seconds: 0 = one attempt only; `nil` = none given.
    public var expiration: Int64? {
        @inlinable get { box.fields.expiration }
        set { update { $0.expiration = newValue } }
    }
    /// `apns-collapse-id`.
    public var collapseID: String? {
        @inlinable get { box.fields.collapseID }
        set { update { $0.collapseID = newValue } }
    }
    /// The payload, byte for byte.
    public var payload: Data {
        @inlinable get { box.fields.payload }
        set { update { $0.payload = newValue } }
    }

    /// Creates a push.
    public init(
        apnsID: String, uniqueID: String? = nil, topic: String, token: DeviceToken, environment: APNsEnvironment,
        pushType: PushType, priority: PushPriority, expiration: Int64?, collapseID: String?, payload: Data
    ) {
        box = Box(
            Fields(
                apnsID: apnsID, uniqueID: uniqueID, topic: topic, token: token, environment: environment,
                pushType: pushType, priority: priority, expiration: expiration, collapseID: collapseID,
                payload: payload))
    }

    /// Whether both carry the same push (field by field).
    public static func == (lhs: LinkPush, rhs: LinkPush) -> Bool {
        lhs.box === rhs.box || lhs.box.fields == rhs.box.fields
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
