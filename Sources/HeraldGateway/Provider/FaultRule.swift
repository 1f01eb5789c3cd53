import Foundation
import HeraldCore

/// A fault-injection rule, set through the admin API, for people testing how their provider
/// handles APNs errors: pushes whose topic or token matches answer `reason` (any of the 32),
/// and/or answer only after `delayMilliseconds` (or a ``FaultLatency``), and/or do something to
/// their connection (``ConnectionFault``); or, with `deviceLimit`, a device that got more pushes
/// than that within `windowSeconds` answers 429 `TooManyRequests`. `probability` makes any rule fire
/// on only that share of the pushes it matches (docs/admin-api.md).
public struct FaultRule: Sendable, Codable, Equatable {
    /// The rule's id (assigned when it is added).
    public var id: String
    /// Matches pushes to exactly this `apns-topic`; `nil` matches every topic.
    public var topic: String?
    /// Matches tokens whose hex (lowercase) starts with this; `nil` matches every token.
    public var tokenPrefix: String?
    /// The reason to answer; `nil` handles the push normally (after the delay).
    public var reason: APNsReason?
    /// How long to wait before answering.
    public var delayMilliseconds: Int?
    /// How many more pushes the rule applies to; `nil` = until removed.
    public var remaining: Int?
    /// The share of matching pushes it fires on, 0 to 1; `nil` = every one.
    public var probability: Double?
    /// A latency distribution to hold the answer by (instead of `delayMilliseconds`).
    public var latency: FaultLatency?
    /// What to do to the push's connection.
    public var connection: ConnectionFault?
    /// With `goaway`: fire only from a connection's Nth push on (1 = at once).
    public var afterStreams: Int?
    /// With `goaway`: the HTTP/2 error code's name (`NO_ERROR` by default).
    public var goawayError: String?
    /// With `goaway`: the reason in its debug data (`{"reason":"…"}`; the rule's reason, or `Shutdown`).
    public var goawayReason: String?
    /// With `lower-streams`: the new `MAX_CONCURRENT_STREAMS` (1 by default).
    public var maxConcurrentStreams: Int?
    /// Apple's per-device limit: more than this many pushes to one device within ``windowSeconds``
    /// answer 429 `TooManyRequests`.
    public var deviceLimit: Int?
    /// See ``deviceLimit``.
    public var windowSeconds: Double?

    enum CodingKeys: String, CodingKey {
        case id, topic, tokenPrefix, reason, delayMilliseconds, remaining, probability, latency, connection
        case afterStreams, goawayError, goawayReason, maxConcurrentStreams, deviceLimit, windowSeconds
    }

    /// Decodes a rule; every field is optional (the id is assigned when the rule is added).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try c.decodeIfPresent(String.self, forKey: .id) ?? "",
            topic: try c.decodeIfPresent(String.self, forKey: .topic),
            tokenPrefix: try c.decodeIfPresent(String.self, forKey: .tokenPrefix),
            reason: try c.decodeIfPresent(APNsReason.self, forKey: .reason),
            delayMilliseconds: try c.decodeIfPresent(Int.self, forKey: .delayMilliseconds),
            remaining: try c.decodeIfPresent(Int.self, forKey: .remaining))
        probability = try c.decodeIfPresent(Double.self, forKey: .probability)
        latency = try c.decodeIfPresent(FaultLatency.self, forKey: .latency)
        connection = try c.decodeIfPresent(ConnectionFault.self, forKey: .connection)
        afterStreams = try c.decodeIfPresent(Int.self, forKey: .afterStreams)
        goawayError = try c.decodeIfPresent(String.self, forKey: .goawayError)
        goawayReason = try c.decodeIfPresent(String.self, forKey: .goawayReason)
        maxConcurrentStreams = try c.decodeIfPresent(Int.self, forKey: .maxConcurrentStreams)
        deviceLimit = try c.decodeIfPresent(Int.self, forKey: .deviceLimit)
        windowSeconds = try c.decodeIfPresent(Double.self, forKey: .windowSeconds)
    }

    /// Creates a rule.
    public init(
        id: String = "", topic: String? = nil, tokenPrefix: String? = nil, reason: APNsReason? = nil,
        delayMilliseconds: Int? = nil, remaining: Int? = nil
    ) {
        self.id = id
        self.topic = topic
        self.tokenPrefix = tokenPrefix?.lowercased()
        self.reason = reason
        self.delayMilliseconds = delayMilliseconds
        self.remaining = remaining
    }
}

