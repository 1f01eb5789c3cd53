import Foundation
import HeraldCore
import HeraldKit
import HeraldProvider
import HeraldTesting
import Testing

/// The testbed as a user of HeraldTesting uses it (docs/testing.md).
@Suite struct TestbedTests {
    /// A provider's push, sent with HeraldProvider over TLS and HTTP/2, shows on the device.
    @Test func aProvidersPushShowsOnTheDevice() async throws {
        let herald = try await TestGateway.start(apps: ["com.example.app"])
        let phone = try await herald.device("phone")
        let client = try herald.providerClient()
        let token = try await phone.token(for: "com.example.app")
        let payload = Data(#"{"aps":{"alert":{"title":"Hi","body":"from a test"},"badge":2}}"#.utf8)
        let delivery = try await client.send(APNsNotification(payload: payload, topic: "com.example.app"), to: token)
        #expect(delivery.attempts == 1)
        let shown = try #require(await phone.nextPresentation())
        #expect(shown.title == "Hi" && shown.body == "from a test" && shown.badge == 2 && shown.remote)
        try await client.shutdown()
        await phone.stop()
        await herald.stop()
    }

    /// An app's local notification fires when the device's clock is moved, without waiting.
    @Test func aLocalNotificationFiresWhenTheClockIsMoved() async throws {
        let device = try await TestDevice.start(gatewayURL: nil, apps: ["com.example.tea"])
        let app = try await device.app("com.example.tea")
        #expect(try await app.requestAuthorization(options: [.alert]))
        var content = NotificationContent()
        content.title = "Tea"
        try await app.add(
            NotificationRequest(
                identifier: "tea", content: content, trigger: .timeInterval(try TimeIntervalTrigger(interval: 180))))
        try await device.advanceClock(by: 179)
        // The clock moves only when told, and the device fires what is due before it returns.
        #expect(try await app.deliveredNotifications().isEmpty)
        try await device.advanceClock(by: 1)
        #expect(try await app.deliveredNotifications().map(\.identifier) == ["tea"])
        let shown = try #require(await device.nextPresentation())
        #expect(shown.title == "Tea" && !shown.remote)
        await app.close()
        await device.stop()
    }

    /// A token the device gave up (its app removed) is refused with 410 Unregistered.
    @Test func aRemovedAppsTokenIsRefusedWith410() async throws {
        let herald = try await TestGateway.start(apps: ["com.example.app"])
        let phone = try await herald.device("phone")
        let token = try await phone.token(for: "com.example.app")
        try await phone.service.remove("com.example.app")
        let client = try herald.providerClient()
        await #expect {
            _ = try await client.send(
                APNsNotification(payload: Data(#"{"aps":{"alert":"gone"}}"#.utf8), topic: "com.example.app"), to: token)
        } throws: { error in
            (error as? APNsError)?.status == 410
        }
        try await client.shutdown()
        await phone.stop()
        await herald.stop()
    }
}
