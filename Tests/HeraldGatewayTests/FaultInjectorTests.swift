import HeraldCore
import Testing

@testable import HeraldGateway

/// The fault rules of one node, and how it takes the list the cluster shares.
@Suite struct FaultInjectorTests {
    @Test func theFirstMatchAnswersAndARuleWithRemainingIsUsedUp() {
        let faults = FaultInjector()
        let once = faults.add(FaultRule(topic: "a", reason: .badTopic, remaining: 1))
        let always = faults.add(FaultRule(tokenPrefix: "AB", reason: .unregistered))
        #expect(once.id == "fault-1" && always.id == "fault-2" && always.tokenPrefix == "ab")
        #expect(faults.match(topic: "a", tokenHex: "abcd")?.rule.id == once.id)
        #expect(faults.match(topic: "a", tokenHex: "abcd")?.rule.id == always.id)
        #expect(faults.match(topic: "b", tokenHex: "cdef") == nil)
    }

    /// The shared list replaces the node's; a rule the node has keeps its own `remaining`, one it
    /// used up does not come back, and one the list no longer has is gone.
    @Test func aSharedListKeepsWhatThisNodeCountedAndUsedUp() {
        let faults = FaultInjector()
        let shared = [
            FaultRule(id: "fault-a1", topic: "t", reason: .badTopic, remaining: 3),
            FaultRule(id: "fault-b2", topic: "u", reason: .unregistered, remaining: 1),
            FaultRule(id: "fault-c3", reason: .tooManyRequests),
        ]
        faults.replace(with: shared)
        #expect(faults.all.map(\.id) == ["fault-a1", "fault-b2", "fault-c3"])
        _ = faults.match(topic: "t", tokenHex: "00")
        #expect(faults.match(topic: "u", tokenHex: "00")?.rule.id == "fault-b2")
        // Another node added a rule: the list comes again with the counts it was added with.
        faults.replace(with: shared + [FaultRule(id: "fault-d4", topic: "v", reason: .badTopic)])
        #expect(faults.all.map(\.id) == ["fault-a1", "fault-c3", "fault-d4"])
        #expect(faults.all.first?.remaining == 2)
        #expect(faults.match(topic: "u", tokenHex: "00")?.rule.id == "fault-c3", "fault-b2 stays used up")
        // Removed on another node: gone here.
        faults.replace(with: [shared[2]])
        #expect(faults.all.map(\.id) == ["fault-c3"])
        // Added again under the same id after it left the list: counted afresh.
        faults.replace(with: [shared[1]])
        #expect(faults.match(topic: "u", tokenHex: "00")?.rule.id == "fault-b2")
    }
}
