import Testing

@testable import HeraldDevice

/// The device's waits before it connects again after a stopping gateway's `goaway`.
@Suite struct ReconnectBackoffTests {
    /// After a stopping gateway's `goaway`: anywhere in its window, uniformly, never outside it.
    @Test func aDrainWaitIsAPointOfTheWindow() {
        #expect(ReconnectBackoff.drainDelay(within: 10, jitter: 0) == 0)
        #expect(ReconnectBackoff.drainDelay(within: 10, jitter: 0.25) == 2.5)
        #expect(ReconnectBackoff.drainDelay(within: 10, jitter: 1) == 10)
        #expect(ReconnectBackoff.drainDelay(within: 10, jitter: 7) == 10)
        #expect(ReconnectBackoff.drainDelay(within: -1, jitter: 0.5) == 0)
        // A window of any length (the largest a goaway can name, in seconds) is ten minutes at most.
        #expect(ReconnectBackoff.drainDelay(within: Double(Int64.max) / 1000, jitter: 1) == 600)
        #expect(ReconnectBackoff.drainDelay(within: 601, jitter: 0.5) == 300)
        // After a goaway the failures start again; after a failure they count up.
        var failures = 3
        #expect(ReconnectBackoff.wait(drain: 4, failures: &failures, base: 0.5, maximum: 30, jitter: 0.5) == 2)
        #expect(failures == 0)
        #expect(ReconnectBackoff.wait(drain: nil, failures: &failures, base: 0.5, maximum: 30, jitter: 1) == 0.5)
        #expect(failures == 1)
    }
}
