import Foundation
import HeraldCore

/// What a fault rule does to the connection a matching push came on (docs/admin-api.md, "Fault
/// rules"): what APNs does to real providers, on purpose.
public enum ConnectionFault: String, Sendable, Codable, CaseIterable {
    /// Answer, then GOAWAY (`goawayError`, `{"reason": goawayReason}`): streams after the push's are
    /// refused, the connection closes once the others are answered.
    case goaway
    /// Close the connection without answering: the push's stream, and any other in flight, get nothing.
    case close
    /// SETTINGS lowering `MAX_CONCURRENT_STREAMS` to `maxConcurrentStreams` (1 by default, as APNs is
    /// observed to do after a refused push), then answer.
    case lowerStreams = "lower-streams"
    /// Refuse the TLS handshake of a new provider connection (a `handshake_failure` alert): matches
    /// connections, not pushes, so it takes no topic or token prefix.
    case refuseHandshake = "refuse-handshake"
}

/// What the transport does besides (or instead of) writing a push's answer.
public enum ConnectionFaultAction: Sendable, Equatable {
    /// GOAWAY after the answer, with this HTTP/2 error code and debug data.
    case goAway(errorCode: UInt32, debugData: String)
    /// Close the connection instead of answering.
    case close
    /// SETTINGS `MAX_CONCURRENT_STREAMS` before the answer.
    case lowerStreams(Int)
}

/// How long a fault rule holds the answer: fixed, uniform between two bounds, or log-normal with a
/// given median and 99th percentile (the shape of real network latency).
public struct FaultLatency: Sendable, Codable, Equatable {
    /// The distributions.
    public enum Distribution: String, Sendable, Codable { case fixed, uniform, lognormal }
    /// Which one.
    public var distribution: Distribution
    /// `fixed`: the delay, in milliseconds.
    public var milliseconds: Double?
    /// `uniform`: the bounds, in milliseconds.
    public var min: Double?
    /// See ``min``.
    public var max: Double?
    /// `lognormal`: the median, in milliseconds.
    public var p50: Double?
    /// `lognormal`: the 99th percentile, in milliseconds (at least the median).
    public var p99: Double?

    /// Creates a latency.
    public init(
        distribution: Distribution, milliseconds: Double? = nil, min: Double? = nil, max: Double? = nil,
        p50: Double? = nil, p99: Double? = nil
    ) {
        self.distribution = distribution
        self.milliseconds = milliseconds
        self.min = min
        self.max = max
        self.p50 = p50
        self.p99 = p99
    }

    /// Why it cannot be used, naming the field; `nil` when it can.
    public var problem: String? {
        func positive(_ value: Double?, _ name: String) -> String? {
            guard let value else { return "latency.\(name): required for \(distribution.rawValue)" }
            return (0...Self.longest).contains(value)
                ? nil : "latency.\(name): a number of milliseconds, from 0 to \(Int(Self.longest)) (10 minutes)"
        }
        switch distribution {
        case .fixed: return positive(milliseconds, "milliseconds")
        case .uniform:
            if let problem = positive(min, "min") ?? positive(max, "max") { return problem }
            return min! <= max! ? nil : "latency.max: at least latency.min"
        case .lognormal:
            if let problem = positive(p50, "p50") ?? positive(p99, "p99") { return problem }
            if p50! <= 0 { return "latency.p50: more than 0 milliseconds" }
            return p50! <= p99! ? nil : "latency.p99: at least latency.p50"
        }
    }

    /// The longest a rule holds an answer, in milliseconds (10 minutes): every delay drawn is cut to it.
    public static let longest: Double = 600_000

    /// z of the standard normal distribution's 99th percentile.
    static let z99 = 2.326_347_874_040_840_8

    /// A delay in milliseconds, drawn with `random` (uniform in [0, 1)), at most ``longest``.
    public func sample(_ random: () -> Double) -> Double {
        let drawn = draw(random)
        return drawn.isFinite ? Swift.min(Swift.max(drawn, 0), Self.longest) : Self.longest
    }

    private func draw(_ random: () -> Double) -> Double {
        switch distribution {
        case .fixed: return milliseconds ?? 0
        case .uniform:
            let low = min ?? 0
            return low + ((max ?? low) - low) * random()
        case .lognormal:
            let median = p50 ?? 1
            let sigma = Foundation.log((p99 ?? median) / median) / Self.z99
            // Box–Muller: one standard normal from two uniforms (1 − u keeps the log finite).
            let normal = (-2 * Foundation.log(1 - random())).squareRoot() * cos(2 * Double.pi * random())
            return median * exp(sigma * normal)
        }
    }
}
