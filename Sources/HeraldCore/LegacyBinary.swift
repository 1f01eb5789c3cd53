/// The legacy binary provider interface and feedback service (docs/binary-provider.md): the wire codec,
/// free of any transport. Big-endian throughout.
///
/// A provider writes notifications as a stream: command 0 (simple), 1 (enhanced) or 2 (frame).
/// Success is silent; on the first bad notification the service writes a 6-byte error packet
/// (`8 | status | identifier`) and closes. The feedback service streams
/// `u32 seconds | u16 token length | token` tuples.
public enum LegacyBinary {
    /// The largest payload of a simple or enhanced notification.
    public static let simplePayloadLimit = 256
    /// The largest payload of a frame (command 2) notification.
    public static let framePayloadLimit = 2048
    /// The token size the interface accepts.
    public static let tokenSize = 32
    /// The longest frame that can be well formed: each of the five items once, token and payload
    /// at their largest (u16) lengths. Anything longer is a protocol error, answered before the
    /// frame is buffered; anything shorter is read whole, so an oversized payload gets its own
    /// status (7).
    public static let maximumFrameLength = 5 * 3 + 2 * Int(UInt16.max) + 4 + 4 + 1

    /// An error packet's status (docs/binary-provider.md).
    public enum Status: UInt8, Sendable, CaseIterable, CustomStringConvertible {
        /// No errors encountered.
        case noError = 0
        /// Processing error: the service could not take it now.
        case processingError = 1
        /// Missing device token.
        case missingDeviceToken = 2
        /// Missing topic.
        case missingTopic = 3
        /// Missing payload.
        case missingPayload = 4
        /// Invalid token size.
        case invalidTokenSize = 5
        /// Invalid topic size.
        case invalidTopicSize = 6
        /// Invalid payload size.
        case invalidPayloadSize = 7
        /// Invalid token.
        case invalidToken = 8
        /// Shutdown: the identifier is the last notification processed.
        case shutdown = 10
        /// Protocol error: the bytes could not be parsed.
        case protocolError = 128
        /// None (unknown).
        case unknown = 255

        /// Apple's name for the status.
        public var description: String {
            switch self {
            case .noError: "No errors encountered"
            case .processingError: "Processing error"
            case .missingDeviceToken: "Missing device token"
            case .missingTopic: "Missing topic"
            case .missingPayload: "Missing payload"
            case .invalidTokenSize: "Invalid token size"
            case .invalidTopicSize: "Invalid topic size"
            case .invalidPayloadSize: "Invalid payload size"
            case .invalidToken: "Invalid token"
            case .shutdown: "Shutdown"
            case .protocolError: "Protocol error"
            case .unknown: "None (unknown)"
            }
        }

        /// The status a binary provider gets for a push the HTTP/2 API would answer with `reason`
        /// (docs/binary-provider.md has the table and why).
        public init(reason: APNsReason) {
            switch reason {
            case .missingDeviceToken: self = .missingDeviceToken
            case .missingTopic: self = .missingTopic
            case .payloadEmpty: self = .missingPayload
            case .badTopic: self = .invalidTopicSize
            case .payloadTooLarge: self = .invalidPayloadSize
            case .badDeviceToken, .deviceTokenNotForTopic, .expiredToken, .unregistered: self = .invalidToken
            case .shutdown: self = .shutdown
            case .internalServerError, .serviceUnavailable, .tooManyRequests: self = .processingError
            default: self = .unknown
            }
        }
    }

    /// One notification as the provider sent it.
    public struct Notification: Sendable, Equatable {
        /// The command it came in: 0, 1 or 2.
        public var command: UInt8
        /// The provider's identifier (0 for a simple notification or a frame without item 3).
        public var identifier: UInt32
        /// Seconds since 1970 after which it is no longer worth delivering; 0 = deliver now or never;
        /// `nil` (a simple notification, or a frame without item 4) = the service's default.
        public var expiration: UInt32?
        /// The device token.
        public var token: [UInt8]
        /// The JSON payload, byte for byte.
        public var payload: [UInt8]
        /// 10 (at once) or 5 (when convenient); `nil` = the default for the payload.
        public var priority: UInt8?

        /// Creates a notification.
        public init(
            command: UInt8 = 2, identifier: UInt32 = 0, expiration: UInt32? = nil, token: [UInt8], payload: [UInt8],
            priority: UInt8? = nil
        ) {
            self.command = command
            self.identifier = identifier
            self.expiration = expiration
            self.token = token
            self.payload = payload
            self.priority = priority
        }

        /// The notification's bytes in its command's form. Fields the command cannot carry (an
        /// identifier or expiration in command 0, a priority in commands 0 and 1) are left out;
        /// lengths are written as given, so a test can encode what the service must refuse.
        public func encoded() -> [UInt8] {
            var out: [UInt8] = []
            encode(into: &out)
            return out
        }

