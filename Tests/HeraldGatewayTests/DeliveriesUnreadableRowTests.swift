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

        // One push's log: whole, or said to be unreadable.
        let whole3 = try await Exchange.curl("GET", admin + "/deliveries/id-3", headers: [bearer])
        #expect(whole3.status == 200 && whole3.headers["herald-unreadable-log-rows"] == nil, "\(whole3)")
        let unreadable = try await Exchange.curl("GET", admin + "/deliveries/id-2", headers: [bearer])
        #expect(unreadable.status == 500, "\(unreadable)")
        #expect(unreadable.body.contains("the delivery log of id-2 is 1 row(s) this gateway cannot read"))
        // A push with a readable row and an unreadable one: the readable steps, and the count.
        var more = StoreBatch()
        let later = Date(timeIntervalSince1970: 2e9)
        more.events = [DeliveryEvent(apnsID: "id-3", uniqueID: nil, kind: .stored, at: later)]
        _ = try await store.commit(more, policy: OfflinePolicy())
        try await store.writer.write { db in
            try db.execute(sql: "UPDATE event SET record = x'7B22FF' WHERE seq = (SELECT MAX(seq) FROM event)")
        }
        let partly = try await Exchange.curl("GET", admin + "/deliveries/id-3", headers: [bearer])
        #expect(partly.status == 200 && partly.headers["herald-unreadable-log-rows"] == "1", "\(partly)")
        let steps = try JSONSerialization.jsonObject(with: Data(partly.body.utf8)) as? [[String: Any]] ?? []
        #expect(steps.compactMap { $0["kind"] as? String } == ["discarded"], "\(partly.body)")
        await gateway.stop()
    }
}
