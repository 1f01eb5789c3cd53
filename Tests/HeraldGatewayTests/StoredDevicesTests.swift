import Foundation
import HeraldCore
import HeraldRuntime
import HeraldTesting
import NIOEmbedded
import Testing

@testable import HeraldGateway

/// Which devices may have something stored, so that the others go online without a backlog read:
/// the set's rules as values, what fills it (the committer, a gateway's start, a cluster's
/// notifications and listening anew), and a link that reads only when the set names its device.
@Suite(.timeLimit(.minutes(3))) struct StoredDevicesTests {
    static func push(_ id: String, for device: String) -> StoredPush {
        var push = LinkMachineDriver.stored(id)
        push.deviceID = device
        push.expiresAt = Date(timeIntervalSince1970: 4_000_000_000)
        return push
    }

    static func batch(_ pushes: StoredPush...) -> StoreBatch {
        var batch = StoreBatch()
        batch.pushes = pushes
        return batch
    }

    /// The mark a check gives, or `nil` when it says there is nothing to read.
    static func mark(_ check: StoredDevices.Check) -> UInt64? {
        guard case .read(let mark) = check else { return nil }
        return mark
    }

    @Test func untilLoadedEveryDeviceReadsAndAfterwardsOnlyThoseNamed() {
        let known = StoredDevices()
        #expect(!known.isComplete)
        // Not named, and nothing proves it has nothing: read, and stay as it is whatever the read finds.
        #expect(known.check("phone") == .read(mark: 0))
        known.load(["phone"])
        #expect(known.isComplete && known.count == 1)
        #expect(known.check("tablet") == .nothing)
        #expect(Self.mark(known.check("phone")) ?? 0 > 0)
        // A cluster's node that stops listening reads for every device again until the next load.
        known.lostTrack()
        #expect(known.check("tablet") == .read(mark: 0))
        known.load([])
        #expect(known.check("tablet") == .nothing)
        #expect(Self.mark(known.check("phone")) ?? 0 > 0, "loading again keeps what was named")
    }

    @Test func aReadThatFindsNothingTakesTheDeviceOutUnlessAWriteCouldHaveRacedIt() {
        let known = StoredDevices()
        known.load(["phone", "tablet", "watch"])
        // Nothing written since the check: the read saw everything there is.
        let phone = Self.mark(known.check("phone"))!
        known.readNothing("phone", mark: phone)
        #expect(known.check("phone") == .nothing)

        // Added again after the check (a write announced, or another node's push heard): stays.
        let tablet = Self.mark(known.check("tablet"))!
        known.heard(["tablet"])
        known.readNothing("tablet", mark: tablet)
        let watch = Self.mark(known.check("watch"))!
        known.storing(["watch"])
        known.settled(["watch"])
        known.readNothing("watch", mark: watch)
        #expect(known.check("tablet") != .nothing && known.check("watch") != .nothing)

        // Checked while a write is under way: it may commit after the read looked and before the
        // read ends, so an empty read proves nothing, even once the write has ended.
        known.storing(["car"])
        let car = Self.mark(known.check("car"))
        #expect(car == 0)
        known.settled(["car"])
        known.readNothing("car", mark: car!)
        #expect(known.check("car") != .nothing)
        // Checked once it has ended: the read saw it.
        known.readNothing("car", mark: Self.mark(known.check("car"))!)
        #expect(known.check("car") == .nothing)

        // Two pushes for one device in flight: under way until both have ended.
        known.storing(["car", "car"])
        known.settled(["car"])
        #expect(known.check("car") == .read(mark: 0))
        known.settled(["car"])
        #expect(Self.mark(known.check("car")) ?? 0 > 0)
    }

    @Test func theCommitterNamesEveryDeviceItWritesPushesFor() async throws {
        let store = try SQLiteGatewayStore(path: nil)
        let committer = GroupCommitter(store: store, policy: OfflinePolicy())
        let known = committer.storedDevices
        known.load([])
        _ = try await committer.commit(Self.batch(Self.push("a", for: "phone"), Self.push("b", for: "tablet")))
        _ = try await committer.commit(StoreBatch())
        #expect(known.count == 2)
        // Written, and no longer under way: a read that finds nothing may take it out.
        #expect(Self.mark(known.check("phone")) ?? 0 > 0)
        #expect(Self.mark(known.check("tablet")) ?? 0 > 0)
        #expect(known.check("watch") == .nothing)
    }

    @Test func aGatewayStartsKnowingWhichDevicesHaveSomethingStored() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stored-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = try GatewayStateDirectory(path: directory)
        do {
            // Stored by an earlier run of the gateway.
            let store = try SQLiteGatewayStore(path: state.databasePath)
            _ = try await store.commit(Self.batch(Self.push("a", for: "phone")), policy: OfflinePolicy())
        }
        let gateway = try await Gateway.open(.testing(directory: directory), logger: .testGateway)
        let known = gateway.router.offline.committer.storedDevices
        #expect(known.isComplete)
        #expect(Self.mark(known.check("phone")) ?? 0 > 0)
        #expect(known.check("tablet") == .nothing)
    }

    /// The link asks after the attach: a device the set does not name is online with its backlog
    /// done at once (no read is even queued); one it names waits for the read.
    @Test func aLinkReadsItsBacklogOnlyWhenItsDeviceMayHaveSomethingStored() async throws {
        let f = try await Fixture(now: Date())
        var configuration = DeviceLinkServer.Configuration()
        configuration.idleTimeout = nil
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: .init()))
        let service = DeviceLinkService.quiet(f, router: router, configuration: configuration)
        router.offline.committer.storedDevices.load(["device-1"])
        for (device, reads) in [("device-2", false), ("device-1", true)] {
            let (channel, handler, _) = try await DeviceLinkHandler.onTestChannel(service)
            handler.machine.phase = .authenticating
            let record = DeviceRecord(id: device, publicKey: Data([4]), createdAt: f.now)
            handler.run(
                handler.machine.authenticated(
                    .success(.init(device: record, registrations: [], ticket: nil)), now: channel.embeddedEventLoop.now,
                    at: f.now))
            #expect(handler.machine.phase == .online(device: device))
            #expect(router.links.isOnline(device))
            // The read, when there is one, starts from the loop's queue, which this test never runs.
            #expect(handler.machine.backlogLoaded == !reads, "\(device)")
        }
    }

    /// A node of a cluster: what the store held when it listened is loaded; what another node
    /// stores afterwards is heard; and after its listening connection is cut, it reads for every
    /// device until it listens again and has loaded the store anew, with what was stored meanwhile.
    @Test func aClusterNodeHearsWhatOthersStoreAndLoadsAgainWhenItListensAgain() async throws {
        let url = try await TestPostgres.database()
        let server = try await TestPostgres.server()
        let database = String(url.split(separator: "/").last!)
        let a = try await PostgresGatewayStore.forTests(url: url)
        let b = try await PostgresGatewayStore.forTests(url: url)
        _ = try await a.commit(Self.batch(Self.push("a", for: "before")), policy: OfflinePolicy())
        let router = PushRouter(committer: GroupCommitter(store: b, policy: OfflinePolicy()))
        let known = router.offline.committer.storedDevices
        #expect(known.check("nobody") == .read(mark: 0))
        // Listening again waits 1-3 s: long enough to see the set incomplete meanwhile.
        let follower = Gateway.storedFollower(
            store: b, router: router, clock: SystemClock(), logger: .silent, retry: .seconds(2))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await follower.run() }
            defer { group.cancelAll() }
            // Each step goes through the PostgreSQL server (another process): its NOTIFY, then the
            // follower's read. There is nothing in this process to await but the result.
            try await waitUntil("B loads what is stored", within: .seconds(60)) { known.isComplete }
            #expect(known.check("before") != .nothing)
            #expect(known.check("nobody") == .nothing)

            _ = try await a.commit(Self.batch(Self.push("b", for: "heard")), policy: OfflinePolicy())
            try await waitUntil("B hears of A's push", within: .seconds(60)) { known.check("heard") != .nothing }

            let terminated = try server.sql(
                """
                SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE datname = '\(database)' AND query LIKE 'LISTEN%'
                """, database: database)
            #expect(terminated.trimmingCharacters(in: .whitespacesAndNewlines) == "1")
            try await waitUntil("B knows it is not hearing", within: .seconds(60)) { !known.isComplete }
            #expect(known.check("nobody") == .read(mark: 0))
            // Committed while B does not listen: its notification is not heard, the load finds it.
            _ = try await a.commit(Self.batch(Self.push("c", for: "missed")), policy: OfflinePolicy())
            try await waitUntil("B listens again and loads the store", within: .seconds(60)) {
                follower.progress.listens >= 2 && known.isComplete
            }
            #expect(known.check("missed") != .nothing)
            #expect(known.check("nobody") == .nothing)
        }
    }
}