extension FaultRule {
    /// The HTTP/2 error codes a GOAWAY may carry, by name (RFC 9113, section 7).
    public static let goawayErrors: [String: UInt32] = [
        "NO_ERROR": 0x0, "PROTOCOL_ERROR": 0x1, "INTERNAL_ERROR": 0x2, "FLOW_CONTROL_ERROR": 0x3,
        "SETTINGS_TIMEOUT": 0x4, "STREAM_CLOSED": 0x5, "FRAME_SIZE_ERROR": 0x6, "REFUSED_STREAM": 0x7, "CANCEL": 0x8,
        "COMPRESSION_ERROR": 0x9, "CONNECT_ERROR": 0xA, "ENHANCE_YOUR_CALM": 0xB, "INADEQUATE_SECURITY": 0xC,
        "HTTP_1_1_REQUIRED": 0xD,
    ]

    /// Why the rule cannot be added, naming the field; `nil` when it can.
    public var problem: String? {
        if let probability, !(0...1).contains(probability) { return "probability: from 0 to 1" }
        if let remaining, remaining < 1 { return "remaining: at least 1 (leave it out for no limit)" }
        if let delayMilliseconds, !(0...Int(FaultLatency.longest)).contains(delayMilliseconds) {
            return "delayMilliseconds: from 0 to \(Int(FaultLatency.longest)) (10 minutes)"
        }
        if delayMilliseconds != nil, latency != nil { return "latency: give it or delayMilliseconds, not both" }
        if let problem = latency?.problem { return problem }
        if let afterStreams {
            guard afterStreams >= 1 else { return "afterStreams: at least 1" }
            guard connection == .goaway else { return "afterStreams: only with connection goaway" }
        }
        if let goawayError, Self.goawayErrors[goawayError] == nil {
            return "goawayError: one of \(Self.goawayErrors.keys.sorted().joined(separator: ", "))"
        }
        if goawayError != nil, connection != .goaway { return "goawayError: only with connection goaway" }
        if goawayReason != nil, connection != .goaway { return "goawayReason: only with connection goaway" }
        if let maxConcurrentStreams {
            guard (0...1000).contains(maxConcurrentStreams) else { return "maxConcurrentStreams: 0 to 1000" }
            guard connection == .lowerStreams else { return "maxConcurrentStreams: only with connection lower-streams" }
        }
        if connection == .refuseHandshake {
            if topic != nil || tokenPrefix != nil {
                return "topic: a refused handshake comes before any push names a topic or token"
            }
            if reason != nil || latency != nil || delayMilliseconds != nil || deviceLimit != nil {
                return "connection: refuse-handshake answers nothing: no reason, delay or device limit"
            }
        }
        if let deviceLimit {
            guard deviceLimit >= 1 else { return "deviceLimit: at least 1 push" }
            guard let windowSeconds, windowSeconds > 0 else { return "windowSeconds: more than 0, with deviceLimit" }
            if reason != nil || connection != nil {
                return "deviceLimit: answers 429 TooManyRequests itself: no reason or connection fault"
            }
        } else if windowSeconds != nil {
            return "windowSeconds: only with deviceLimit"
        }
        if reason == nil, delayMilliseconds == nil, latency == nil, connection == nil, deviceLimit == nil {
            return "reason: a rule does something: a reason, a delay or latency, a connection fault or a device limit"
        }
        return nil
    }

    /// What the rule does to the connection, if anything.
    var connectionAction: ConnectionFaultAction? {
        switch connection {
        case .goaway:
            let reason = goawayReason ?? reason?.rawValue ?? "Shutdown"
            return .goAway(
                errorCode: Self.goawayErrors[goawayError ?? "NO_ERROR"] ?? 0, debugData: #"{"reason":"\#(reason)"}"#)
        case .close: return .close
        case .lowerStreams: return .lowerStreams(maxConcurrentStreams ?? 1)
        case .refuseHandshake, nil: return nil
        }
    }

    /// How long to hold the answer, in milliseconds, drawn with `random`.
    func delay(_ random: () -> Double) -> Double? {
        if let latency { return latency.sample(random) }
        return delayMilliseconds.map(Double.init)
    }
}
