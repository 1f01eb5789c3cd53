import Foundation
import HeraldCore
import Logging
import NIOCore
import NIOSSL

/// One notification to send.
public struct APNsNotification: Sendable, Equatable {
    /// The payload: a JSON object, at most 4096 bytes (5120 for VoIP).
    public var payload: Data
    /// `apns-topic`: the bundle id, with the push type's suffix where it has one.
    public var topic: String
    /// `apns-push-type`; `nil` lets the service infer it.
    public var pushType: PushType?
    /// `apns-priority`; `nil` = 10 (5 for background).
    public var priority: PushPriority?
    /// `apns-expiration` in UNIX seconds; 0 = deliver once or never; `nil` = the service's default.
    public var expiration: Int64?
    /// `apns-collapse-id`: at most 64 bytes.
    public var collapseID: String?
    /// `apns-id`; `nil` makes one (a version-4 UUID) so that retries carry the same id.
    public var apnsID: String?

    /// Creates a notification.
    public init(
        payload: Data, topic: String, pushType: PushType? = nil, priority: PushPriority? = nil,
        expiration: Int64? = nil, collapseID: String? = nil, apnsID: String? = nil
    ) {
        self.payload = payload
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
    }
}

/// A notification the service accepted.
public struct APNsDelivery: Sendable, Equatable {
    /// `apns-id`.
    public var apnsID: String
    /// `apns-unique-id` (development environment only): the delivery log's handle.
    public var uniqueID: String?
    /// How many attempts it took.
    public var attempts: Int
}

/// The service refused a notification: its status, reason and (for 410) when the token stopped
/// being valid.
public struct APNsError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A reason APNs documents, or one this client does not know.
    public enum Reason: Sendable, Equatable, CustomStringConvertible {
        /// One of the 32 documented reasons.
        case known(APNsReason)
        /// One of the reasons the broadcast and channel management APIs add (docs/broadcast.md).
        case broadcast(BroadcastReason)
        /// A reason string not in docs/provider-api.md (or no reason at all: the empty string).
        case unknown(String)

        /// Reads a reason string.
        public init(_ text: String) {
            if let known = APNsReason(rawValue: text) {
                self = .known(known)
            } else if let broadcast = BroadcastReason(rawValue: text) {
                self = .broadcast(broadcast)
            } else {
                self = .unknown(text)
            }
        }

        /// The reason string.
        public var description: String {
            switch self {
            case .known(let r): r.rawValue
            case .broadcast(let r): r.rawValue
            case .unknown(let s): s
            }
        }
    }

    /// The HTTP status.
    public var status: Int
    /// The reason.
    public var reason: Reason
    /// `apns-id` of the refused notification (`apns-request-id` of a refused channel request).
    public var apnsID: String?
    /// For 410: when the token stopped being valid for the topic.
    public var timestamp: Date?

    /// Creates an error.
    public init(status: Int, reason: Reason, apnsID: String?, timestamp: Date? = nil) {
        self.status = status
        self.reason = reason
        self.apnsID = apnsID
        self.timestamp = timestamp
    }

    /// Whether APNs allows sending it again: 500, 503 and 429 `TooManyRequests`.
    public var isRetryable: Bool {
        status == 500 || status == 503 || reason == .known(.tooManyRequests)
    }

    /// Whether the token should be dropped: 410 (`Unregistered`, `ExpiredToken`) and
    /// `BadDeviceToken`.
    public var tokenIsInvalid: Bool {
        status == 410 || reason == .known(.badDeviceToken)
    }

    /// `400 BadDeviceToken (apns-id …)`.
    public var description: String {
        var text = "\(status) \(reason)"
        if let timestamp { text += " since \(Int64(timestamp.timeIntervalSince1970 * 1000)) ms" }
        if let apnsID { text += " (apns-id \(apnsID))" }
        return text
    }

    /// Reads an error answer's body, `{"reason":"…","timestamp":…}`.
    public static func parse(status: Int, body: Data, apnsID: String?) -> APNsError {
        let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
        let reason = Reason(object["reason"] as? String ?? "")
        // Only a time a server could mean (UNIX milliseconds from 1970 to about the year 33,000): a
        // stranger one is no time at all, and never reaches a conversion that could trap.
        let milliseconds = ((object["timestamp"] as? NSNumber)?.doubleValue).flatMap {
            $0.isFinite && $0 >= 0 && $0 <= 1e15 ? $0 : nil
        }
        return APNsError(
            status: status, reason: reason, apnsID: apnsID,
            timestamp: milliseconds.map { Date(timeIntervalSince1970: $0 / 1000) })
    }
}

/// A failure of the client rather than an answer from the service.
public enum APNsClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The device token is not hex.
    case invalidDeviceToken(String)
    /// No answer before the deadline.
    case deadlineExceeded(attempts: Int)
    /// The connection failed on every attempt; the last error.
    case transport(String, attempts: Int)
    /// The configuration cannot work (a key or certificate that does not parse).
    case invalidConfiguration(String)

    /// What went wrong.
    public var description: String {
        switch self {
        case .invalidDeviceToken(let t): "device token \"\(t)\" is not hex"
        case .deadlineExceeded(let n): "no answer before the deadline (\(n) attempt\(n == 1 ? "" : "s"))"
        case .transport(let e, let n): "\(e) (\(n) attempt\(n == 1 ? "" : "s"))"
        case .invalidConfiguration(let e): e
        }
    }
}
