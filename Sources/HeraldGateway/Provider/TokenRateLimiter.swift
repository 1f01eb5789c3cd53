import Foundation
import HeraldCore
import Synchronization

/// `TooManyRequests` (429) beyond a configured rate of pushes to one device token: a token
/// bucket per token. A rate of 0 turns the limit off.
public final class TokenRateLimiter: Sendable {
    struct Bucket {
        var tokens: Double
        var updated: TimeInterval
    }
    /// Pushes per second allowed to one token, sustained.
    public let rate: Double
    /// Pushes allowed in a burst.
    public let burst: Double
    private let buckets = Mutex<[DeviceToken: Bucket]>([:])

    /// Creates a limiter; `rate <= 0` disables it.
    public init(ratePerSecond: Double, burst: Double) {
        self.rate = ratePerSecond
        self.burst = max(burst, 1)
    }

    /// Takes one push from the token's bucket; `false` means answer `TooManyRequests`.
    public func allow(_ token: DeviceToken, now: Date) -> Bool {
        guard rate > 0 else { return true }
        let t = now.timeIntervalSince1970
        return buckets.withLock { all in
            var bucket = all[token] ?? Bucket(tokens: burst, updated: t)
            bucket.tokens = min(burst, bucket.tokens + max(0, t - bucket.updated) * rate)
            bucket.updated = t
            let allowed = bucket.tokens >= 1
            if allowed { bucket.tokens -= 1 }
            all[token] = bucket
            if all.count > 100_000 {
                // Forget full buckets: they behave exactly like new ones.
                all = all.filter { t - $0.value.updated < burst / rate }
            }
            return allowed
        }
    }
}
