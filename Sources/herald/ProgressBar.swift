import Foundation
import Synchronization

/// Progress on standard error: on a terminal, a bar redrawn in place (at most ten times a second)
/// with the count, percentage, rate and time left; otherwise a plain line at every tenth.
final class ProgressBar: Sendable {
    let total: Int
    let terminal: Bool
    let quiet: Bool
    let clock = ContinuousClock()
    let start: ContinuousClock.Instant
    /// The last redraw, and the last tenth reported.
    let last = Mutex<(drawn: ContinuousClock.Instant?, tenth: Int)>((nil, 0))

    init(total: Int, terminal: Bool, quiet: Bool) {
        self.total = total
        self.terminal = terminal
        self.quiet = quiet
        start = clock.now
    }

    /// Seconds since the start.
    var elapsed: Double { Double((clock.now - start) / .microseconds(1)) / 1e6 }

    /// `done` of `total` are answered.
    func update(_ done: Int) {
        guard !quiet else { return }
        let now = clock.now
        let due = last.withLock { last -> Bool in
            if terminal {
                if let drawn = last.drawn, now - drawn < .milliseconds(100), done < total { return false }
                last.drawn = now
                return true
            }
            let tenth = done * 10 / max(total, 1)
            guard tenth > last.tenth else { return false }
            last.tenth = tenth
            return true
        }
        guard due else { return }
        let seconds = Double((now - start) / .microseconds(1)) / 1e6
        let rate = Double(done) / max(seconds, 1e-6)
        let left = rate > 0 ? Double(total - done) / rate : 0
        let percent = done * 100 / max(total, 1)
        let status = "\(done)/\(total)  \(percent)%  \(Int(rate.rounded()))/s  ETA \(Self.duration(left))"
        if terminal {
            let filled = percent * 30 / 100
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: 30 - filled)
            // Carriage return, the bar, and erase to the end of the line.
            FileHandle.standardError.write(Data("\r[\(bar)] \(status)\u{1B}[K".utf8))
        } else {
            FileHandle.standardError.write(Data("sent \(status)\n".utf8))
        }
    }

    /// Ends the bar's line.
    func finish() {
        if terminal && !quiet { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    /// `42s`, `3m05s`, `1h02m`.
    static func duration(_ seconds: Double) -> String {
        let s = Int(seconds.rounded(.up))
        if s < 60 { return "\(s)s" }
        if s < 3600 { return String(format: "%dm%02ds", s / 60, s % 60) }
        return String(format: "%dh%02dm", s / 3600, (s % 3600) / 60)
    }
}
