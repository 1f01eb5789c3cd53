import Foundation
import GRDB
import HeraldCore
import Testing

@testable import HeraldGateway

/// ``PushStore``, against both stores: the offline queues and their policy, the delivery log, what
/// a commit writes together.
@Suite struct PushStoreTests {
    func push(
        _ id: String, topic: String = "com.example.demo", collapse: String? = nil, expires: Date, device: String = "d1"
    )
        -> StoredPush
    {
        StoredPush(
            apnsID: id, uniqueID: nil, deviceID: device, token: DeviceToken(bytes: [1, 2]), environment: .development,
            topic: topic, pushType: .alert, priority: .immediate, collapseID: collapse, expiresAt: expires,
            receivedAt: Date(timeIntervalSince1970: 0), payload: Data(#"{"aps":{}}"#.utf8), contentAvailable: false)
    }

    @Test(arguments: StoreKind.allCases) func apnsPolicyKeepsNewestPerDeviceAndTopic(kind: StoreKind) async throws {
        let store = try await kind.store()
        let later = Date(timeIntervalSince1970: 1000)
        var batch = StoreBatch()
        batch.pushes = [
            push("a", expires: later), push("b", expires: later), push("c", topic: "com.example.other", expires: later),
        ]
        let replaced = try await store.commit(batch, policy: OfflinePolicy())
        #expect(replaced == ["a"])
        let pending = try await store.pending(device: "d1", now: Date(timeIntervalSince1970: 0))
        #expect(pending.map(\.apnsID) == ["b", "c"])
        #expect(pending[0].payload == Data(#"{"aps":{}}"#.utf8))
    }

    /// What a reconnect storm reads: many devices' backlogs in one query, each oldest first and the
    /// same as one device's read; expired pushes and devices with nothing are left out.
    @Test(arguments: StoreKind.allCases) func manyDevicesBacklogsInOneReadMatchOneByOne(kind: StoreKind) async throws {
        let store = try await kind.store()
        let later = Date(timeIntervalSince1970: 1000)
        var batch = StoreBatch()
        batch.pushes = [
            push("a1", expires: later, device: "a"), push("b1", expires: later, device: "b"),
            push("a2", topic: "com.example.other", expires: later, device: "a"),
            push("c1", expires: Date(timeIntervalSince1970: 10), device: "c"),
            push("b2", topic: "com.example.other", expires: later, device: "b"),
        ]
        _ = try await store.commit(batch, policy: OfflinePolicy(depth: 5))
        let now = Date(timeIntervalSince1970: 100)
        let devices = ["a", "b", "c", "nobody"] + (0..<1500).map { "idle-\($0)" }
        let found = try await store.pending(devices: devices, now: now)
        #expect(found.mapValues { $0.map(\.apnsID) } == ["a": ["a1", "a2"], "b": ["b1", "b2"]])
        for device in ["a", "b"] {
            #expect(found[device] == (try await store.pending(device: device, now: now)))
        }
        #expect(try await store.pending(devices: [], now: now).isEmpty)
    }

    @Test(arguments: StoreKind.allCases) func deeperQueueAndCollapseID(kind: StoreKind) async throws {
        let store = try await kind.store()
        let later = Date(timeIntervalSince1970: 1000)
        var batch = StoreBatch()
        batch.pushes = [
            push("a", collapse: "score", expires: later), push("b", expires: later),
            push("c", collapse: "score", expires: later), push("d", expires: later), push("e", expires: later),
        ]
        let replaced = try await store.commit(batch, policy: OfflinePolicy(depth: 3))
        #expect(Set(replaced) == ["a", "b"])  // a by collapse id, b by depth
        #expect(try await store.pending(device: "d1", now: .distantPast).map(\.apnsID) == ["c", "d", "e"])
    }

    @Test(arguments: StoreKind.allCases) func coalescingInABatchMatchesOneByOne(kind: StoreKind) async throws {
        var rng = SeededRandom(seed: 7)
        let later = Date(timeIntervalSince1970: 1000)
        // Two stores, each round on devices of its own.
        let batched = try await kind.store()
        let single = try await kind.store()
        for round in 0..<40 {
            let depth = Int(rng.next() % 3) + 1
            let pushes = (0..<Int(rng.next() % 12 + 1)).map { i in
                push(
                    "p\(round)-\(i)", topic: ["t1", "t2"][Int(rng.next() % 2)],
                    collapse: rng.next() % 3 == 0 ? "c\(rng.next() % 2)" : nil, expires: later,
                    device: ["\(round)-d1", "\(round)-d2"][Int(rng.next() % 2)])
            }
            var batch = StoreBatch()
            batch.pushes = pushes
            let replacedBatched = try await batched.commit(batch, policy: OfflinePolicy(depth: depth))
            var replacedSingly: [String] = []
            for p in pushes {
                var one = StoreBatch()
                one.pushes = [p]
                replacedSingly += try await single.commit(one, policy: OfflinePolicy(depth: depth))
            }
            for device in ["\(round)-d1", "\(round)-d2"] {
                let a = try await batched.pending(device: device, now: .distantPast).map(\.apnsID)
                let b = try await single.pending(device: device, now: .distantPast).map(\.apnsID)
                #expect(a == b, "round \(round)")
            }
            #expect(Set(replacedBatched) == Set(replacedSingly))
        }
    }

    /// The same over pushes already stored: a batch arriving on queues that have pushes leaves the
    /// store as the same pushes one at a time would. A stored push it replaces is logged as replaced
    /// by the same push as when the batch's survivors (what the policy keeps of the batch itself)
    /// arrive one at a time: pushes the batch replaced within itself never pushed anything out.
    @Test(arguments: StoreKind.allCases) func aBatchOverStoredPushesMatchesOneByOne(kind: StoreKind) async throws {
        var rng = SeededRandom(seed: 11)
        let later = Date(timeIntervalSince1970: 1000)
        let batched = try await kind.store()
        let single = try await kind.store()
        func pushes(_ prefix: String, _ round: Int) -> [StoredPush] {
            (0..<Int(rng.next() % 10 + 1)).map { i in
                push(
                    "\(prefix)\(round)-\(i)", topic: ["t1", "t2"][Int(rng.next() % 2)],
                    collapse: rng.next() % 3 == 0 ? "c\(rng.next() % 3)" : nil, expires: later,
                    device: ["\(round)-d1", "\(round)-d2"][Int(rng.next() % 2)])
            }
        }
        func oneByOne(_ pushes: [StoredPush], _ store: any GatewayStore, depth: Int) async throws -> [String] {
            var replaced: [String] = []
            for p in pushes {
                var one = StoreBatch()
                one.pushes = [p]
                replaced += try await store.commit(one, policy: OfflinePolicy(depth: depth))
            }
            return replaced
        }
        for round in 0..<25 {
            let depth = Int(rng.next() % 3) + 1
            // Already stored, the same in both.
            let before = pushes("old", round)
            _ = try await oneByOne(before, batched, depth: depth)
            _ = try await oneByOne(before, single, depth: depth)
            let arriving = pushes("new", round)
            var batch = StoreBatch()
            batch.pushes = arriving
            let replacedBatched = try await batched.commit(batch, policy: OfflinePolicy(depth: depth))
            let replacedSingly = try await oneByOne(arriving, single, depth: depth)
            for device in ["\(round)-d1", "\(round)-d2"] {
                let a = try await batched.pending(device: device, now: .distantPast).map(\.apnsID)
                let b = try await single.pending(device: device, now: .distantPast).map(\.apnsID)
                #expect(a == b, "round \(round), depth \(depth)")
            }
            #expect(Set(replacedBatched) == Set(replacedSingly), "round \(round), depth \(depth)")
            // Who replaced each stored push: the survivors, one at a time, on a third store.
            let reference = try await kind.store()
            _ = try await oneByOne(before, reference, depth: depth)
            _ = try await oneByOne(OfflinePolicy(depth: depth).coalesce(arriving).survivors, reference, depth: depth)
            for id in Set(replacedBatched) where id.hasPrefix("old") {
                let a = try await batched.deliveryLog(id: id).filter { $0.kind == .replaced }.map(\.detail)
                let b = try await reference.deliveryLog(id: id).filter { $0.kind == .replaced }.map(\.detail)
                #expect(a == b, "round \(round), depth \(depth), \(id)")
            }
        }
    }

    @Test func handWrittenEventJSONDecodes() throws {
        let event = DeliveryEvent(
            apnsID: "a", uniqueID: "u", kind: .discarded, at: Date(timeIntervalSince1970: 1.5),
            detail: "quote \" backslash \\ newline \n tab \t bell \u{7} é")
        let bare = DeliveryEvent(apnsID: "a", uniqueID: "u", kind: .accepted, at: Date(timeIntervalSince1970: 2))
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        var w = JSONWriter()
        DeliveryEvent.writeRun([event, bare], to: &w)
        let run = Data(w.bytes)
        let stored = try decoder.decode([StoredDeliveryEvent].self, from: run)
        // The identifiers are the row's, not repeated in the record.
        #expect(!String(decoding: run, as: UTF8.self).contains("apnsID"))
        #expect(stored.map { $0.event(apnsID: "a", uniqueID: "u") } == [event, bare])
    }

    /// Records written before runs left out the identifiers (one event, or an array, each with its
    /// identifiers) still read back.
    @Test func olderDeliveryLogRecordsStillRead() async throws {
        let store = try SQLiteGatewayStore(path: nil)
        try await store.writer.write { db in
            try db.execute(
                sql: "INSERT INTO event (apnsID, uniqueID, record) VALUES (?, ?, ?), (?, ?, ?)",
                arguments: [
                    "id-1", "u-1", #"{"apnsID":"id-1","uniqueID":"u-1","kind":"accepted","at":1000,"detail":"d"}"#,
                    "id-1", "u-1",
                    #"[{"apnsID":"id-1","uniqueID":"u-1","kind":"delivered","at":2000},"#
                        + #"{"apnsID":"id-1","uniqueID":"u-1","kind":"acknowledged","at":3000}]"#,
                ])
        }
        let log = try await store.deliveryLog(id: "u-1")
        #expect(log.map(\.kind) == [.accepted, .delivered, .acknowledged])
        #expect(log.map(\.at.timeIntervalSince1970) == [1, 2, 3])
        #expect(log.allSatisfy { $0.apnsID == "id-1" && $0.uniqueID == "u-1" })
        #expect(log.first?.detail == "d")
    }

    @Test(arguments: StoreKind.allCases) func expiredPushesAreNotPendingAndArePurged(kind: StoreKind) async throws {
        let store = try await kind.store()
        var batch = StoreBatch()
        batch.pushes = [
            push("old", expires: Date(timeIntervalSince1970: 10)),
            push("new", topic: "t2", expires: Date(timeIntervalSince1970: 100)),
        ]
        _ = try await store.commit(batch, policy: OfflinePolicy())
        #expect(try await store.pending(device: "d1", now: Date(timeIntervalSince1970: 50)).map(\.apnsID) == ["new"])
        #expect(try await store.purgeExpired(now: Date(timeIntervalSince1970: 50)).map(\.apnsID) == ["old"])
        #expect(try await store.storedCount() == 1)
    }

    @Test(arguments: StoreKind.allCases) func deliveryLogByEitherID(kind: StoreKind) async throws {
        let store = try await kind.store()
        var batch = StoreBatch()
        batch.events = [
            DeliveryEvent(apnsID: "id-1", uniqueID: "u-1", kind: .accepted, at: Date(timeIntervalSince1970: 1)),
            DeliveryEvent(apnsID: "id-1", uniqueID: "u-1", kind: .stored, at: Date(timeIntervalSince1970: 1)),
        ]
        batch.events.append(
            DeliveryEvent(apnsID: "id-2", uniqueID: nil, kind: .discarded, at: Date(timeIntervalSince1970: 2)))
        _ = try await store.commit(batch, policy: OfflinePolicy())
        #expect(try await store.deliveryLog(id: "id-1") == Array(batch.events.prefix(2)))
        #expect(try await store.deliveryLog(id: "u-1").map(\.kind) == [.accepted, .stored])
        #expect(try await store.deliveryLog(id: "id-2") == [batch.events[2]])
        #expect(try await store.deliveryLog(id: "nope").isEmpty)
    }

    /// A row of the log that cannot be read (damaged here; written by a newer release in life) is
    /// left out of the recent log and counted: the rows around it are still read, in order.
    @Test(arguments: StoreKind.allCases)
    func anUnreadableLogRowIsCountedAndTheOthersRead(kind: StoreKind) async throws {
        let store = try await kind.store()
        var batch = StoreBatch()
        for i in 1...3 {
            batch.events.append(
                DeliveryEvent(
                    apnsID: "id-\(i)", uniqueID: nil, kind: .discarded, at: Date(timeIntervalSince1970: Double(i))))
        }
        _ = try await store.commit(batch, policy: OfflinePolicy())
        #expect(try await store.recentDeliveryLog(rows: 10) == DeliveryLogRead(events: batch.events))
        let damaged = Data([0x7B, 0x22, 0xFF])  // `{"` and a byte that is no UTF-8
        switch store {
        case let sqlite as SQLiteGatewayStore:
            try await sqlite.writer.write { db in
                try db.execute(sql: "UPDATE event SET record = ? WHERE apnsID = 'id-2'", arguments: [damaged])
            }
        case let postgres as PostgresGatewayStore:
            try await postgres.drain("UPDATE event SET record = \(damaged) WHERE apns_id = 'id-2'")
        default:
            Issue.record("a store of another kind: \(type(of: store))")
        }
        let read = try await store.recentDeliveryLog(rows: 10)
        #expect(read.events == [batch.events[0], batch.events[2]])
        #expect(read.unreadableRows == 1)
        #expect(try await store.recentDeliveryEvents(rows: 10) == read.events)
        // The newest two rows: one of them unreadable.
        let newest = try await store.recentDeliveryLog(rows: 2)
        #expect(newest == DeliveryLogRead(events: [batch.events[2]], unreadableRows: 1))
        // One push's log: the damaged row counted, a whole one read.
        #expect(try await store.deliveryLogRead(id: "id-2") == DeliveryLogRead(unreadableRows: 1))
        #expect(try await store.deliveryLogRead(id: "id-1") == DeliveryLogRead(events: [batch.events[0]]))
    }

    /// A delivered push is written as its compact record and reads back as its three events
    /// (escapes and the binary interface identifier included), from either store.
    @Test(arguments: StoreKind.allCases) func aDeliveredPushIsLoggedAsItsThreeEvents(kind: StoreKind) async throws {
        let delivered = [
            DeliveredPush(
                apnsID: "id-1", uniqueID: "u-1", deviceID: #"dev "1"\x"#, topic: "com.example.é",
                acceptedAt: Date(timeIntervalSince1970: 10), deliveredAt: Date(timeIntervalSince1970: 10.5),
                acknowledgedAt: Date(timeIntervalSince1970: 10.75)),
            DeliveredPush(
                apnsID: "id-2", uniqueID: nil, deviceID: "d", topic: "t", binaryIdentifier: 4_000_000_000,
                acceptedAt: Date(timeIntervalSince1970: 11), deliveredAt: Date(timeIntervalSince1970: 12),
                acknowledgedAt: Date(timeIntervalSince1970: 13)),
        ]
        for push in delivered {
            var record = JSONWriter()
            LogRow.delivered(push).writeRecord(to: &record)
            #expect(record.bytes.first == DeliveredRecord.marker)
            #expect(
                try StoreRecords().events(apnsID: push.apnsID, uniqueID: push.uniqueID, record: Data(record.bytes))
                    == push.events)
        }
        #expect(delivered[0].events[0].detail == #"device dev "1"\x, topic com.example.é"#)
        #expect(delivered[1].events[0].detail == "device d, topic t, binary interface identifier 4000000000")
        #expect(delivered[1].events.map(\.kind) == [.accepted, .delivered, .acknowledged])

        let store = try await kind.store()
        var batch = StoreBatch()
        batch.delivered = delivered
        // Written after this batch's other lines, yet read back in time order.
        batch.events = [
            DeliveryEvent(apnsID: "id-1", uniqueID: "u-1", kind: .accepted, at: Date(timeIntervalSince1970: 20))
        ]
        _ = try await store.commit(batch, policy: OfflinePolicy(), durable: false)
        #expect(try await store.deliveryLog(id: "u-1") == delivered[0].events + batch.events)
        #expect(try await store.deliveryLog(id: "id-2") == delivered[1].events)
    }

    /// A group commit's log rows go in several rows per statement, with a shorter last statement:
    /// every run is there, in order, and found by either identifier.
    @Test(arguments: StoreKind.allCases) func manyRunsInOneCommitAreAllWrittenInOrder(kind: StoreKind) async throws {
        let store = try await kind.store()
        let count = 2 * SQLiteGatewayStore.eventRowsPerInsert + 5
        var batch = StoreBatch()
        for i in 0..<count {
            let at = Date(timeIntervalSince1970: Double(i))
            batch.events += [
                DeliveryEvent(apnsID: "id-\(i)", uniqueID: "u-\(i)", kind: .accepted, at: at, detail: "n \(i)"),
                DeliveryEvent(apnsID: "id-\(i)", uniqueID: "u-\(i)", kind: .delivered, at: at),
                DeliveryEvent(apnsID: "id-\(i)", uniqueID: "u-\(i)", kind: .acknowledged, at: at),
            ]
        }
        _ = try await store.commit(batch, policy: OfflinePolicy(), durable: false)
        // In the order written: the newest rows, oldest first, are the whole batch in order.
        let order = try await store.recentDeliveryEvents(rows: count + 1)
        #expect(order.map(\.apnsID) == batch.events.map(\.apnsID))
        for i in [0, SQLiteGatewayStore.eventRowsPerInsert - 1, SQLiteGatewayStore.eventRowsPerInsert, count - 1] {
            #expect(try await store.deliveryLog(id: "id-\(i)") == Array(batch.events[3 * i..<3 * i + 3]))
            #expect(try await store.deliveryLog(id: "u-\(i)").map(\.kind) == [.accepted, .delivered, .acknowledged])
        }
    }

    /// A log-only commit skips the fsync but is still committed, survives reopening, and leaves
    /// the connection at `synchronous = FULL` for the durable commits after it.
    @Test func logOnlyCommitsAreCommittedWithoutChangingDurability() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gw-\(UUID()).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            let store = try SQLiteGatewayStore(path: path)
            var batch = StoreBatch()
            batch.events = [DeliveryEvent(apnsID: "id-1", uniqueID: nil, kind: .acknowledged, at: Date())]
            _ = try await store.commit(batch, policy: OfflinePolicy(), durable: false)
            let synchronous = try await store.writer.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
            #expect(synchronous == 2)  // FULL
        }
        let reopened = try SQLiteGatewayStore(path: path)
        #expect(try await reopened.deliveryLog(id: "id-1").map(\.kind) == [.acknowledged])
    }

    /// The delivery log's many-row INSERT keeps a statement journal; SQLite writes it to a temporary
    /// file past 64 KiB unless temporary storage is in memory (two writes per page, about half of
    /// the log writer's system calls under load, before).
    @Test func temporaryStorageIsInMemoryOnEveryConnection() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gw-\(UUID()).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try SQLiteGatewayStore(path: path)
        let writer = try await store.writer.write { db in try Int.fetchOne(db, sql: "PRAGMA temp_store") }
        let reader = try await store.writer.read { db in try Int.fetchOne(db, sql: "PRAGMA temp_store") }
        #expect(writer == 2 && reader == 2)  // MEMORY
    }

    /// Log lines nobody waits for linger until there are `logBatch` of them, a durable batch
    /// comes along, or `flushLog()`.
    @Test(arguments: StoreKind.allCases) func logLinesLingerUntilABatchIsFullOrFlushed(kind: StoreKind) async throws {
        // The committer writes lines nobody waits for in a task of its own: the test awaits the
        // store's commits returning (an empty commit of its own would flush the lines, hiding
        // what is tested).
        let store = GatedStore(try await kind.store())
        let committer = GroupCommitter(store: store, policy: OfflinePolicy(), logBatch: 4)
        func line(_ id: String) -> DeliveryEvent {
            DeliveryEvent(apnsID: id, uniqueID: nil, kind: .acknowledged, at: Date(timeIntervalSince1970: 1))
        }
        func logged(_ id: String) async throws -> Bool { try await !store.deliveryLog(id: id).isEmpty }

        committer.submitLog([line("a"), line("b"), line("c")])
        // Three of four: nothing was started, so nothing can have been written.
        #expect(try await !logged("a"))
        committer.submitLog([line("d")])
        await store.commitsDone.reached(1)
        #expect(try await logged("d"))
        #expect(try await logged("a"))

        committer.submitLog([line("e")])
        #expect(try await !logged("e"))
        committer.flushLog()
        await store.commitsDone.reached(2)
        #expect(try await logged("e"))

        committer.submitLog([line("f")])
        var batch = StoreBatch()
        batch.pushes = [push("p", expires: Date(timeIntervalSince1970: 1000))]
        _ = try await committer.commit(batch)
        // The durable batch took the lingering line with it.
        #expect(try await logged("f"))
    }

    /// What the policy pushes out is logged as replaced in the very transaction that replaces it:
    /// once the commit returns, the line is there (no flush, nothing lingering), naming the push
    /// that replaced it. Within one batch and across batches alike.
    @Test(arguments: StoreKind.allCases) func replacedPushesAreLoggedInTheSameTransaction(kind: StoreKind) async throws
    {
        let location = try await kind.location()
        let later = Date(timeIntervalSince1970: 1000)
        do {
            let store = try await location.open()
            let committer = GroupCommitter(store: store, policy: OfflinePolicy(), logBatch: 4096)
            for id in ["first", "second"] {
                var batch = StoreBatch()
                batch.pushes = [push(id, expires: later)]
                _ = try await committer.commit(batch)
            }
            var both = StoreBatch()
            both.pushes = [push("third", expires: later), push("fourth", expires: later)]
            _ = try await committer.commit(both)
        }
        // Opened again, as after a crash: every replacement has its line.
        let reopened = try await location.open()
        // In the last batch, "third" never reaches the table: "fourth" replaces it, and "second".
        for (id, by) in [("first", "second"), ("second", "fourth"), ("third", "fourth")] {
            let log = try await reopened.deliveryLog(id: id)
            #expect(log.map(\.kind) == [.replaced], "\(id)")
            #expect(log.first?.detail?.hasPrefix("replaced by \(by),") == true, "\(id): \(log)")
        }
        #expect(try await reopened.pending(device: "d1", now: .distantPast).map(\.apnsID) == ["fourth"])
    }
}
