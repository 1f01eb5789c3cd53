import Foundation
import Synchronization

/// The proofs of the upgrade resumptions this gateway accepted lately (docs/security.md,
/// "Resuming in the upgrade request"): a request sent again is refused while its time is still
/// within ``DeviceLink/upgradeResumeWindow`` of the gateway's clock. A proof is an HMAC over the
/// request's own random key and time, so two devices' requests never share one, and a copy has the
/// original's time; its first eight bytes are kept.
///
/// Kept by the request's time, in spans of `window` seconds: a span is forgotten whole once the
/// gateway's clock is past every request time in it by more than `window + 1` seconds (no copy of
/// those requests can be accepted any more), and not before `2 × window + 2` seconds of the
/// gateway's own uptime have passed since its last proof. So a clock stepped back does not keep
/// what it accepted since (the memory stays as large as the requests of about five windows: a span's
/// last proof may come two windows after its start, it is kept two windows more, and requests a window
/// ahead of the clock arrive meanwhile), and a clock stepped forward and back again within that time
/// forgets nothing.
final class RecentProofs: Sendable {
    private struct Span {
        var proofs: Set<UInt64> = []
        /// The latest request time in the span, in UNIX seconds.
        var latestTime: Int64
        /// The gateway's uptime at the span's last proof, in seconds.
        var lastUptime: Int64

        /// Adds `key` of a request at `time`, accepted at `uptime`; false if the span holds it.
        mutating func insert(_ key: UInt64, time: Int64, uptime: Int64) -> Bool {
            guard proofs.insert(key).inserted else { return false }
            latestTime = max(latestTime, time)
            lastUptime = uptime
            return true
        }
    }

    private struct State {
        var spans: [Int64: Span] = [:]
        /// The uptime after which the next sweep runs.
        var nextSweep: Int64 = .min
    }

    private let state = Mutex(State())
    /// The window of ``DeviceLink/upgradeResumeWindow``, in seconds (at least 1).
    let window: Int64

    /// A memory for requests accepted while their time is within `window` seconds of the clock.
    init(window: Int64) {
        self.window = max(1, window)
    }

    /// The number of proofs remembered (for tests).
    var count: Int { state.withLock { $0.spans.values.reduce(0) { $0 + $1.proofs.count } } }

    /// Remembers `proof` of a request whose time is `time`, accepted when the gateway's clock said
    /// `now` (both UNIX seconds) and its uptime was `uptime` seconds; false if it was remembered
    /// already.
    func insert(_ proof: Data, time: Int64, now: Int64, uptime: Int64) -> Bool {
        let key = proof.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let index = time / window - (time % window < 0 ? 1 : 0)
        return state.withLock { state in
            if uptime >= state.nextSweep {
                sweep(&state, now: now, uptime: uptime)
                state.nextSweep = uptime + 1
            }
            return state.spans[index, default: Span(latestTime: time, lastUptime: uptime)]
                .insert(key, time: time, uptime: uptime)
        }
    }

    /// Forgets the spans that no clock reading can accept a copy from any more.
    private func sweep(_ state: inout State, now: Int64, uptime: Int64) {
        let hold = 2 * window + 2
        state.spans = state.spans.filter { _, span in
            let (past, overflow) = now.subtractingReportingOverflow(span.latestTime)
            let timeIsOver = overflow ? now > span.latestTime : past > window + 1
            return !(timeIsOver && uptime - span.lastUptime >= hold)
        }
    }
}
