import Foundation
import HeraldCore
import Testing

@testable import HeraldGateway

/// The console's history of recent pushes, the delivery log's retention, and the reads the console
/// adds to the store (feedback without emptying it, stored pushes per device).
@Suite struct DeliveryHistoryTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func at(_ seconds: TimeInterval) -> Date { t0.addingTimeInterval(seconds) }

    static func accepted(_ id: String, unique: String? = nil, device: String, topic: String, at: TimeInterval)
        -> DeliveryEvent
    {
        DeliveryEvent(
            apnsID: id, uniqueID: unique, kind: .accepted, at: Self.at(at),
            detail: DeliveredPush.acceptedDetail(device: device, topic: topic, binaryIdentifier: nil))
    }

    static let events: [DeliveryEvent] = [
        accepted("a", unique: "ua", device: "d1", topic: "com.example.app", at: 0),
        DeliveryEvent(apnsID: "a", uniqueID: "ua", kind: .delivered, at: at(0.002)),
        DeliveryEvent(apnsID: "a", uniqueID: "ua", kind: .acknowledged, at: at(0.005)),
        accepted("b", device: "d2", topic: "com.example.app.voip", at: 1),
        DeliveryEvent(apnsID: "b", uniqueID: nil, kind: .stored, at: at(1), detail: "until 1800003600 (UNIX seconds)"),
        accepted("c", device: "d1", topic: "com.example.other", at: 2),
        DeliveryEvent(
            apnsID: "c", uniqueID: nil, kind: .discarded, at: at(2),
            detail: "expiration 0 or past and the device is offline"),
        // A provider reused apns-id "a" in production (no unique id): a push of its own.
        accepted("a", device: "d2", topic: "com.example.app", at: 3),
        // A run that landed after a later one (group commits are not in time order).
        DeliveryEvent(apnsID: "b", uniqueID: nil, kind: .replaced, at: at(4), detail: "replaced by a newer push"),
    ]

    /// A push the device refused, which it says before it acknowledges: one entry, its outcome the
    /// refusal with its reason (the refusal carries the push's apns-unique-id).
    @Test func aRefusalIsThePushsOutcomeWhateverItsTime() {
        let events = [
            Self.accepted("r", unique: "ur", device: "d1", topic: "com.example.app", at: 0),
            DeliveryEvent(apnsID: "r", uniqueID: "ur", kind: .delivered, at: Self.at(0.002)),
            DeliveryEvent(
                apnsID: "r", uniqueID: "ur", kind: .refused, at: Self.at(0.004),
                detail: "device d1: aps.badge: must be a non-negative integer"),
            DeliveryEvent(apnsID: "r", uniqueID: "ur", kind: .acknowledged, at: Self.at(0.005)),
        ]
        let entries = DeliveryHistory.entries(events, filter: PushHistoryFilter(), limit: 10)
        #expect(entries.count == 1)
        #expect(entries.first?.status == .refused && entries.first?.device == "d1", "\(entries)")
        #expect(entries.first?.reason == "device d1: aps.badge: must be a non-negative integer")
        #expect(entries.first?.steps == [.accepted, .delivered, .refused, .acknowledged])
        #expect(DeliveryHistory.entries(events, filter: PushHistoryFilter(status: .refused), limit: 10).count == 1)
    }

    @Test func onePerPushNewestFirstWithItsLatestStepAndWhereItWent() {
        let all = DeliveryHistory.entries(Self.events, filter: PushHistoryFilter(), limit: 100)
        #expect(all.map(\.apnsID) == ["a", "c", "b", "a"])
        #expect(all.map(\.status) == [.accepted, .discarded, .replaced, .acknowledged])
        let first = all[3]
        #expect(first.uniqueID == "ua" && first.device == "d1" && first.topic == "com.example.app")
        #expect(first.steps == [.accepted, .delivered, .acknowledged] && first.at == Self.at(0.005))
        #expect(first.reason == nil)
        #expect(all[1].reason == "expiration 0 or past and the device is offline")
        #expect(all[2].steps == [.accepted, .stored, .replaced] && all[2].reason == "replaced by a newer push")
        #expect(
            DeliveryHistory.entries(Self.events, filter: PushHistoryFilter(), limit: 2).map(\.apnsID) == ["a", "c"])
    }

    @Test func filteredByAppDeviceStatusAndReason() {
        func ids(_ filter: PushHistoryFilter) -> [String] {
            DeliveryHistory.entries(Self.events, filter: filter, limit: 100).map { $0.uniqueID ?? $0.apnsID }
        }
        // An app's topics include its suffixed ones; another bundle id that merely starts alike does not.
        #expect(ids(PushHistoryFilter(app: "com.example.app")) == ["a", "b", "ua"])
        #expect(ids(PushHistoryFilter(app: "com.example")) == [])
        #expect(ids(PushHistoryFilter(device: "d1")) == ["c", "ua"])
        #expect(ids(PushHistoryFilter(status: .acknowledged)) == ["ua"])
        #expect(ids(PushHistoryFilter(reason: "OFFLINE")) == ["c"])
        #expect(ids(PushHistoryFilter(app: "com.example.app", device: "d2", status: .replaced)) == ["b"])
    }

    @Test func theAcceptedDetailReadsBack() {
        let detail = DeliveredPush.acceptedDetail(device: "dev, 1", topic: "com.example.app", binaryIdentifier: 7)
        let target = DeliveredPush.target(ofAccepted: detail)
        #expect(target?.device == "dev, 1" && target?.topic == "com.example.app")
        #expect(DeliveredPush.target(ofAccepted: "something else") == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func theLogKeepsWhatIsYoungerThanTheRetentionAndPurgesTheRestByHourlyMarks(kind: StoreKind) async throws {
        let store = try await kind.store()
        let day: TimeInterval = 86400
        func commit(_ id: String, at seconds: TimeInterval) async throws {
            var batch = StoreBatch()
            batch.events = [Self.accepted(id, device: "d1", topic: "com.example.app", at: seconds)]
            _ = try await store.commit(batch, policy: OfflinePolicy())
        }
        try await commit("old", at: 0)
        // Hourly: nothing is 30 days old yet; each run marks where the log stands.
        #expect(try await store.purgeDeliveryLog(now: Self.at(0), before: Self.at(-30 * day)) == 0)
        try await commit("newer", at: 1800)
        #expect(try await store.purgeDeliveryLog(now: Self.at(3600), before: Self.at(3600 - 30 * day)) == 0)
        try await commit("newest", at: 30 * day)
        // 30 days and half an hour on: "old" (before the first mark) goes; "newer" was written after
        // it, so it stays until the next mark is 30 days old.
        #expect(try await store.purgeDeliveryLog(now: Self.at(30 * day + 1800), before: Self.at(1800)) == 1)
        #expect(try await store.deliveryLog(id: "old").isEmpty)
        #expect(try await store.deliveryLog(id: "newer").count == 1)
        #expect(try await store.recentDeliveryEvents(rows: 10).map(\.apnsID) == ["newer", "newest"])
        #expect(try await store.purgeDeliveryLog(now: Self.at(30 * day + 3600), before: Self.at(3600)) == 1)
        #expect(try await store.recentDeliveryEvents(rows: 10).map(\.apnsID) == ["newest"])
        #expect(try await store.recentDeliveryEvents(rows: 0).isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func feedbackIsReadWithoutEmptyingAndStoredPushesAreCountedPerDevice(kind: StoreKind) async throws {
        let store = try await kind.store()
        let token = DeviceToken(bytes: [0xAB, 0xCD])
        try await store.save(
            [],
            feedback: [
                FeedbackEntry(bundleID: "com.example.app", token: token, environment: .development, removedAt: Self.t0)
            ],
            device: nil)
        #expect(
            try await store.feedback(bundleID: "com.example.app", environment: .development).map(\.token) == [token])
        #expect(try await store.feedback(bundleID: "com.example.app", environment: .production).isEmpty)
        #expect(try await store.feedback(bundleID: "com.example.app", environment: .development).count == 1)
        #expect(try await store.takeFeedback(bundleID: "com.example.app", environment: .development).count == 1)
        #expect(try await store.feedback(bundleID: "com.example.app", environment: .development).isEmpty)

        var batch = StoreBatch()
        batch.pushes = ["d1", "d1", "d2"].enumerated().map { i, device in
            StoredPush(
                apnsID: "p\(i)", uniqueID: nil, deviceID: device, token: token, environment: .development,
                topic: "t\(i)", pushType: .alert, priority: .immediate, collapseID: nil,
                expiresAt: Self.at(3600), receivedAt: Self.t0, payload: Data("{}".utf8), contentAvailable: false)
        }
        _ = try await store.commit(batch, policy: OfflinePolicy())
        #expect(try await store.storedCountsByDevice() == ["d1": 2, "d2": 1])
        #expect(try await store.storedCount(device: "d1") == 2)
        #expect(try await store.storedCount(device: "nobody") == 0)
    }
}
