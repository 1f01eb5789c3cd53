import Foundation
import HeraldCore
import Synchronization
import Testing

@testable import HeraldGateway

/// What may wait for the store is bounded (``GroupCommitter/Limits``): with the store held at a
/// gate, requests past the limit are refused and log lines past theirs dropped, what a device
/// reports is always taken, and the stretch over the limits is told when it begins and ends.
@Suite(.timeLimit(.minutes(1))) struct StoreQueueLimitTests {
    /// The committer's ``GroupCommitter/Overload`` reports, in order.
    final class Reports: Sendable {
        private let list = Mutex<[GroupCommitter.Overload]>([])
        let count = Tally()
        func add(_ report: GroupCommitter.Overload) {
            list.withLock { $0.append(report) }
            count.increment()
        }
        var all: [GroupCommitter.Overload] { list.withLock { $0 } }
    }

    static func batch(_ id: String, payloadBytes: Int = 10) -> StoreBatch {
        var batch = StoreBatch()
        batch.pushes = [
            StoredPush(
                apnsID: id, uniqueID: nil, deviceID: "d-\(id)", token: DeviceToken(bytes: [1, 2]),
                environment: .development, topic: Fixture.bundle, pushType: .alert, priority: .immediate,
                collapseID: nil, expiresAt: Date(timeIntervalSince1970: 2_000_000_000),
                receivedAt: Date(timeIntervalSince1970: 0), payload: Data(repeating: 0x20, count: payloadBytes),
                contentAvailable: false)
        ]
        return batch
    }

    static func lines(_ n: Int) -> [DeliveryEvent] {
        (0..<n).map { DeliveryEvent(apnsID: "line-\($0)", uniqueID: nil, kind: .rejected, at: Date(), detail: "x") }
    }

    @Test func requestsAndLogLinesPastTheLimitsAreRefusedUntilTheStoreCatchesUp() async throws {
        let store = GatedStore(try SQLiteGatewayStore(path: nil))
        var limits = GroupCommitter.Limits.none
        (limits.requests, limits.logLines) = (3, 5)
        let reports = Reports()
        let committer = GroupCommitter(store: store, policy: .init(), limits: limits, overload: reports.add)
        defer { store.commits.open() }
        store.commits.close()
        let written = Tally()

        // Three requests are taken; the first is being written (held at the gate), two wait.
        for id in ["a", "b", "c"] {
            #expect(committer.submitIfRoom(Self.batch(id), bytes: 10) { _ in written.increment() })
        }
        await store.commits.arrivals.reached(1)
        // The fourth and fifth are refused, and never called back; the stretch is told once.
        let calledBack = Tally()
        #expect(!committer.submitIfRoom(Self.batch("d"), bytes: 10) { _ in calledBack.increment() })
        #expect(!committer.submitIfRoom(Self.batch("e"), bytes: 10) { _ in calledBack.increment() })
        #expect(reports.all == [.began])
        // Log lines: five are taken, the sixth is dropped.
        #expect(committer.submitLog(Self.lines(5)))
        #expect(!committer.submitLog(Self.lines(1)))
        // A device's progress is always taken, whatever waits.
        var removal = StoreBatch()
        removal.removals = [(deviceID: "d-z", apnsID: "z")]
        committer.submit(removal) { _ in written.increment() }

        store.commits.open()
        await written.reached(4)
        await reports.count.reached(2)
        #expect(reports.all == [.began, .ended(refusedRequests: 2, droppedLogLines: 1)])
        #expect(calledBack.count == 0)
        // What was taken is stored; what was refused is not.
        let stored = try await store.storedCountsByDevice()
        #expect(Set(stored.keys) == ["d-a", "d-b", "d-c"])
        // With room again, requests are taken.
        #expect(committer.submitIfRoom(Self.batch("f"), bytes: 10) { _ in written.increment() })
        await written.reached(5)
    }

    /// The bytes of the payloads count too, and one request is always taken when none waits, however
    /// large, so that no limit refuses everything.
    @Test func payloadBytesPastTheirLimitAreRefusedButALoneRequestIsAlwaysTaken() async throws {
        let store = GatedStore(try SQLiteGatewayStore(path: nil))
        var limits = GroupCommitter.Limits.none
        limits.bytes = 100
        let committer = GroupCommitter(store: store, policy: .init(), limits: limits)
        defer { store.commits.open() }
        store.commits.close()
        let written = Tally()
        #expect(committer.submitIfRoom(Self.batch("big", payloadBytes: 500), bytes: 500) { _ in written.increment() })
        await store.commits.arrivals.reached(1)
        #expect(!committer.submitIfRoom(Self.batch("small", payloadBytes: 1), bytes: 1) { _ in })
        store.commits.open()
        await written.reached(1)
        #expect(committer.submitIfRoom(Self.batch("x", payloadBytes: 60), bytes: 60) { _ in written.increment() })
        #expect(committer.submitIfRoom(Self.batch("y", payloadBytes: 40), bytes: 40) { _ in written.increment() })
        await written.reached(3)
    }

    /// Through the router: a push for an offline device while the store is that far behind is
    /// answered 503 ServiceUnavailable at once, and is neither stored nor logged; one that would be
    /// discarded gets its 200; the one before them gets its 200 once its commit lands.
    @Test func aPushThatMustBeStoredWhileTheStoreIsBehindIsAnswered503AtOnce() async throws {
        let f = try await Fixture(now: Date())
        let store = GatedStore(f.store)
        var limits = GroupCommitter.Limits()
        limits.requests = 1
        let router = PushRouter(committer: GroupCommitter(store: store, policy: .init(), limits: limits))
        defer { store.commits.open() }
        store.commits.close()
        let first = "11111111-1111-1111-1111-111111111111"
        let second = "22222222-2222-2222-2222-222222222222"
        let waiting = Task { await f.push(through: router, token: f.token, headers: [("apns-id", first)]) }
        await store.commits.arrivals.reached(1)
        let refused = await f.push(through: router, token: f.token, headers: [("apns-id", second)])
        #expect(refused.status == 503 && refused.reason == .serviceUnavailable && refused.apnsID == second)
        // One that would only be discarded (expiration 0, the device offline) is answered 200, as
        // APNs answers it, without its lines (counted as dropped).
        let third = "33333333-3333-3333-3333-333333333333"
        let discarded = await f.push(
            through: router, token: f.token, headers: [("apns-id", third), ("apns-expiration", "0")])
        #expect(discarded.status == 200)
        let metrics = String(decoding: await router.metricsText(), as: UTF8.self)
        #expect(metrics.contains("herald_delivery_log_lines_dropped_total 2"), "\(metrics)")
        store.commits.open()
        #expect(await waiting.value.status == 200)
        let pending = try await f.store.pending(device: "device-1", now: f.now)
        #expect(pending.map(\.apnsID) == [first])
        #expect(try await f.store.deliveryLogRead(id: second).events.isEmpty)
        #expect(try await f.store.deliveryLogRead(id: third).events.isEmpty)
    }
}
