import Foundation

/// How long a device waits before connecting to the push service again: exponential backoff with
/// jitter, so that devices cut off together do not all come back in the same instant.
public enum ReconnectBackoff {
    /// The wait before reconnect attempt `failures` (1, 2, …): `base · 2^(failures-1)`, at most
    /// `maximum`, then scaled by a jitter between 50% and 100% (`jitter` is 0…1).
    public static func delay(failures: Int, base: Double, maximum: Double, jitter: Double) -> Double {
        let raw = min(maximum, base * pow(2, Double(max(0, min(failures - 1, 30)))))
        return raw * (0.5 + 0.5 * min(max(jitter, 0), 1))
    }

    /// The longest drain window a device waits within, in seconds: a `goaway` may name any window,
    /// and one of days would keep the device away for days, when any of its addresses may be up.
    public static let longestDrain: Double = 600

    /// The wait after a stopping gateway's `goaway`: a point of its window (at most
    /// ``longestDrain``), uniformly (`jitter` is 0…1), so that its devices come back spread over the
    /// window rather than together.
    public static func drainDelay(within window: Double, jitter: Double) -> Double {
        min(max(0, window), longestDrain) * min(max(jitter, 0), 1)
    }

    /// The wait before the next connection: after a stopping gateway's `goaway`, a point of its
    /// window (`drain`), which is no failure (`failures` starts again); else the backoff after one
    /// failure more.
    public static func wait(drain: Double?, failures: inout Int, base: Double, maximum: Double, jitter: Double)
        -> Double
    {
        if let drain {
            failures = 0
            return drainDelay(within: drain, jitter: jitter)
        }
        failures += 1
        return delay(failures: failures, base: base, maximum: maximum, jitter: jitter)
    }
}
