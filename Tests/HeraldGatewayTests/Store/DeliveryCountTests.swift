import Foundation
import HeraldCore
import Testing

@testable import HeraldGateway

/// Apple's delivery states: how the delivery log's steps map onto them, and the counts by day, app
/// and state that both stores keep.
@Suite struct DeliveryCountTests {
    func event(_ kind: DeliveryEvent.Kind, _ detail: String? = nil) -> DeliveryEvent {
        DeliveryEvent(apnsID: "a", uniqueID: nil, kind: kind, at: Date(timeIntervalSince1970: 0), detail: detail)
    }

    @Test func eachStepMapsOntoApplesStateOrNone() {
        let cases: [(DeliveryEvent, AppleDeliveryState?)] = [
            (event(.accepted, "device d, topic t"), .received),
            (event(.delivered), .delivered),
            (event(.delivered, "from the offline store"), .deliveredFromStorage),
            (event(.delivered, "not acknowledged in time"), nil),
            (event(.stored, "until 9 (UNIX seconds); the device is offline"), .storedDeviceOffline),
            (event(.stored, "until 9 (UNIX seconds); the device did not acknowledge it in time"), .storedDeviceOffline),
            (
                event(.stored, "until 9 (UNIX seconds); held for power considerations (priority 5 or 1, …)"),
                .storedPowerConsiderations
            ),
            (event(.discarded, "expired in the offline store"), .discardedExpired),
            (event(.discarded, "expiration 0 or past and the device is offline"), .discardedExpired),
            (
                event(.discarded, "its token was invalidated (app removed or device reset) before delivery"),
                .discardedTokenUnregisteredFromStorage
            ),
            (event(.refused, "device d: the app com.x is not installed"), .discardedTokenUnregistered),
            (
                event(.refused, "device d: the app com.x is not installed (from the offline store)"),
                .discardedTokenUnregisteredFromStorage
            ),
            (event(.refused, "device d: aps.badge: must be a non-negative integer"), .discardedDisabled),
            (event(.refused, "device d: aps: … (from the offline store)"), .discardedDisabledFromStorage),
            (event(.acknowledged), nil), (event(.replaced, "by b"), nil), (event(.warning, "X: y"), nil),
            (event(.rejected, "400 BadDeviceToken"), nil),
        ]
        for (event, state) in cases {
            #expect(AppleDeliveryState(event) == state, "\(event.kind) \(event.detail ?? "")")
        }
        #expect(Set(AppleDeliveryState.allCases.map(\.title)).count == 10)
        #expect(AppleDeliveryState.storedPowerConsiderations.title == "Stored - Power Considerations")
    }

    @Test func daysAreUTCAndAppsLeaveTheirPushTypesSuffix() {
        #expect(DeliveryCount.day(of: Date(timeIntervalSince1970: 0)) == "1970-01-01")
        #expect(DeliveryCount.day(of: Date(timeIntervalSince1970: 1_795_737_599)) == "2026-11-26")
        #expect(DeliveryCount.day(of: Date(timeIntervalSince1970: 1_795_737_600)) == "2026-11-27")
        #expect(DeliveryCount.day(of: Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29")
        #expect(
            DeliveryCount.app(ofTopic: "com.example.app.push-type.liveactivity", pushType: .liveactivity)
                == "com.example.app")
        #expect(DeliveryCount.app(ofTopic: "com.example.app.voip", pushType: .voip) == "com.example.app")
        #expect(DeliveryCount.app(ofTopic: "com.example.app", pushType: .alert) == "com.example.app")
        // An app whose own bundle id ends like a suffix keeps it: only the push type's suffix goes.
        #expect(DeliveryCount.app(ofTopic: "com.example.voip", pushType: .alert) == "com.example.voip")
    }

    /// The delivered fast path writes a compact record: with warnings it still reads back as its
    /// events.
    @Test func aDeliveredRecordWithWarningsIsItsEvents() throws {
        let push = DeliveredPush(
            apnsID: "id", uniqueID: nil, deviceID: "d", topic: "t", acceptedAt: Date(timeIntervalSince1970: 1),
            deliveredAt: Date(timeIntervalSince1970: 2), acknowledgedAt: Date(timeIntervalSince1970: 3),
            warnings: PushWarnings([.badgeNotANumber, .alertTruncated]))
        var record = JSONWriter()
        DeliveredRecord.write(push, to: &record)
        #expect(try DeliveredRecord.events(Data(record.bytes), apnsID: "id", uniqueID: nil) == push.events)
        #expect(push.events.map(\.kind) == [.accepted, .warning, .warning, .delivered, .acknowledged])
    }

    @Test(arguments: StoreKind.allCases) func countsAddUpByDayAppAndStateAndGoWithThePurge(kind: StoreKind) async throws
    {
        let store = try await kind.store()
        let dayOne = Date(timeIntervalSince1970: 1_795_651_200)  // 2026-11-26 00:00 UTC
        let dayTwo = dayOne.addingTimeInterval(86400 + 60)
        var first = StoreBatch()
        first.count(.received, topic: "com.example.a", pushType: .alert, at: dayOne)
        first.count(.storedDeviceOffline, topic: "com.example.a", pushType: .alert, at: dayOne)
        first.delivered = [
            DeliveredPush(
                apnsID: "x", uniqueID: nil, deviceID: "d", topic: "com.example.a.voip", acceptedAt: dayOne,
                deliveredAt: dayOne, acknowledgedAt: dayOne, pushType: .voip)
        ]
        first.tallyDelivered()
        _ = try await store.commit(first, policy: OfflinePolicy(), durable: false)
        var second = StoreBatch()
        second.count(.received, topic: "com.example.a", pushType: .alert, at: dayOne)
        second.count(.received, topic: "com.example.b", pushType: .alert, at: dayTwo)
        second.count(.discardedExpired, topic: "com.example.b", pushType: .alert, at: dayTwo)
        _ = try await store.commit(second, policy: OfflinePolicy(), durable: false)

        let counts = try await store.deliveryCounts(since: "2026-11-26")
        #expect(
            counts == [
                DeliveryCount(day: "2026-11-26", app: "com.example.a", state: .delivered, count: 1),
                DeliveryCount(day: "2026-11-26", app: "com.example.a", state: .received, count: 3),
                DeliveryCount(day: "2026-11-26", app: "com.example.a", state: .storedDeviceOffline, count: 1),
                DeliveryCount(day: "2026-11-27", app: "com.example.b", state: .discardedExpired, count: 1),
                DeliveryCount(day: "2026-11-27", app: "com.example.b", state: .received, count: 1),
            ], "\(counts)")
        #expect(try await store.deliveryCounts(since: "2026-11-27").count == 2)
        // The purge takes the days wholly before its cutoff with the log (once a mark is old enough).
        _ = try await store.purgeDeliveryLog(now: dayOne, before: dayOne)
        _ = try await store.purgeDeliveryLog(now: dayTwo, before: dayTwo)
        #expect(try await store.deliveryCounts(since: "2000-01-01").map(\.day) == ["2026-11-27", "2026-11-27"])
    }
}
