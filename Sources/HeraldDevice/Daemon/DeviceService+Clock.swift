import Foundation
import HeraldCore
import HeraldRuntime

/// The manual clock: tests and demos move the device's time by hand.
extension DeviceService {
    /// The device's time.
    public var now: Date { clock.now() }

    /// Whether the device's clock moves only when told (``advanceClock(to:)``).
    public nonisolated var clockIsManual: Bool { clock is ManualClock }

    /// Moves a manual clock forward to `date` and fires what fell due on the way, in order, before it
    /// returns. Each wake on the way is a step of its own, so a repeating trigger fires once per
    /// occurrence, and a notification scheduled by an app in between (a snooze) fires in its turn.
    public func advanceClock(to date: Date) async throws(ClockError) {
        guard let manual = clock as? ManualClock else { throw .notManual }
        guard date >= manual.now() else { throw .backwards(now: manual.now()) }
        while let wake = engine.nextWake, wake <= date, wake > manual.now() {
            manual.advance(to: wake)
            await tick()
        }
        manual.advance(to: date)
        await tick()
        note(.system, app: "device", "clock advanced to \(Self.clockText(date))")
    }

    static func clockText(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }

    /// Why the clock could not be moved.
    public enum ClockError: Error, CustomStringConvertible, Sendable {
        /// The device runs on the system's clock.
        case notManual
        /// The clock never goes back.
        case backwards(now: Date)

        public var description: String {
            switch self {
            case .notManual: "the device runs on the system clock; start it with --manual-clock to move time"
            case .backwards(let now): "the clock never goes back; it is \(DeviceService.clockText(now))"
            }
        }
    }

}