        /// Appends the notification's bytes to `out`.
        public func encode(into out: inout [UInt8]) {
            switch command {
            case 0:
                out.append(0)
                LegacyBinary.append(UInt16(truncatingIfNeeded: token.count), to: &out)
                out += token
                LegacyBinary.append(UInt16(truncatingIfNeeded: payload.count), to: &out)
                out += payload
            case 1:
                out.append(1)
                LegacyBinary.append(identifier, to: &out)
                LegacyBinary.append(expiration ?? 0, to: &out)
                LegacyBinary.append(UInt16(truncatingIfNeeded: token.count), to: &out)
                out += token
                LegacyBinary.append(UInt16(truncatingIfNeeded: payload.count), to: &out)
                out += payload
            default:
                var items: [UInt8] = []
                LegacyBinary.appendItem(1, token, to: &items)
                LegacyBinary.appendItem(2, payload, to: &items)
                LegacyBinary.appendItem(3, LegacyBinary.bigEndian(identifier), to: &items)
                if let expiration { LegacyBinary.appendItem(4, LegacyBinary.bigEndian(expiration), to: &items) }
                if let priority { LegacyBinary.appendItem(5, [priority], to: &items) }
                out.append(2)
                LegacyBinary.append(UInt32(items.count), to: &out)
                out += items
            }
        }
    }

    /// What the next bytes of a provider's stream hold.
    public enum ParseResult: Sendable, Equatable {
        /// A whole notification, well formed, and how many bytes it took.
        case notification(Notification, consumed: Int)
        /// Not enough bytes yet: read more and try again with all of them.
        case needMoreBytes
        /// A notification the service refuses: answer with `status` and `identifier`, then close.
        case failure(Status, identifier: UInt32)
    }

    /// Parses the first notification in `bytes`. The same bytes give the same answer however the
    /// stream was split: a notification is judged only once all of it has arrived (except a frame
    /// longer than ``maximumFrameLength`` or an unknown command, refused at once).
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> ParseResult {
        var r = Reader(bytes: bytes)
        guard let command = r.u8() else { return .needMoreBytes }
        switch command {
        case 0, 1:
            var identifier: UInt32 = 0
            var expiration: UInt32?
            if command == 1 {
                guard let id = r.u32(), let expiry = r.u32() else { return .needMoreBytes }
                identifier = id
                expiration = expiry
            }
            guard let tokenLength = r.u16(), let token = r.bytes(Int(tokenLength)), let payloadLength = r.u16(),
                let payload = r.bytes(Int(payloadLength))
            else { return .needMoreBytes }
            let n = Notification(
                command: command, identifier: identifier, expiration: expiration, token: token, payload: payload)
            if let status = check(n, payloadLimit: simplePayloadLimit) {
                return .failure(status, identifier: identifier)
            }
            return .notification(n, consumed: r.offset)
        case 2:
            guard let length = r.u32() else { return .needMoreBytes }
            guard length <= maximumFrameLength else { return .failure(.protocolError, identifier: 0) }
            guard let frame = r.bytes(Int(length)) else { return .needMoreBytes }
            switch parseFrame(frame) {
            case .success(let n):
                if let status = check(n, payloadLimit: framePayloadLimit) {
                    return .failure(status, identifier: n.identifier)
                }
                return .notification(n, consumed: r.offset)
            case .failure(let failure):
                return .failure(failure.status, identifier: failure.identifier)
            }
        default:
            return .failure(.protocolError, identifier: 0)
        }
    }

    /// Parses the first notification in `bytes`.
    public static func parse(_ bytes: [UInt8]) -> ParseResult {
        bytes.withUnsafeBytes { parse($0) }
    }

    struct FrameFailure: Error {
        var status: Status
        var identifier: UInt32
    }

    /// A frame's items. Item ids outside 1…5, an item running past the frame, a fixed-size item
    /// of the wrong size, a priority other than 10 or 5, or the same item twice: protocol error.
    /// Missing token or payload items are reported after the identifier is known.
    static func parseFrame(_ frame: [UInt8]) -> Result<Notification, FrameFailure> {
        var n = Notification(command: 2, token: [], payload: [])
        var seen: UInt8 = 0
        var malformed = false
        frame.withUnsafeBytes { raw in
            var r = Reader(bytes: raw)
            while r.remaining > 0 {
                guard let id = r.u8(), let length = r.u16(), let data = r.bytes(Int(length)) else {
                    malformed = true
                    return
                }
                guard (1...5).contains(id), seen & (1 << id) == 0 else {
                    malformed = true
                    return
                }
                seen |= 1 << id
                switch id {
                case 1: n.token = data
                case 2: n.payload = data
                case 3:
                    guard data.count == 4 else { malformed = true; return }
                    n.identifier = bigEndianU32(data)
                case 4:
                    guard data.count == 4 else { malformed = true; return }
                    n.expiration = bigEndianU32(data)
                default:
                    guard data.count == 1, data[0] == 10 || data[0] == 5 else { malformed = true; return }
                    n.priority = data[0]
                }
            }
        }
        if malformed { return .failure(FrameFailure(status: .protocolError, identifier: n.identifier)) }
        if seen & (1 << 1) == 0 { return .failure(FrameFailure(status: .missingDeviceToken, identifier: n.identifier)) }
        if seen & (1 << 2) == 0 { return .failure(FrameFailure(status: .missingPayload, identifier: n.identifier)) }
        return .success(n)
    }

