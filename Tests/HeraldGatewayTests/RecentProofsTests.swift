import Foundation
import Testing

@testable import HeraldGateway

/// The gateway's memory of the upgrade resumptions it accepted: each is accepted once while its
/// time is within the window, whatever the clock does meanwhile, and the memory does not grow
/// without end.
@Suite struct RecentProofsTests {
    static func proof(_ n: Int) -> Data {
        Data([UInt8(n >> 8), UInt8(n & 0xFF)] + [UInt8](repeating: 0xAB, count: 30))
    }

    @Test func aProofIsRememberedUntilItsRequestCanNoLongerBeAccepted() {
        let proofs = RecentProofs(window: 30)
        #expect(proofs.insert(Self.proof(1), time: 1000, now: 1000, uptime: 0))
        #expect(!proofs.insert(Self.proof(1), time: 1000, now: 1000, uptime: 0))
        #expect(proofs.insert(Self.proof(2), time: 1000, now: 1000, uptime: 0))
        // The last second a copy of a request at 1000 can be accepted is 1031 (docs/security.md):
        // at 1031, 31 s of uptime later, it is still known.
        #expect(!proofs.insert(Self.proof(1), time: 1000, now: 1031, uptime: 31))
        // A request of 1029 seen at 1000 (the device's clock ahead) is known until 1060.
        #expect(proofs.insert(Self.proof(3), time: 1029, now: 1000, uptime: 0))
        #expect(!proofs.insert(Self.proof(3), time: 1029, now: 1060, uptime: 60))
        // Once the clock is past every time of a span by more than the window and the span has
        // had no new proof for 62 s of uptime, the span is forgotten whole.
        #expect(proofs.insert(Self.proof(9), time: 1070, now: 1070, uptime: 70))
        #expect(proofs.count == 1, "the spans of 990…1019 and 1020…1049 are forgotten")
        #expect(proofs.insert(Self.proof(1), time: 1000, now: 1070, uptime: 70))
        // 9's copy is still refused at 1101, the last second its request is within the window.
        #expect(!proofs.insert(Self.proof(9), time: 1070, now: 1101, uptime: 101))
    }

    @Test func aClockSteppedForwardAndBackForgetsNothing() {
        let proofs = RecentProofs(window: 30)
        #expect(proofs.insert(Self.proof(1), time: 5000, now: 5000, uptime: 10))
        // The clock jumps a day ahead: a sweep there must not forget 1, whose request the clock
        // can accept again once it is stepped back.
        #expect(proofs.insert(Self.proof(2), time: 91_400, now: 91_400, uptime: 20))
        #expect(!proofs.insert(Self.proof(1), time: 5000, now: 5010, uptime: 30))
        #expect(proofs.count == 2)
    }

    @Test func aClockSteppedBackKeepsOnlyWhatItCanStillAccept() {
        let proofs = RecentProofs(window: 30)
        // A year of accepted requests, one a second, each with the clock a year back from the
        // first ones' time: the memory holds about two windows of requests, not the year.
        #expect(proofs.insert(Self.proof(0), time: 40_000_000, now: 40_000_000, uptime: 0))
        var uptime: Int64 = 1
        for n in 1...3_000 {
            let time = 8_000_000 + uptime
            #expect(proofs.insert(Self.proof(n), time: time, now: time, uptime: uptime))
            uptime += 1
        }
        #expect(proofs.count <= 2 * 30 + 30 + 2 + 1, "\(proofs.count) proofs remembered")
        // The one from before the step is kept: the clock may come back to it.
        #expect(!proofs.insert(Self.proof(0), time: 40_000_000, now: 40_000_010, uptime: uptime))
    }

    @Test func anyTimeIsTakenWithoutTrapping() {
        let proofs = RecentProofs(window: 30)
        #expect(proofs.insert(Self.proof(1), time: .min, now: .max, uptime: 0))
        #expect(proofs.insert(Self.proof(2), time: .max, now: .min, uptime: 100))
        #expect(!proofs.insert(Self.proof(1), time: .min, now: 0, uptime: 100))
        #expect(proofs.insert(Self.proof(3), time: -1, now: 0, uptime: 1_000))
        #expect(proofs.count == 2, "the span of .min is over by every clock: forgotten")
    }
}
