import Foundation

extension Duration {
    /// The duration in seconds, as Foundation's `TimeInterval` (for `Date` arithmetic): the one
    /// conversion configurations (which hold `Duration`) use where Foundation wants seconds.
    public var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
