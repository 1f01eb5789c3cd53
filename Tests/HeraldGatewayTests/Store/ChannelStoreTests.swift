import Foundation
import HeraldCore
import Testing

@testable import HeraldGateway

/// ``ChannelStore``, against both stores: channels per app and environment, the messages kept.
@Suite struct ChannelStoreTests {
    /// Broadcast channels: per app and environment, a limit on creation, read, listed oldest
    /// first, deleted once.
    @Test(arguments: StoreKind.allCases) func channelsArePerAppAndEnvironmentWithALimit(kind: StoreKind) async throws {
        let store = try await kind.store()
        func channel(
            _ id: String, _ bundle: String = "com.example.a", _ env: APNsEnvironment = .development, at: Double
        )
            -> BroadcastChannel
        {
            BroadcastChannel(
                id: id, bundleID: bundle, environment: env,
                storagePolicy: id == "AQ==" ? .noStorage : .mostRecentMessage,
                createdAt: Date(timeIntervalSince1970: at))
        }
        #expect(try await store.createChannel(channel("AQ==", at: 1), limit: 2))
        #expect(try await store.createChannel(channel("Ag==", at: 2), limit: 2))
        #expect(try await !store.createChannel(channel("Aw==", at: 3), limit: 2), "the app has two already")
        // Another environment and another app count on their own.
        #expect(try await store.createChannel(channel("BA==", "com.example.a", .production, at: 4), limit: 2))
        #expect(try await store.createChannel(channel("BQ==", "com.example.b", at: 5), limit: 2))
        #expect(try await store.channelIDs(bundleID: "com.example.a", environment: .development) == ["AQ==", "Ag=="])
        #expect(try await store.channelIDs(bundleID: "com.example.a", environment: .production) == ["BA=="])
        #expect(
            try await store.channel(bundleID: "com.example.a", environment: .development, id: "AQ==")
                == channel("AQ==", at: 1))
        #expect(try await store.channel(bundleID: "com.example.a", environment: .production, id: "AQ==") == nil)
        #expect(try await store.channel(bundleID: "com.example.b", environment: .development, id: "AQ==") == nil)
        #expect(try await store.deleteChannel(bundleID: "com.example.a", environment: .development, id: "AQ=="))
        #expect(try await !store.deleteChannel(bundleID: "com.example.a", environment: .development, id: "AQ=="))
        #expect(try await store.createChannel(channel("Aw==", at: 6), limit: 2), "room again after a delete")
        #expect(try await store.channelIDs(bundleID: "com.example.a", environment: .development) == ["Ag==", "Aw=="])
    }

    /// Broadcast messages: read back by id exactly, the latest per channel and environment, those
    /// more than a minute older than a new one forgotten, and all of a channel's gone with it.
    @Test(arguments: StoreKind.allCases) func broadcastMessagesAndTheLatestPerChannel(kind: StoreKind) async throws {
        let store = try await kind.store()
        for env in [APNsEnvironment.development, .production] {
            #expect(
                try await store.createChannel(
                    BroadcastChannel(
                        id: "AQ==", bundleID: "com.example.a", environment: env, storagePolicy: .mostRecentMessage,
                        createdAt: Date(timeIntervalSince1970: 1)), limit: 10))
        }
        func message(_ id: String, at: Double, _ env: APNsEnvironment = .development, expiration: Int64? = nil)
            -> BroadcastMessage
        {
            BroadcastMessage(
                uniqueID: id, requestID: "r-\(id)", channelID: "AQ==", bundleID: "com.example.a", environment: env,
                storagePolicy: .mostRecentMessage, priority: .normal, expiration: expiration,
                payload: Data(#"{"aps":{"event":"update","timestamp":\#(Int(at))}}"#.utf8),
                sentAt: Date(timeIntervalSince1970: at))
        }
        #expect(try await store.latestBroadcast(channelID: "AQ==", environment: .development) == nil)
        try await store.saveBroadcast(message("m1", at: 1000, expiration: 1_900_000_000))
        try await store.saveBroadcast(message("m2", at: 1030))
        try await store.saveBroadcast(message("p1", at: 1040, .production))
        #expect(try await store.broadcast(uniqueID: "m1") == message("m1", at: 1000, expiration: 1_900_000_000))
        #expect(
            try await store.latestBroadcast(channelID: "AQ==", environment: .development) == message("m2", at: 1030))
        #expect(try await store.latestBroadcast(channelID: "AQ==", environment: .production)?.uniqueID == "p1")
        // 70 s after m1 and 40 s after m2: m1 goes, m2 stays for nodes still to read it.
        try await store.saveBroadcast(message("m3", at: 1070))
        #expect(try await store.broadcast(uniqueID: "m1") == nil)
        #expect(try await store.broadcast(uniqueID: "m2") != nil)
        #expect(try await store.latestBroadcast(channelID: "AQ==", environment: .development)?.uniqueID == "m3")
        #expect(try await store.deleteChannel(bundleID: "com.example.a", environment: .development, id: "AQ=="))
        #expect(try await store.latestBroadcast(channelID: "AQ==", environment: .development) == nil)
        #expect(try await store.broadcast(uniqueID: "m3") == nil)
        #expect(try await store.latestBroadcast(channelID: "AQ==", environment: .production)?.uniqueID == "p1")
    }
}

/// How long a broadcast message is kept for late subscribers (docs/broadcast.md).
@Suite struct BroadcastRetentionTests {
    func message(_ policy: ChannelStoragePolicy, expiration: Int64?) -> BroadcastMessage {
        BroadcastMessage(
            uniqueID: "u", requestID: "r", channelID: "AQ==", bundleID: "com.example.a", environment: .development,
            storagePolicy: policy, priority: .immediate, expiration: expiration, payload: Data(),
            sentAt: Date(timeIntervalSince1970: 1_000_000))
    }

    @Test func policyOneKeepsEightHoursOrUntilASoonerExpirationAndPolicyZeroNothing() {
        let sent = Date(timeIntervalSince1970: 1_000_000)
        let eightHours = message(.mostRecentMessage, expiration: nil)
        #expect(eightHours.keptUntil == sent.addingTimeInterval(8 * 3600))
        #expect(eightHours.isKept(at: sent.addingTimeInterval(8 * 3600 - 1)))
        #expect(!eightHours.isKept(at: sent.addingTimeInterval(8 * 3600)))
        #expect(message(.mostRecentMessage, expiration: 1_000_600).keptUntil == Date(timeIntervalSince1970: 1_000_600))
        #expect(message(.mostRecentMessage, expiration: 2_000_000).keptUntil == sent.addingTimeInterval(8 * 3600))
        #expect(message(.mostRecentMessage, expiration: 0).keptUntil == nil)
        #expect(message(.noStorage, expiration: 0).keptUntil == nil)
        #expect(!message(.noStorage, expiration: nil).isKept(at: sent))
    }
}
