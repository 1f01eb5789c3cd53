import Crypto
import Foundation
import HeraldCore
import Testing

@testable import HeraldGateway

/// ``DirectoryStore``, against both stores: the directory as written survives reopening; the tokens
/// it issues.
@Suite struct DirectoryStoreTests {
    @Test(arguments: StoreKind.allCases) func directorySurvivesReopening(kind: StoreKind) async throws {
        let location = try await kind.location()
        let issuer = TokenIssuer(secret: Array(repeating: 1, count: 32))
        let key = P256.Signing.PrivateKey()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        do {
            let directory = try await GatewayDirectory.open(store: try await location.open(), issuer: issuer)
            try await directory.putTeam(id: "TEAM123456")
            try await directory.putKey(id: "KEY1234567", teamID: "TEAM123456", publicKey: key.publicKey)
            try await directory.putApp(bundleID: "com.example.demo", teamID: "TEAM123456")
            _ = try await directory.registerDevice(id: "d1", now: now)
            _ = try await directory.registerApp(
                device: "d1", bundleID: "com.example.demo", environment: .development, now: now)
            try await directory.unregisterApp(
                device: "d1", bundleID: "com.example.demo", environment: .development, now: now)
            _ = try await directory.registerDevice(id: "d2", now: now)
            _ = try await directory.registerApp(
                device: "d2", bundleID: "com.example.demo", environment: .development, now: now)
            try await directory.resetDevice("d2", now: now)
        }
        let store = try await location.open()
        let directory = try await GatewayDirectory.open(store: store, issuer: issuer)
        #expect(directory.registry.team("TEAM123456") != nil)
        #expect(directory.registry.verifier("KEY1234567")?.1.rawRepresentation == key.publicKey.rawRepresentation)
        let token = issuer.token(device: "d1", bundleID: "com.example.demo", environment: .development, generation: 1)
        #expect(directory.registry.registration(token, in: .development)?.invalidation == .appRemoved)
        // The reset's new generation and its invalidated token were written together.
        #expect(directory.registry.device("d2")?.generation == 2)
        let d2 = issuer.token(device: "d2", bundleID: "com.example.demo", environment: .development, generation: 1)
        #expect(directory.registry.registration(d2, in: .development)?.invalidation == .deviceReset)
        // Feedback: read once, then empty.
        let feedback = try await store.takeFeedback(bundleID: "com.example.demo", environment: .development)
        #expect(feedback.map(\.token) == [token])
        #expect(try await store.takeFeedback(bundleID: "com.example.demo", environment: .development).isEmpty)
    }

    /// Many registrations saved at once (a bulk registration) read back as saved one by one: the
    /// last record of a token wins, and a token registered again leaves the feedback list.
    @Test(arguments: StoreKind.allCases) func manyRegistrationsInOneSaveMatchOneByOne(kind: StoreKind) async throws {
        let store = try await kind.location().open()
        let issuer = TokenIssuer(secret: Array(repeating: 3, count: 32))
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        func registration(_ device: String, _ environment: APNsEnvironment) -> Registration {
            Registration(
                token: issuer.token(
                    device: device, bundleID: "com.example.bulk", environment: environment, generation: 1),
                deviceID: device, bundleID: "com.example.bulk", environment: environment, generation: 1,
                registeredAt: now)
        }
        var all = (0..<300).map { registration("bulk\($0)", $0 % 2 == 0 ? .production : .development) }
        // A token removed earlier is on the feedback list until it is registered again.
        let returning = registration("bulk0", .production)
        let removed = FeedbackEntry(
            bundleID: "com.example.bulk", token: returning.token, environment: .production, removedAt: now)
        try await store.save([], feedback: [removed], device: nil)
        // The same token twice in one save: the later record is the one kept.
        var later = registration("bulk1", .development)
        later.invalidatedAt = now
        later.invalidation = .appRemoved
        all.append(later)
        try await store.save(all, feedback: [], device: nil)

        let saved = try await store.loadDirectory().registrations
        #expect(saved.count == 300)
        let byToken = Dictionary(
            saved.map { ($0.token.hex + $0.environment.rawValue, $0) }, uniquingKeysWith: { a, _ in a })
        #expect(byToken[later.token.hex + "development"]?.invalidation == .appRemoved)
        #expect(byToken[returning.token.hex + "production"]?.invalidatedAt == nil)
        #expect(Set(saved.map(\.deviceID)).count == 300)
        #expect(try await store.takeFeedback(bundleID: "com.example.bulk", environment: .production).isEmpty)
    }

    @Test func tokensAreStableUnforgeableAndPerEnvironment() {
        let a = TokenIssuer(secret: Array(repeating: 1, count: 32))
        let b = TokenIssuer(secret: Array(repeating: 2, count: 32))
        let t = a.token(device: "d", bundleID: "com.x", environment: .development, generation: 1)
        #expect(t.bytes.count == 32)
        #expect(t.hex.count == 64)
        #expect(t == a.token(device: "d", bundleID: "com.x", environment: .development, generation: 1))
        #expect(t != b.token(device: "d", bundleID: "com.x", environment: .development, generation: 1))
        #expect(t != a.token(device: "d", bundleID: "com.x", environment: .production, generation: 1))
        #expect(t != a.token(device: "d", bundleID: "com.x", environment: .development, generation: 2))
        #expect(t != a.token(device: "d", bundleID: "com.y", environment: .development, generation: 1))
        #expect(DeviceToken(hex: t.hex.uppercased()) == t)
    }
}
