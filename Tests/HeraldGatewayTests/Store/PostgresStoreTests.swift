import Foundation
import Synchronization
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldGateway

/// What only the PostgreSQL store has: a schema migrated at start and refused when newer, URLs,
/// and several nodes (here: several pools) writing one offline queue at once. The behaviour both
/// stores share is tested against both in the suites per subject (`DirectoryStoreTests`,
/// `PushStoreTests`, `ChannelStoreTests`) and `DeliveryHistoryTests`; the nodes in `NodeStoreTests`.
@Suite struct PostgresStoreTests {
    @Test func theSchemaIsMigratedOnceAndANewerOneIsRefused() async throws {
        let url = try await TestPostgres.database()
        let server = try await TestPostgres.server()
        let database = String(url.split(separator: "/").last!)
        _ = try await PostgresGatewayStore.forTests(url: url)
        _ = try await PostgresGatewayStore.forTests(url: url)
        #expect(
            try server.sql("SELECT version || ':' || name FROM herald_schema ORDER BY version", database: database)
                .split(separator: "\n") == [
                    "1:gateway", "2:fault rules", "3:nodes", "4:broadcast channels", "5:delivery counts",
                ])
        try server.sql("INSERT INTO herald_schema (version, name) VALUES (99, 'from the future')", database: database)
        let error = await #expect(throws: PostgresGatewayStore.OpenError.self) {
            _ = try await PostgresGatewayStore.forTests(url: url)
        }
        #expect(error?.description.contains("schema is at version 99, newer than this herald knows (5)") == true)
    }

    @Test func badURLsNameWhatIsWrong() async throws {
        for (url, words) in [
            ("mysql://u@h/db", "must be a URL like postgres://"),
            ("postgres:///db", "names no host"),
            ("postgres://127.0.0.1/db", "names no user"),
            ("postgres://u@127.0.0.1/", "names no database"),
            ("postgres://u@127.0.0.1/db?sslmode=sometimes", "sslmode must be disable, prefer or require"),
        ] {
            let error = await #expect(throws: PostgresGatewayStore.OpenError.self, "\(url)") {
                _ = try await PostgresGatewayStore.open(url: url)
            }
            #expect(error?.description.contains(words) == true, "\(url): \(String(describing: error))")
        }
        // A password never appears in a message.
        let error = await #expect(throws: PostgresGatewayStore.OpenError.self) {
            _ = try await PostgresGatewayStore.open(url: "postgres://u:secret@127.0.0.1/")
        }
        #expect(error?.description.contains("secret") == false)
        #expect(error?.description.contains("u:***@") == true)
    }

    @Test func aServerThatIsNotThereIsReportedWithinTheConnectTimeout() async throws {
        let port = try PrivatePostgres.freeLoopbackPort()
        let error = await #expect(throws: PostgresGatewayStore.OpenError.self) {
            _ = try await PostgresGatewayStore.open(
                url: "postgres://herald@127.0.0.1:\(port)/herald", connectTimeout: .seconds(2))
        }
        #expect(error?.description.contains("could not open the database postgres://herald@127.0.0.1:\(port)") == true)
    }

    /// Two nodes storing for the same (device, topic) at the same moment: the queue still ends at
    /// the policy's depth, and every push that went is reported as replaced exactly once.
    @Test func nodesStoringForOneQueueAtOnceKeepThePolicy() async throws {
        let url = try await TestPostgres.database()
        let nodes = [
            try await PostgresGatewayStore.forTests(url: url), try await PostgresGatewayStore.forTests(url: url),
        ]
        let later = Date(timeIntervalSince1970: 4_000_000_000)
        let count = 40
        let replaced = try await withThrowingTaskGroup(of: [String].self) { group in
            for i in 0..<count {
                group.addTask {
                    var batch = StoreBatch()
                    batch.pushes = [
                        StoredPush(
                            apnsID: "p\(i)", uniqueID: nil, deviceID: "d1", token: DeviceToken(bytes: [1]),
                            environment: .development, topic: "com.example.app", pushType: .alert, priority: .immediate,
                            collapseID: nil, expiresAt: later, receivedAt: Date(timeIntervalSince1970: Double(i)),
                            payload: Data("{}".utf8), contentAvailable: false)
                    ]
                    return try await nodes[i % 2].commit(batch, policy: OfflinePolicy(depth: 2))
                }
            }
            var all: [String] = []
            for try await ids in group { all += ids }
            return all
        }
        let pending = try await nodes[0].pending(device: "d1", now: .distantPast)
        #expect(pending.count == 2)
        #expect(replaced.count == count - 2)
        #expect(Set(replaced).union(pending.map(\.apnsID)) == Set((0..<count).map { "p\($0)" }))
        for id in replaced {
            #expect(try await nodes[1].deliveryLog(id: id).map(\.kind) == [.replaced], "\(id)")
        }
    }

    /// The database restarted under the store: while it is down a write fails (the gateway answers
    /// 503 ServiceUnavailable) instead of hanging, and once it is back the
    /// pool reconnects and what was committed before is all there.
    @Test func writesFailWhileTheDatabaseIsDownAndWorkOnceItIsBack() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-pg-restart-\(UUID())")
        let server = try await offThread {
            try PrivatePostgres.start(
                dataDirectory: directory.appendingPathComponent("data"), settings: ["fsync": "off"])
        }
        defer { server.destroy() }
        let url = try await offThread { try server.createDatabase("restart") }
        let store = try await PostgresGatewayStore.forTests(url: url, statementTimeout: .seconds(5))
        defer { store.close() }
        func batch(_ id: String) -> StoreBatch {
            var batch = StoreBatch()
            batch.pushes = [
                StoredPush(
                    apnsID: id, uniqueID: nil, deviceID: "d1", token: DeviceToken(bytes: [1]),
                    environment: .development,
                    topic: "com.example.app", pushType: .alert, priority: .immediate, collapseID: nil,
                    expiresAt: Date(timeIntervalSince1970: 4_000_000_000), receivedAt: Date(timeIntervalSince1970: 0),
                    payload: Data("{}".utf8), contentAvailable: false)
            ]
            return batch
        }
        let deep = OfflinePolicy(depth: 10)
        _ = try await store.commit(batch("before"), policy: deep)
        try await offThread { try server.stop(immediate: true) }
        await #expect(throws: (any Error).self) { _ = try await store.commit(batch("while down"), policy: deep) }
        try await offThread { try server.restart(settings: ["fsync": "off"]) }
        // The pool finds its old connections dead and opens new ones: the first write may still fail.
        try await waitUntil("a write succeeds after the restart", within: .seconds(60)) {
            (try? await store.commit(batch("after"), policy: deep)) != nil
        }
        let pending = try await store.pending(device: "d1", now: Date.distantPast)
        #expect(pending.map(\.apnsID) == ["before", "after"])
    }
}
