import Foundation
import Testing

@testable import HeraldGateway

/// `/readyz`'s verdicts by phase; the store's part is tested end to end (`OperationsEndToEndTests`, a
/// PostgreSQL server stopped under a running gateway).
@Suite struct GatewayReadinessTests {
    @Test func saysWhyItIsNotReady() async throws {
        let store = try SQLiteGatewayStore(path: nil)
        let readiness = GatewayReadiness()
        #expect(readiness.current == .starting)
        let starting = await readiness.verdict(store: store)
        #expect(starting.0 == .serviceUnavailable)
        #expect(starting.1 == ["status": "starting", "reason": "the gateway's listeners are not all bound yet"])

        readiness.set(.ready)
        let ready = await readiness.verdict(store: store)
        #expect(ready.0 == .ok)
        #expect(ready.1 == ["status": "ready"])

        readiness.set(.stopping)
        let stopping = await readiness.verdict(store: store)
        #expect(stopping.0 == .serviceUnavailable)
        #expect(stopping.1["status"] == "stopping")
    }
}
