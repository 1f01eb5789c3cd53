import Crypto
import Foundation
import HeraldCore
import HeraldRuntime
import HeraldTesting
import ServiceLifecycle
import Synchronization
import Testing

@testable import HeraldGateway

/// Two nodes on one PostgreSQL database (here: two stores and directories in one process): what one
/// changes, the other's ``DirectoryFollower`` reads back, and a follower that stopped hearing
/// notifications reads everything again when it listens anew.
@Suite struct ClusterDirectoryTests {
    struct Node {
        let directory: GatewayDirectory
        let store: PostgresGatewayStore
        let follower: DirectoryFollower
    }

    static let issuer = TokenIssuer(secret: Array(repeating: 7, count: 32))

    static func node(_ url: String) async throws -> Node {
        let store = try await PostgresGatewayStore.forTests(url: url)
        let directory = try await GatewayDirectory.open(store: store, issuer: issuer)
        return Node(
            directory: directory, store: store,
            follower: DirectoryFollower(
                registry: directory.registry, store: store, logger: .silent, retry: .milliseconds(200)))
    }

    /// Runs `body` while `nodes`' followers run (each has started listening first).
    static func following(_ nodes: [Node], _ body: () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for node in nodes { group.addTask { try await node.follower.run() } }
            for node in nodes {
                // Each change reaches the other node through the PostgreSQL server (another process): its
                // NOTIFY, then the follower's read. There is nothing in this process to await but the result.
                try await waitUntil("the follower listens", within: .seconds(60)) {
                    node.follower.progress.applied >= 1
                }
            }
            do {
                try await body()
            } catch {
                group.cancelAll()
                throw error
            }
            group.cancelAll()
        }
    }

    @Test func whatOneNodeChangesTheOtherSees() async throws {
        let url = try await TestPostgres.database()
        let a = try await Self.node(url)
        let b = try await Self.node(url)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let key = P256.Signing.PrivateKey()
        try await Self.following([a, b]) {
            try await a.directory.putTeam(id: "TEAM123456")
            try await a.directory.putKey(id: "KEY1234567", teamID: "TEAM123456", publicKey: key.publicKey)
            try await a.directory.putApp(bundleID: "com.example.demo", teamID: "TEAM123456")
            _ = try await a.directory.registerDevice(id: "d1", now: now)
            let registration = try await a.directory.registerApp(
                device: "d1", bundleID: "com.example.demo", environment: .development, now: now)
            let registry = b.directory.registry
            // Through the PostgreSQL server, as above.
            try await waitUntil("B has A's registration", within: .seconds(60)) {
                registry.registration(registration.token, in: .development)?.invalidatedAt == nil
                    && registry.currentToken(device: "d1", bundleID: "com.example.demo", environment: .development)
                        == registration.token
            }
            #expect(registry.team("TEAM123456") != nil)
            #expect(registry.app("com.example.demo")?.teamID == "TEAM123456")
            #expect(registry.verifier("KEY1234567")?.1.rawRepresentation == key.publicKey.rawRepresentation)

            // A key revoked on B: A's provider API refuses its tokens.
            try await b.directory.revokeKey("KEY1234567")
            // Through the PostgreSQL server, as above.
            try await waitUntil("A sees the key revoked", within: .seconds(60)) {
                a.directory.registry.key("KEY1234567")?.revoked == true
            }

            // The app removed from the device on A: its token is unregistered on B too (410).
            try await a.directory.unregisterApp(
                device: "d1", bundleID: "com.example.demo", environment: .development, now: now)
            // Through the PostgreSQL server, as above.
            try await waitUntil("B sees the app removed", within: .seconds(60)) {
                registry.registration(registration.token, in: .development)?.invalidation == .appRemoved
            }
            #expect(registry.currentToken(device: "d1", bundleID: "com.example.demo", environment: .development) == nil)

            // Deleted records leave the other registry.
            try await a.directory.removeKey("KEY1234567")
            try await a.directory.removeApp("com.example.demo")
            // Through the PostgreSQL server, as above.
            try await waitUntil("B drops the key and the app", within: .seconds(60)) {
                registry.key("KEY1234567") == nil && registry.app("com.example.demo") == nil
            }
            #expect(registry.verifier("KEY1234567") == nil)

            // Many devices registered in one go on A (the bulk path) all arrive.
            let ids = (0..<500).map { "bulk\($0)" }
            try await a.directory.putApp(bundleID: "com.example.bulk", teamID: "TEAM123456")
            let tokens = try await a.directory.registerDevices(
                ids, app: "com.example.bulk", environment: .production, now: now
            ).map(\.token)
            // Through the PostgreSQL server, as above.
            try await waitUntil("B has the 500 devices", within: .seconds(60)) {
                tokens.allSatisfy { registry.registration($0, in: .production) != nil }
                    && ids.allSatisfy { registry.device($0) != nil }
            }
        }
    }

    /// A resumption ticket one node issued is accepted by the other (the same token secret), and is
    /// refused there once the other node has read that its device was reset or deleted on the first
    /// (docs/security.md, "Resumption tickets").
    @Test func aTicketIsVoidOnEveryNodeOnceItsDeviceIsResetOrDeletedOnOne() async throws {
        let url = try await TestPostgres.database()
        let a = try await Self.node(url)
        let b = try await Self.node(url)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let key = P256.Signing.PrivateKey().publicKey.x963Representation
        let onA = LinkTickets(issuer: Self.issuer, lifetime: .seconds(3600))
        let onB = LinkTickets(issuer: Self.issuer, lifetime: .seconds(3600))
        func refusal(_ ticket: LinkTicket, device: String) -> String? {
            let nonce = Data(repeating: 3, count: 32)
            let result = onB.check(
                claimed: device, ticket: ticket.ticket,
                proof: DeviceLink.resumeProof(secret: ticket.secret, nonce: nonce),
                authenticating: DeviceLink.resumedBytes(nonce: nonce), now: now,
                record: { b.directory.registry.device($0) })
            if case .failure(let refusal) = result { return refusal.message }
            return nil
        }
        try await Self.following([a, b]) {
            let reset = try await a.directory.registerDevice(id: "t1", publicKey: key, now: now)
            let deleted = try await a.directory.registerDevice(id: "t2", publicKey: key, now: now)
            let resetTicket = try #require(onA.issue(for: reset, now: now))
            let deletedTicket = try #require(onA.issue(for: deleted, now: now))
            // Through the PostgreSQL server, as above.
            try await waitUntil("B has both devices", within: .seconds(60)) {
                b.directory.registry.device("t1") != nil && b.directory.registry.device("t2") != nil
            }
            #expect(refusal(resetTicket, device: "t1") == nil)
            #expect(refusal(deletedTicket, device: "t2") == nil)

            _ = try await a.directory.resetDevice("t1", now: now)
            try await a.directory.deleteDevice("t2", now: now)
            // Through the PostgreSQL server, as above.
            try await waitUntil("B sees the reset and the deletion", within: .seconds(60)) {
                b.directory.registry.device("t1")?.generation == reset.generation + 1
                    && b.directory.registry.device("t2")?.deletedAt != nil
            }
            #expect(refusal(resetTicket, device: "t1") == "the device was reset since the ticket was issued")
            #expect(refusal(deletedTicket, device: "t2") == "device t2 is not registered")
        }
    }

    /// A follower whose listening connection is cut misses what changes meanwhile: it listens
    /// again and reads the whole directory.
    @Test func aFollowerThatStoppedHearingReadsEverythingAgain() async throws {
        let url = try await TestPostgres.database()
        let server = try await TestPostgres.server()
        let database = String(url.split(separator: "/").last!)
        let a = try await Self.node(url)
        let b = try await Self.node(url)
        try await Self.following([b]) {
            #expect(b.follower.progress.listens == 1)
            // Cut B's listening connection; a's change is committed before B listens again.
            let terminated = try server.sql(
                """
                SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE datname = '\(database)' AND query LIKE 'LISTEN%'
                """, database: database)
            #expect(terminated.trimmingCharacters(in: .whitespacesAndNewlines) == "1")
            try await a.directory.putTeam(id: "TEAMMISSED")
            // Through the PostgreSQL server, as above.
            try await waitUntil("B listens again and reads everything", within: .seconds(60)) {
                b.follower.progress.listens >= 2 && b.directory.registry.team("TEAMMISSED") != nil
            }
        }
    }

    /// A node that listened before it read the directory (a ``DirectoryFollower/Primer``): its
    /// follower applies what changed since then and goes on hearing on the primer's connection,
    /// never reading the whole directory again.
    @Test func aPrimedFollowerReadsOnlyWhatChangedSinceItListened() async throws {
        let url = try await TestPostgres.database()
        let a = try await Self.node(url)
        try await a.directory.putTeam(id: "TEAMBEFORE")
        let store = try await PostgresGatewayStore.forTests(url: url)
        let primer = try await DirectoryFollower.Primer.listen(store: store)
        // Committed after B listened and before it reads: read, and heard too.
        try await a.directory.putTeam(id: "TEAMBETWIX")
        let directory = try await GatewayDirectory.open(store: store, issuer: Self.issuer)
        #expect(directory.registry.team("TEAMBEFORE") != nil && directory.registry.team("TEAMBETWIX") != nil)
        // Committed after B read and before its follower runs: only heard.
        try await a.directory.putTeam(id: "TEAMAFTERS")
        #expect(directory.registry.team("TEAMAFTERS") == nil)
        let (follower, applied) = Self.recordingFollower(directory: directory, store: store, primer: primer)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await follower.run() }
            // Through the PostgreSQL server, as in the tests above.
            try await waitUntil("B applies what it heard before running", within: .seconds(60)) {
                directory.registry.team("TEAMAFTERS") != nil
            }
            // Heard on the primer's connection while the follower runs.
            try await a.directory.removeTeam("TEAMBEFORE")
            try await waitUntil("B sees the team removed", within: .seconds(60)) {
                directory.registry.team("TEAMBEFORE") == nil
            }
            group.cancelAll()
        }
        let sets = applied.all
        #expect(!sets.contains { $0.contains(.everything) })
        #expect(sets.contains { $0.contains(.team("TEAMAFTERS")) })
        #expect(follower.progress.listens == 1)
    }

    /// A primer whose connection is cut before its follower runs heard nothing of what changed
    /// after: the follower listens anew and reads the whole directory.
    @Test func aPrimedFollowerWhosePrimerWasCutReadsEverything() async throws {
        let url = try await TestPostgres.database()
        let server = try await TestPostgres.server()
        let database = String(url.split(separator: "/").last!)
        let a = try await Self.node(url)
        let store = try await PostgresGatewayStore.forTests(url: url)
        let primer = try await DirectoryFollower.Primer.listen(store: store)
        let directory = try await GatewayDirectory.open(store: store, issuer: Self.issuer)
        let terminated = try server.sql(
            """
            SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
            WHERE datname = '\(database)' AND query LIKE 'LISTEN%'
            """, database: database)
        #expect(terminated.trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        try await a.directory.putTeam(id: "TEAMMISSED")
        let (follower, applied) = Self.recordingFollower(directory: directory, store: store, primer: primer)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await follower.run() }
            // Through the PostgreSQL server, as in the tests above.
            try await waitUntil("B listens again and reads everything", within: .seconds(60)) {
                directory.registry.team("TEAMMISSED") != nil
            }
            group.cancelAll()
        }
        #expect(applied.all.contains { $0.contains(.everything) })
        #expect(follower.progress.listens >= 2)
    }

    /// Each set of changes a follower applied.
    final class Applied: Sendable {
        private let sets = Mutex<[Set<DirectoryChange>]>([])
        func append(_ changes: Set<DirectoryChange>) { sets.withLock { $0.append(changes) } }
        var all: [Set<DirectoryChange>] { sets.withLock { $0 } }
    }

    /// A directory follower that also records each set of changes it applies.
    static func recordingFollower(
        directory: GatewayDirectory, store: PostgresGatewayStore, primer: DirectoryFollower.Primer
    ) -> (DirectoryFollower, Applied) {
        let applied = Applied()
        let registry = directory.registry
        let follower = DirectoryFollower(store: store, retry: .milliseconds(200), primer: primer) { changes in
            applied.append(changes)
            registry.apply(try await store.reload(changes))
        }
        return (follower, applied)
    }
}
