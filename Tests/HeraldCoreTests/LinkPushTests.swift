import Foundation
import Testing

@testable import HeraldCore

/// `LinkPush` keeps its fields in one shared object: a copy is a value all the same.
@Suite struct LinkPushTests {
    static func push() -> LinkPush {
        LinkPush(
            apnsID: "6e1f2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b", uniqueID: "0c6a3bd0-5f0e-4c55-9b52-0d1e6f2b8a41",
            topic: "com.example.a", token: DeviceToken(bytes: [1, 2, 3, 4]), environment: .development,
            pushType: .alert, priority: .immediate, expiration: 1_800_000_000, collapseID: "score",
            payload: Data(#"{"aps":{"alert":"Hi"}}"#.utf8))
    }

    /// Setting a field of a copy leaves the original as it was, field by field.
    @Test func aCopysChangeLeavesTheOriginal() {
        let original = Self.push()
        var copy = original
        copy.apnsID = "other"
        copy.uniqueID = nil
        copy.topic = "com.example.b"
        copy.token = DeviceToken(bytes: [9])
        copy.environment = .production
        copy.pushType = .background
        copy.priority = .normal
        copy.expiration = nil
        copy.collapseID = nil
        copy.payload = Data("{}".utf8)
        #expect(original == Self.push())
        #expect(original.apnsID == "6e1f2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b")
        #expect(original.uniqueID == "0c6a3bd0-5f0e-4c55-9b52-0d1e6f2b8a41")
        #expect(original.topic == "com.example.a")
        #expect(original.token == DeviceToken(bytes: [1, 2, 3, 4]))
        #expect(original.environment == .development)
        #expect(original.pushType == .alert)
        #expect(original.priority == .immediate)
        #expect(original.expiration == 1_800_000_000)
        #expect(original.collapseID == "score")
        #expect(original.payload == Data(#"{"aps":{"alert":"Hi"}}"#.utf8))
        #expect(copy.apnsID == "other")
        #expect(copy.uniqueID == nil)
        #expect(copy.topic == "com.example.b")
        #expect(copy.token == DeviceToken(bytes: [9]))
        #expect(copy.environment == .production)
        #expect(copy.pushType == .background)
        #expect(copy.priority == .normal)
        #expect(copy.expiration == nil)
        #expect(copy.collapseID == nil)
        #expect(copy.payload == Data("{}".utf8))
    }

    /// Two pushes made apart are equal when every field is; one differing field makes them differ.
    @Test func equalityIsFieldByField() {
        #expect(Self.push() == Self.push())
        var other = Self.push()
        other.priority = .normal
        #expect(other != Self.push())
        other.priority = .immediate
        #expect(other == Self.push())
    }
}
