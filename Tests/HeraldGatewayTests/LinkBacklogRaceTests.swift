import Foundation
import HeraldCore
import HeraldTesting
import Synchronization
import Testing

@testable import HeraldGateway

/// A point a store call waits at until the test opens it, counting the calls that arrived.
final class Gate: Sendable {
    private struct State {
        var closed = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())
    /// The calls that have arrived (waiting or not); a test can wait for a number of them.
    let arrivals = Tally()

    /// From now on calls wait.
    func close() { state.withLock { $0.closed = true } }

    /// Lets every waiting call (and every later one) through.
    func open() {
        let waiters = state.withLock { s in
            s.closed = false
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func pass() async {
        await withCheckedContinuation { continuation in
            let wait = state.withLock { s in
                if s.closed { s.waiters.append(continuation) }
                return s.closed
            }
            arrivals.increment()
            if !wait { continuation.resume() }
        }
    }
}

/// The gateway's store with gates before commits that store pushes and before backlog reads, so a
/// test can put a commit and a device's connection in the order it needs.
final class GatedStore: GatewayStore {
    let inner: any GatewayStore
    let commits = Gate()
    let reads = Gate()
    /// Before saves of registrations (a device's `register`).
    let registrations = Gate()
    /// Before saves of one device (a new device's `hello`).
    let devices = Gate()
    /// Backlog reads that have returned.
    let readsDone = Tally()
    /// Commits (of any batch) that have returned.
    let commitsDone = Tally()

    init(_ inner: any GatewayStore) { self.inner = inner }

    func loadDirectory() async throws -> DirectorySnapshot { try await inner.loadDirectory() }
    func saveBroadcast(_ message: BroadcastMessage) async throws { try await inner.saveBroadcast(message) }
    func broadcast(uniqueID: String) async throws -> BroadcastMessage? { try await inner.broadcast(uniqueID: uniqueID) }
    func latestBroadcast(channelID: String, environment: APNsEnvironment) async throws -> BroadcastMessage? {
        try await inner.latestBroadcast(channelID: channelID, environment: environment)
    }
    func save(_ team: Team) async throws { try await inner.save(team) }
    func deleteTeam(_ id: String) async throws { try await inner.deleteTeam(id) }
    func save(_ key: ProviderKey) async throws { try await inner.save(key) }
    func deleteKey(_ id: String) async throws { try await inner.deleteKey(id) }
    func save(_ app: HeraldGateway.TeamApp) async throws { try await inner.save(app) }
    func deleteApp(_ bundleID: String) async throws { try await inner.deleteApp(bundleID) }
    func save(_ device: DeviceRecord) async throws {
        await devices.pass()
        try await inner.save(device)
    }
    func save(devices: [DeviceRecord]) async throws { try await inner.save(devices: devices) }
    func save(_ registrations: [Registration], feedback: [FeedbackEntry], device: DeviceRecord?) async throws {
        await self.registrations.pass()
        try await inner.save(registrations, feedback: feedback, device: device)
    }
    func commit(_ batch: StoreBatch, policy: OfflinePolicy, durable: Bool) async throws -> [String] {
        if !batch.pushes.isEmpty { await commits.pass() }
        defer { commitsDone.increment() }
        return try await inner.commit(batch, policy: policy, durable: durable)
    }
    func pending(device: String, now: Date) async throws -> [StoredPush] {
        await reads.pass()
        defer { readsDone.increment() }
        return try await inner.pending(device: device, now: now)
    }
    func purgeExpired(now: Date) async throws -> [StoredPush] { try await inner.purgeExpired(now: now) }
    func deliveryLogRead(id: String) async throws -> DeliveryLogRead { try await inner.deliveryLogRead(id: id) }
    func eraseTestData() async throws { try await inner.eraseTestData() }
    func deliveryCounts(since day: String) async throws -> [DeliveryCount] {
        try await inner.deliveryCounts(since: day)
    }
    func takeFeedback(bundleID: String, environment: APNsEnvironment) async throws -> [FeedbackEntry] {
        try await inner.takeFeedback(bundleID: bundleID, environment: environment)
    }
    func storedCount() async throws -> Int { try await inner.storedCount() }
    func ping() async throws { try await inner.ping() }
    func storedCount(device: String) async throws -> Int { try await inner.storedCount(device: device) }
    func createChannel(_ channel: BroadcastChannel, limit: Int) async throws -> Bool {
        try await inner.createChannel(channel, limit: limit)
    }
    func channel(bundleID: String, environment: APNsEnvironment, id: String) async throws -> BroadcastChannel? {
        try await inner.channel(bundleID: bundleID, environment: environment, id: id)
    }
    func deleteChannel(bundleID: String, environment: APNsEnvironment, id: String) async throws -> Bool {
        try await inner.deleteChannel(bundleID: bundleID, environment: environment, id: id)
    }
    func channelIDs(bundleID: String, environment: APNsEnvironment) async throws -> [String] {
        try await inner.channelIDs(bundleID: bundleID, environment: environment)
    }
    func storedCountsByDevice() async throws -> [String: Int] { try await inner.storedCountsByDevice() }
    func feedback(bundleID: String, environment: APNsEnvironment) async throws -> [FeedbackEntry] {
        try await inner.feedback(bundleID: bundleID, environment: environment)
    }
    func recentDeliveryLog(rows: Int) async throws -> DeliveryLogRead {
        try await inner.recentDeliveryLog(rows: rows)
    }
    func purgeDeliveryLog(now: Date, before cutoff: Date) async throws -> Int {
        try await inner.purgeDeliveryLog(now: now, before: cutoff)
    }
}

/// A push that found no link just before its device connected is stored; its commit may land
/// after the new link read the store. It must still reach the device at once, and stored pushes
/// arrive in the order they were accepted. The device is a ``VirtualDevice`` and the gates count
/// the store calls that reach them, so each step awaits the one before it.
@Suite(.timeLimit(.minutes(3))) struct LinkBacklogRaceTests {
    /// A bench whose router writes through a gated store, and a device registered and offline.
    func offlineDevice(_ id: String) async throws -> (LinkBench, GatedStore, DeviceIdentity, DeviceToken) {
        var gated: GatedStore?
        let h = try await LinkBench(
            store: { inner in
                let store = GatedStore(inner)
                gated = store
                return store
            })
        let identity = DeviceIdentity(deviceID: id)
        let first = try await h.connect(identity)
        let token = try await first.register(topic: Fixture.bundle)
        try await first.close()
        #expect(!h.router.links.isOnline(id))
        let store = try #require(gated)
        // The first link's own backlog read has returned, so the counts below are the next link's.
        await store.readsDone.reached(1)
        return (h, store, identity, token)
    }

    @Test func aCommitThatLandsAfterTheNewLinkReadTheStoreIsStillDelivered() async throws {
        let (h, store, identity, token) = try await offlineDevice("phone-race")
        // The push finds no link and goes to the store; its commit waits at the gate. (Whatever
        // happens, the gates open at the end, so a failing test does not wait for ever.)
        defer { store.commits.open() }
        store.commits.close()
        let id = "33333333-3333-3333-3333-333333333333"
        let answer = Task { await h.push(to: token, headers: [("apns-id", id)]) }
        await store.commits.arrivals.reached(1)
        // The device connects and its link reads the store, which does not have the push yet.
        let device = try await h.connect(identity)
        await store.readsDone.reached(2)
        #expect(try await device.written().isEmpty)
        // Now the commit lands: the 200 goes out, and the link sends the push.
        store.commits.open()
        #expect(await answer.value.status == 200)
        #expect(try await device.pushes(1).map(\.apnsID) == [id])
        // Acknowledged, it leaves the store; it is sent once.
        #expect(try await h.storedCount() == 0)
        #expect(try await h.log(id) == [.accepted, .stored, .delivered, .acknowledged])
        #expect(try await device.written().isEmpty)
    }

    @Test func storedPushesArriveInTheOrderTheyWereAcceptedAndOnce() async throws {
        let (h, store, identity, token) = try await offlineDevice("phone-order")
        // Two pushes stored while the device is offline (a depth of one would keep only the newest
        // per topic: they go to two topics of one app).
        let a = "aaaaaaaa-0000-0000-0000-000000000001"
        let b = "aaaaaaaa-0000-0000-0000-000000000002"
        let c = "aaaaaaaa-0000-0000-0000-000000000003"
        #expect(await h.push(to: token, headers: [("apns-id", a), ("apns-collapse-id", "a")]).status == 200)
        #expect(
            await h.push(
                to: token, topic: Fixture.bundle + ".voip", body: #"{"aps":{}}"#,
                headers: [("apns-id", b), ("apns-push-type", "voip")]
            ).status == 200)
        // A third finds no link; its commit waits. The device connects; its backlog read waits too.
        defer {
            store.commits.open()
            store.reads.open()
        }
        store.commits.close()
        store.reads.close()
        let commitsBefore = store.commits.arrivals.count
        let answer = Task {
            await h.push(
                to: token, topic: Fixture.bundle + ".complication", body: #"{"aps":{}}"#,
                headers: [("apns-id", c), ("apns-push-type", "complication")])
        }
        await store.commits.arrivals.reached(commitsBefore + 1)
        let device = try await h.connect(identity)
        await store.reads.arrivals.reached(2)
        // The commit lands first (the link holds the push back: its backlog is not read yet), then
        // the read, which now finds all three.
        store.commits.open()
        #expect(await answer.value.status == 200)
        store.reads.open()
        #expect(try await device.pushes(3).map(\.apnsID) == [a, b, c])
        #expect(try await h.storedCount() == 0)
        #expect(try await device.written().isEmpty)
    }
}
