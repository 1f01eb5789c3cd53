import Foundation
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldGateway

/// The admin API's history of recent pushes (`GET /deliveries`) when a row of the delivery log
/// cannot be read: the other pushes are listed, and a header says how many rows were left out.
@Suite struct DeliveriesUnreadableRowTests {
    @Test func theHistoryListsWhatItCanReadAndCountsTheRest() async throws {
        let gateway = try await TestGateway.start(apps: ["com.example.history"])
        let admin = try #require(gateway.info["adminURL"])
        let bearer = "authorization: Bearer \(gateway.gateway.adminToken)"
        var batch = StoreBatch()
        for i in 1...3 {
            let at = Date(timeIntervalSince1970: 1e9 + Double(i))
            batch.events.append(DeliveryEvent(apnsID: "id-\(i)", uniqueID: nil, kind: .discarded, at: at))
        }
        let store = try #require(gateway.gateway.router.offline.store as? SQLiteGatewayStore)
        _ = try await store.commit(batch, policy: OfflinePolicy())
        func history() async throws -> (ids: [String], unreadable: String?) {
            let answer = try await Exchange.curl("GET", admin + "/deliveries", headers: [bearer])
            #expect(answer.status == 200, "\(answer)")
            let entries = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [[String: Any]] ?? []
            return (entries.compactMap { $0["apnsID"] as? String }, answer.headers["herald-unreadable-log-rows"])
        }
        let whole = try await history()
        #expect(whole.ids == ["id-3", "id-2", "id-1"] && whole.unreadable == nil, "\(whole)")

        try await store.writer.write { db in
            try db.execute(sql: "UPDATE event SET record = x'7B22FF' WHERE apnsID = 'id-2'")
        }
        let damaged = try await history()
        #expect(damaged.ids == ["id-3", "id-1"], "\(damaged)")
        #expect(damaged.unreadable == "1")
        await gateway.stop()
    }
}
