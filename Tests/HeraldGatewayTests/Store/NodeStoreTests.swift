import Foundation
import HeraldRuntime
import Synchronization
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldGateway

/// ``NodeStore``, which only the PostgreSQL store keeps: the nodes of a cluster, which of them
/// holds each device's link, and what the other nodes hear of it.
@Suite struct NodeStoreTests {
    /// Which node holds a device's link: every claim raises the epoch, a node releases only the
    /// link it claimed, a claim for a link older than the current one is refused, and a node that
    /// starts again or stops releases what it held.
    @Test func aNodeReleasesOnlyTheLinkItClaimed() async throws {
        let store = try await PostgresGatewayStore.forTests(url: try await TestPostgres.database())
        defer { store.close() }
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        try await store.registerNode(id: "node-a", address: "http://a", now: t0)
        try await store.registerNode(id: "node-b", address: "http://b", now: t0)
        let a = try #require(try await store.claimDevice("d", node: "node-a", connectedAt: t0))
        #expect(a == DeviceClaim(node: "node-a", epoch: 1))
        let b = try #require(try await store.claimDevice("d", node: "node-b", connectedAt: t0 + 5))
        #expect(b == DeviceClaim(node: "node-b", epoch: 2))
        // A's old link closes late: B's claim stays.
        #expect(try await store.releaseDevices([("d", a.epoch)], node: a.node).isEmpty)
        #expect(try await store.deviceNodes(now: t0 + 6) == ["d": "node-b"])
        #expect(try await store.deviceNode("d", now: t0 + 6) == "node-b")
        #expect(try await store.deviceNode("other", now: t0 + 6) == nil)
        // B's heartbeat stops (it was killed): its claim no longer says where the device is.
        #expect(try await store.deviceNode("d", now: t0 + 15) == nil)
        #expect(try await store.deviceNodes(now: t0 + 15) == [:])
        // A claim for a link older than B's is refused.
        #expect(try await store.claimDevice("d", node: "node-a", connectedAt: t0 + 1) == nil)
        let nodes = try await store.nodes()
        #expect(nodes.map(\.id) == ["node-a", "node-b"] && nodes.map(\.devices) == [0, 1])
        #expect(nodes[1].isAlive(at: t0 + 14) && !nodes[1].isAlive(at: t0 + 15))
        // B starts again: what it held died with it. The next claim's epoch still grows.
        try await store.registerNode(id: "node-b", address: "http://b", now: t0 + 10)
        #expect(try await store.deviceNodes(now: t0 + 10) == [:])
        #expect(try await store.deviceNode("d", now: t0 + 10) == nil)
        let again = try #require(try await store.claimDevice("d", node: "node-a", connectedAt: t0 + 11))
        #expect(again.epoch == 3)
        try await store.heartbeat(node: "node-a", address: "http://a2", now: t0 + 12)
        #expect(try await store.deviceNode("d", now: t0 + 12) == "node-a")
        try await store.stopNode(id: "node-a", now: t0 + 13)
        #expect(try await store.deviceNodes(now: t0 + 13) == [:])
        let a2 = try #require(try await store.nodes().first)
        #expect(a2.address == "http://a2" && a2.heartbeatAt == t0 + 12 && a2.stoppedAt == t0 + 13)
        #expect(!a2.isAlive(at: t0 + 13))
        #expect(
            try await store.releaseDevices([("d", again.epoch)], node: again.node).isEmpty,
            "released by the stop already")
    }

    /// A node's start or stop: its node row written, then its devices' rows released.
    enum NodeWrite: CaseIterable, Sendable {
        case start, stop
    }

    /// Nodes that start or stop together, and the claims of the devices moving between them
    /// meanwhile, lock rows of `device_node` in different orders, and PostgreSQL ends one of them to
    /// break the deadlock. A start or stop so ended runs again: the node is written and its devices
    /// released.
    @Test(arguments: NodeWrite.allCases)
    func aNodeWriteEndedToBreakADeadlockRunsAgain(write: NodeWrite) async throws {
        let url = try await TestPostgres.database()
        let database = String(url.split(separator: "/").last!)
        let server = try await TestPostgres.server()
        // PostgreSQL looks for a deadlock once, deadlock_timeout after a session starts waiting. The
        // node's write must look after this test has closed the cycle, which under a loaded machine
        // can take more than the default second: five, for every session of this database.
        _ = try server.sql(#"ALTER DATABASE "\#(database)" SET deadlock_timeout = '5s'"#, database: database)
        let store = try await PostgresGatewayStore.forTests(url: url)
        defer { store.close() }
        let other = try await PostgresGatewayStore.forTests(url: url)
        defer { other.close() }
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        try await store.registerNode(id: "node-a", address: "http://a", now: t0)
        _ = try #require(try await store.claimDevice("d", node: "node-a", connectedAt: t0))
        try await other.client.withConnection { connection in
            try await other.drain("BEGIN", on: connection)
            // Only the node's write looks for the deadlock, so that it is the one ended.
            try await other.drain("SET LOCAL deadlock_timeout = '1h'", on: connection)
            // Holds d's row, as another node's claim of it would.
            try await other.drain("UPDATE device_node SET epoch = epoch WHERE device_id = 'd'", on: connection)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    switch write {
                    case .start: try await store.registerNode(id: "node-a", address: "http://a2", now: t0 + 1)
                    case .stop: try await store.stopNode(id: "node-a", now: t0 + 1)
                    }
                }
                // The write holds node-a's row and waits for d's (in the PostgreSQL server: polled, on
                // a connection of the pool, which is quicker than a psql each time).
                try await waitUntil("the node's write waits for d's row", within: .seconds(60)) {
                    try await other.rows(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
                        as: Int.self
                    ).first == 1
                }
                // Now this waits for node-a's row: a deadlock, which the write's check finds within its
                // five seconds and breaks by ending the write. This goes on and commits; the write runs
                // again.
                try await other.drain("UPDATE node SET heartbeat_at = heartbeat_at WHERE id = 'node-a'", on: connection)
                try await other.drain("COMMIT", on: connection)
                try await group.waitForAll()
            }
        }
        #expect(try await store.deviceNodes(now: t0 + 1) == [:])
        let node = try #require(try await store.nodes().first)
        #expect(node.devices == 0)
        switch write {
        case .start: #expect(node.startedAt == t0 + 1 && node.address == "http://a2" && node.stoppedAt == nil)
        case .stop: #expect(node.stoppedAt == t0 + 1)
        }
    }

    /// What a node knows of where devices are linked (``DeviceHolders``): read once per device,
    /// then kept by the claims and releases the nodes notify, in whatever order they arrive; a
    /// claim of this node, of a stopped node or of one whose heartbeat is stale is no holder.
    @Test func devicesHoldersAreReadOnceAndFollowTheClaims() async throws {
        let store = try await PostgresGatewayStore.forTests(url: try await TestPostgres.database())
        defer { store.close() }
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        let clock = ManualClock(now: t0)
        try await store.registerNode(id: "node-a", address: "https://a:1", now: t0)
        try await store.registerNode(id: "node-b", address: "https://b:2", now: t0)
        let holders = DeviceHolders(store: store, me: "node-a", clock: clock)
        let b = DeviceHolders.Holder(node: "node-b", address: "https://b:2")

        // Not asked about yet: the memory does not know; read, it knows "no holder".
        #expect(holders.cachedHolder(of: "d") == nil)
        #expect(try await holders.lookUp("d") == nil)
        #expect(holders.cachedHolder(of: "d") == .some(nil))
        // B claims it; the notification (applied here by hand) is enough, no read.
        let claim = try #require(try await store.claimDevice("d", node: "node-b", connectedAt: t0))
        try await holders.apply([.claimed(device: "d", node: "node-b", epoch: claim.epoch)])
        #expect(holders.cachedHolder(of: "d") == .some(b))
        // A release and the next claim arrive in one set, or a stale claim after a release: the
        // newest wins whatever the order.
        try await holders.apply([
            .released(device: "d", node: "node-b", epoch: claim.epoch),
            .claimed(device: "d", node: "node-b", epoch: claim.epoch),
        ])
        #expect(holders.cachedHolder(of: "d") == .some(nil))
        try await holders.apply([.claimed(device: "d", node: "node-b", epoch: claim.epoch + 1)])
        #expect(holders.cachedHolder(of: "d") == .some(b))
        // A claim of this node is no reason to forward.
        try await holders.apply([.claimed(device: "d", node: "node-a", epoch: claim.epoch + 2)])
        #expect(holders.cachedHolder(of: "d") == .some(nil))
        // Devices no push asked about are not remembered, and their notifications need not wait in
        // the follower (`watched`); `nodes` and `everything` always do.
        #expect(
            holders.watched([
                .claimed(device: "other", node: "node-b", epoch: 1), .claimed(device: "d", node: "node-b", epoch: 9),
                .released(device: "other", node: "node-b", epoch: 1), .nodes, .everything,
            ]) == [.claimed(device: "d", node: "node-b", epoch: 9), .nodes, .everything])
        #expect(
            DeviceHolders(store: store, me: "node-a", clock: clock).watched([
                .claimed(device: "d", node: "node-b", epoch: 9), .nodes,
            ]) == [.nodes])
        try await holders.apply([.claimed(device: "other", node: "node-b", epoch: 1)])
        #expect(holders.cachedHolder(of: "other") == nil)
        #expect(try await holders.lookUp("other") == nil, "read from the database: no claim was made")

        // After listening restarts (notifications may have been missed) everything is read again.
        _ = try await store.claimDevice("e", node: "node-b", connectedAt: t0)
        #expect(try await holders.lookUp("e") == b)
        try await holders.apply([.everything])
        #expect(holders.cachedHolder(of: "e") == nil)
        #expect(try await holders.lookUp("e") == b)
        // B's heartbeat goes stale (killed): a copy of the nodes 5 to 10 s old still answers (and is
        // read again in the background); an older one is read before answering, and B is no
        // holder once its heartbeat is 15 s old.
        clock.advance(by: 6)
        #expect(holders.cachedHolder(of: "e") == .some(b))
        clock.advance(by: 10)
        #expect(holders.cachedHolder(of: "e") == nil, "a copy 10 s old or more is read again first")
        #expect(try await holders.lookUp("e") == nil)
        // B starts again elsewhere: the new address is used.
        try await store.registerNode(id: "node-b", address: "https://b2:3", now: t0 + 16)
        let again = try #require(try await store.claimDevice("e", node: "node-b", connectedAt: t0 + 16))
        try await holders.apply([.nodes, .claimed(device: "e", node: "node-b", epoch: again.epoch)])
        #expect(holders.cachedHolder(of: "e") == .some(DeviceHolders.Holder(node: "node-b", address: "https://b2:3")))
        // Stopped: no holder.
        try await store.stopNode(id: "node-b", now: t0 + 17)
        try await holders.apply([.nodes])
        #expect(holders.cachedHolder(of: "e") == .some(nil))
    }

    /// The claims, releases and node changes reach the other nodes on `herald_claims`.
    @Test func claimsAreNotifiedWhenTheyCommit() async throws {
        let store = try await PostgresGatewayStore.forTests(url: try await TestPostgres.database())
        defer { store.close() }
        let heard = Mutex<[ClaimChange]>([])
        let follower = ClusterFollower<ClaimChange>(store: store, logger: .silent) { changes in
            heard.withLock { $0 += changes }
        }
        func hear(_ change: ClaimChange) async throws {
            // The change comes back through the PostgreSQL server (another process) as a notification.
            try await waitUntil("\(change) to be heard", within: .seconds(10)) {
                heard.withLock { $0.contains(change) }
            }
        }
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await follower.run() }
            // The follower's LISTEN is answered by the PostgreSQL server, another process.
            try await waitUntil("the follower listens", within: .seconds(60)) { follower.progress.applied >= 1 }
            try await store.registerNode(id: "node-b", address: "", now: t0)
            try await hear(.nodes)
            heard.withLock { $0.removeAll() }
            // A heartbeat that changes nothing is not told; the claim after it is.
            try await store.heartbeat(node: "node-b", address: "", now: t0 + 1)
            let claim = try #require(try await store.claimDevice("d", node: "node-b", connectedAt: t0))
            try await hear(.claimed(device: "d", node: "node-b", epoch: claim.epoch))
            #expect(!heard.withLock { $0.contains(.nodes) })
            #expect(try await store.releaseDevices([("d", claim.epoch)], node: claim.node) == ["d"])
            try await hear(.released(device: "d", node: "node-b", epoch: claim.epoch))
            // The address set once the listeners are bound is.
            try await store.heartbeat(node: "node-b", address: "https://b:2", now: t0 + 2)
            try await hear(.nodes)
            group.cancelAll()
        }
    }

    /// Links opened together are claimed in one statement, with the rules of one claim each (the
    /// epoch grows, a link older than the current claim is refused), and heard as one notification
    /// naming every claim made.
    @Test func claimsMadeTogetherFollowTheRulesOfOneAndAreHeardInOneNotification() async throws {
        try await withNodesAAndB { store, heard, t0 in
            let older = try #require(try await store.claimDevice("d2", node: "node-b", connectedAt: t0 + 5))
            let made = try await store.claimDevices(
                [("d1", t0 + 1), ("d2", t0 + 2), ("d3-with-a-longer-id", t0 + 3)], node: "node-a")
            // d2 has a later link on B: not claimed; the others start at epoch 1.
            #expect(
                made == [
                    "d1": DeviceClaim(node: "node-a", epoch: 1),
                    "d3-with-a-longer-id": DeviceClaim(node: "node-a", epoch: 1),
                ])
            #expect(
                try await store.deviceNodes(now: t0 + 6) == [
                    "d1": "node-a", "d2": "node-b", "d3-with-a-longer-id": "node-a",
                ])
            let expected: [ClaimChange] = [
                .claimed(device: "d1", node: "node-a", epoch: 1),
                .claimed(device: "d3-with-a-longer-id", node: "node-a", epoch: 1),
            ]
            try await waitUntil("the batch to be heard", within: .seconds(10)) {
                expected.allSatisfy(heard().contains)
            }
            #expect(!heard().contains(.claimed(device: "d2", node: "node-a", epoch: older.epoch + 1)))
            // A second batch raises the epochs; releasing names the batch's claim.
            let again = try await store.claimDevices([("d1", t0 + 7)], node: "node-b")
            #expect(again == ["d1": DeviceClaim(node: "node-b", epoch: 2)])
            #expect(try await store.releaseDevices([("d1", 2)], node: "node-b") == ["d1"])
            #expect(try await store.claimDevices([], node: "node-a").isEmpty)
        }
    }

    /// Links closed together are released in one statement, with the rules of one release each
    /// (only the claim the node made, at its epoch), and heard as one notification naming each.
    @Test func releasesMadeTogetherFollowTheRulesOfOneAndAreHeardInOneNotification() async throws {
        try await withNodesAAndB { store, heard, t0 in
            let made = try await store.claimDevices([("d1", t0), ("d2", t0), ("d3", t0), ("d4", t0)], node: "node-a")
            #expect(made.count == 4)
            // d3 moved to B since; d4 was claimed again by A (a new epoch).
            _ = try await store.claimDevice("d3", node: "node-b", connectedAt: t0 + 1)
            _ = try await store.claimDevice("d4", node: "node-a", connectedAt: t0 + 1)
            let released = try await store.releaseDevices(
                [("d1", 1), ("d2", 1), ("d3", 1), ("d4", 1), ("never-claimed", 1)], node: "node-a")
            #expect(released == ["d1", "d2"])
            #expect(try await store.deviceNodes(now: t0 + 2) == ["d3": "node-b", "d4": "node-a"])
            let expected: [ClaimChange] = [
                .released(device: "d1", node: "node-a", epoch: 1), .released(device: "d2", node: "node-a", epoch: 1),
            ]
            try await waitUntil("the batch to be heard", within: .seconds(10)) {
                expected.allSatisfy(heard().contains)
            }
            #expect(!heard().contains { if case .released(let d, _, _) = $0 { d == "d3" || d == "d4" } else { false } })
            #expect(try await store.releaseDevices([], node: "node-a").isEmpty)
        }
    }

    /// A fresh store with nodes A and B registered at `t0`, and what a follower of `herald_claims`
    /// has heard on it so far, for `body`.
    private func withNodesAAndB(
        _ body: (PostgresGatewayStore, _ heard: @escaping @Sendable () -> [ClaimChange], _ t0: Date) async throws
            -> Void
    ) async throws {
        let store = try await PostgresGatewayStore.forTests(url: try await TestPostgres.database())
        defer { store.close() }
        let heard = Mutex<[ClaimChange]>([])
        let follower = ClusterFollower<ClaimChange>(store: store, logger: .silent) { changes in
            heard.withLock { $0 += changes }
        }
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await follower.run() }
            try await waitUntil("the follower listens", within: .seconds(60)) { follower.progress.applied >= 1 }
            try await store.registerNode(id: "node-a", address: "", now: t0)
            try await store.registerNode(id: "node-b", address: "", now: t0)
            try await body(store, { heard.withLock { $0 } }, t0)
            group.cancelAll()
        }
    }

    /// A `claims` or `releases` payload names one change per device; a malformed item is skipped, a
    /// payload this binary does not know names nothing.
    @Test func aClaimsPayloadNamesEachClaim() {
        #expect(
            ClaimChange.changes(payload: "claims\tnode-a\td1 3\tbad\td2 4")
                == [.claimed(device: "d1", node: "node-a", epoch: 3), .claimed(device: "d2", node: "node-a", epoch: 4)])
        #expect(
            ClaimChange.changes(payload: "claim\td\tnode-a\t2") == [.claimed(device: "d", node: "node-a", epoch: 2)])
        #expect(
            ClaimChange.changes(payload: "releases\tnode-b\td1 3\td2 x\td3 5")
                == [
                    .released(device: "d1", node: "node-b", epoch: 3),
                    .released(device: "d3", node: "node-b", epoch: 5),
                ])
        #expect(ClaimChange.changes(payload: "something-new\tx").isEmpty)
        // An empty batch, a batch without its node, an epoch past Int64 or not a number, an item
        // without its device or epoch: nothing of those.
        #expect(ClaimChange.changes(payload: "claims\tnode-a").isEmpty)
        #expect(ClaimChange.changes(payload: "claims\tnode-a\t").isEmpty)
        #expect(ClaimChange.changes(payload: "claims\t\td1 3").isEmpty)
        #expect(
            ClaimChange.changes(payload: "claims\tn\td1 99999999999999999999\td2 -1\t 3\td3 \td4 9223372036854775807")
                == [.claimed(device: "d4", node: "n", epoch: .max)])
        // A long batch, as one statement's claims of many links: every item, in order.
        let many = (0..<5000).map { "device-\($0) \($0 * 7)" }.joined(separator: "\t")
        #expect(
            ClaimChange.changes(payload: "releases\tnode-c\t" + many)
                == (0..<5000).map { .released(device: "device-\($0)", node: "node-c", epoch: Int64($0 * 7)) })
    }
}