    /// Size rules shared by every command: token present and 32 bytes, payload present and
    /// within the command's limit.
    static func check(_ n: Notification, payloadLimit: Int) -> Status? {
        if n.token.isEmpty { return .missingDeviceToken }
        if n.token.count != tokenSize { return .invalidTokenSize }
        if n.payload.isEmpty { return .missingPayload }
        if n.payload.count > payloadLimit { return .invalidPayloadSize }
        return nil
    }

    /// The 6-byte error packet: `8 | status | identifier`.
    public static func errorPacket(_ status: Status, identifier: UInt32) -> [UInt8] {
        [8, status.rawValue] + bigEndian(identifier)
    }

    /// Reads an error packet; `nil` unless `bytes` is exactly one.
    public static func parseErrorPacket(_ bytes: [UInt8]) -> (status: Status, identifier: UInt32)? {
        guard bytes.count == 6, bytes[0] == 8 else { return nil }
        return (Status(rawValue: bytes[1]) ?? .unknown, bigEndianU32(bytes[2...]))
    }

    /// One feedback tuple: a token whose app was removed, and when.
    public struct FeedbackTuple: Sendable, Equatable {
        /// Seconds since 1970 when the app was found removed.
        public var time: UInt32
        /// The device token.
        public var token: [UInt8]

        /// Creates a tuple.
        public init(time: UInt32, token: [UInt8]) {
            self.time = time
            self.token = token
        }

        /// `u32 time | u16 token length | token`.
        public func encoded() -> [UInt8] {
            bigEndian(time) + bigEndian(UInt16(truncatingIfNeeded: token.count)) + token
        }
    }

    /// Reads the feedback service's whole answer. Throws if it ends inside a tuple.
    public static func parseFeedback(_ bytes: [UInt8]) throws(FeedbackFormatError) -> [FeedbackTuple] {
        var tuples: [FeedbackTuple] = []
        var failed = false
        bytes.withUnsafeBytes { raw in
            var r = Reader(bytes: raw)
            while r.remaining > 0 {
                guard let time = r.u32(), let length = r.u16(), let token = r.bytes(Int(length)) else {
                    failed = true
                    return
                }
                tuples.append(FeedbackTuple(time: time, token: token))
            }
        }
        if failed { throw FeedbackFormatError(bytes: bytes.count) }
        return tuples
    }

    /// The feedback service's answer ended inside a tuple.
    public struct FeedbackFormatError: Error, CustomStringConvertible {
        /// How many bytes were read.
        public var bytes: Int
        /// Names the problem.
        public var description: String { "the feedback answer (\(bytes) bytes) ends inside a tuple" }
    }

    // MARK: Bytes

    static func bigEndian(_ v: UInt32) -> [UInt8] {
        [
            UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8),
            UInt8(truncatingIfNeeded: v),
        ]
    }

    static func bigEndian(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(truncatingIfNeeded: v)] }

    static func bigEndianU32(_ b: some Collection<UInt8>) -> UInt32 {
        b.prefix(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    static func append(_ v: UInt32, to out: inout [UInt8]) { out += bigEndian(v) }
    static func append(_ v: UInt16, to out: inout [UInt8]) { out += bigEndian(v) }

    static func appendItem(_ id: UInt8, _ data: [UInt8], to out: inout [UInt8]) {
        out.append(id)
        append(UInt16(truncatingIfNeeded: data.count), to: &out)
        out += data
    }

    /// A cursor over bytes; every read returns `nil` when the bytes run out.
    struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        var remaining: Int { bytes.count - offset }

        mutating func u8() -> UInt8? {
            guard remaining >= 1 else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func u16() -> UInt16? {
            guard remaining >= 2 else { return nil }
            defer { offset += 2 }
            return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
        }

        mutating func u32() -> UInt32? {
            guard remaining >= 4 else { return nil }
            defer { offset += 4 }
            return (0..<4).reduce(0) { $0 << 8 | UInt32(bytes[offset + $1]) }
        }

        mutating func bytes(_ count: Int) -> [UInt8]? {
            guard remaining >= count else { return nil }
            defer { offset += count }
            return Array(bytes[offset..<offset + count])
        }
    }
}
