import Foundation
import Testing

@testable import HeraldGateway

/// The gateway's memory of the upgrade resumptions it accepted: each is accepted once while its
/// time is within the window, and the memory does not grow without end.
@Suite struct RecentProofsTests {
    static func proof(_ n: UInt8) -> Data { Data([n] + [UInt8](repeating: 0xAB, count: 31)) }

    @Test func aProofIsAcceptedOnceForAtLeastTwiceTheWindow() {
        let proofs = RecentProofs(window: 30, now: 1000)
        #expect(proofs.insert(Self.proof(1), now: 1000))
        #expect(!proofs.insert(Self.proof(1), now: 1000))
        #expect(proofs.insert(Self.proof(2), now: 1000))
        // Inserted just before the generation turns: still known 60 s later.
        #expect(proofs.insert(Self.proof(3), now: 1059))
        #expect(!proofs.insert(Self.proof(3), now: 1060))
        #expect(!proofs.insert(Self.proof(3), now: 1119))
        #expect(!proofs.insert(Self.proof(1), now: 1100))
        // Two generations on, the first ones are forgotten (by then their time is far outside the window).
        #expect(proofs.insert(Self.proof(1), now: 1180))
        #expect(proofs.insert(Self.proof(3), now: 1180))
    }

    @Test func aLongSilenceForgetsEverything() {
        let proofs = RecentProofs(window: 30, now: 0)
        #expect(proofs.insert(Self.proof(1), now: 0))
        #expect(proofs.insert(Self.proof(2), now: 70))
        // 130 s after the generation began at 70: both generations are older than the window.
        #expect(proofs.insert(Self.proof(2), now: 200))
        #expect(proofs.insert(Self.proof(1), now: 200))
    }
}
