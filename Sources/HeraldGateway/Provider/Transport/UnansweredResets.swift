import NIOCore

/// The rapid-reset defence's count: a client's resets of streams the gateway had not answered yet
/// (a request still arriving, or one being carried out), each of which threw work away. At most
/// ``limit`` within any ``window``; one more and the connection is given up.
///
/// Resets of streams already answered cost nothing and are not counted: a client that resets its
/// streams after their answers, as some HTTP/2 clients do, is never cut off for it. (swift-nio-http2's
/// own count of every RST_STREAM frame stays on as a backstop against a flood of frames, set far
/// above what any client sends: ``ProviderPipeline``.)
struct UnansweredResets {
    /// How many may fall within ``window``.
    let limit: Int
    /// The sliding window.
    let window: TimeAmount
    /// The times of the last ``limit`` counted resets, a ring: once full, `times[next]` is the oldest.
    private var times: [NIODeadline] = []
    private var next = 0

    /// The defaults: 200 within 30 s, swift-nio-http2's own default for every reset.
    init(limit: Int = 200, window: TimeAmount = .seconds(30)) {
        precondition(limit > 0, "the limit must be positive")
        self.limit = limit
        self.window = window
    }

    /// Counts a reset at `now`: `true` when it makes more than ``limit`` within ``window``.
    mutating func record(at now: NIODeadline) -> Bool {
        if times.count < limit {
            times.append(now)
            return false
        }
        let oldest = times[next]
        times[next] = now
        next = (next + 1) % limit
        return now - oldest < window
    }
}
