import Foundation
import Testing

@testable import HeraldGateway

/// The test API's memory of what devices acknowledged: a ring that says when it no longer reaches
/// back to a mark.
@Suite struct ReceivedPushesTests {
    func entry(_ n: Int, device: String = "d") -> ReceivedPushes.Entry {
        ReceivedPushes.Entry(
            apnsID: "p\(n)", uniqueID: nil, deviceID: device, topic: "t", payload: Data("{}".utf8),
            deliveredAt: Date(timeIntervalSince1970: Double(n)), acknowledgedAt: Date(timeIntervalSince1970: Double(n)),
            fromStorage: false)
    }

    @Test func aRingByDeviceSinceAMarkThatKnowsWhatItForgot() {
        let ring = ReceivedPushes(capacity: 4)
        for n in 1...3 { ring.record(entry(n)) }
        ring.record(entry(4, device: "other"))
        let all = ring.received(by: "d", since: .distantPast)
        #expect(all.entries.map(\.apnsID) == ["p1", "p2", "p3"] && all.complete)
        #expect(ring.received(by: "d", since: Date(timeIntervalSince1970: 2)).entries.map(\.apnsID) == ["p2", "p3"])
        // Two more: p1 and p2 are forgotten, oldest first; a mark before them is no longer covered.
        ring.record(entry(5))
        ring.record(entry(6))
        let later = ring.received(by: "d", since: .distantPast)
        #expect(later.entries.map(\.apnsID) == ["p3", "p5", "p6"] && !later.complete)
        #expect(!ring.received(by: "d", since: Date(timeIntervalSince1970: 2)).complete)
        #expect(ring.received(by: "d", since: Date(timeIntervalSince1970: 3)).complete)
        ring.removeAll()
        #expect(ring.received(by: "d", since: .distantPast).entries.isEmpty)
    }
}
