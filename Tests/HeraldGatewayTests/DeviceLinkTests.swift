import Crypto
import Foundation
import HeraldCore
import HeraldRuntime
import HeraldTesting
import Logging
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import HeraldGateway

/// Buffers a link client's events so a test can wait for the next one.
final class Inbox: Sendable {
    private let events = Mutex<[GatewayLinkEvent]>([])

    init(_ client: GatewayLinkClient) {
        let stream = client.events
        Task { [self] in
            for await event in stream { self.append(event) }
        }
    }

    private func append(_ event: GatewayLinkEvent) {
        events.withLock { $0.append(event) }
    }

    /// Pushes received so far, without waiting.
    var pushes: [LinkPush] {
        events.withLock { Self.pushes(in: $0) }
    }

    /// Waits (up to a safety deadline) for the event list to satisfy `condition`.
    func wait(for what: String, _ condition: @escaping ([GatewayLinkEvent]) -> Bool) async throws {
        // The events come from the real client reading a real socket: nothing to await but them.
        try await waitUntil(what) { self.events.withLock { condition($0) } }
    }

    func waitForPushes(_ count: Int) async throws -> [LinkPush] {
        try await wait(for: "\(count) pushes") { events in
            Self.pushes(in: events).count >= count
        }
        return pushes
    }

    /// The notifications of `events`, in order.
    static func pushes(in events: [GatewayLinkEvent]) -> [LinkPush] {
        events.flatMap { event -> [LinkPush] in
            if case .pushes(let p) = event { return p }
            return []
        }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A directory, router and device link server on a loopback port, with the provider API's logic
/// called directly.
struct LinkHarness {
    let f: Fixture
    let router: PushRouter
    let server: DeviceLinkServer
    var url: String { "ws://127.0.0.1:\(server.localAddress?.port ?? 0)/device/v1" }

    init(
        acknowledgementTimeout: Duration = .seconds(10), qos: LinkQoS.Configuration = .init(batchWindow: .seconds(60)),
        offline: OfflinePolicy = OfflinePolicy(), store: ((any GatewayStore) -> any GatewayStore)? = nil,
        logBatch: Int = 0
    ) async throws {
        f = try await Fixture(now: Date())
        router = PushRouter(
            committer: GroupCommitter(store: store?(f.store) ?? f.store, policy: offline, logBatch: logBatch))
        var configuration = DeviceLinkServer.Configuration()
        configuration.acknowledgementTimeout = acknowledgementTimeout
        configuration.qos = qos
        server = try await DeviceLinkServer.start(
            host: "127.0.0.1", port: 0, tls: nil, directory: f.directory, links: router.links,
            offline: router.offline,
            configuration: configuration, group: MultiThreadedEventLoopGroup.singleton,
            logger: Logger.silent)
    }

    /// Sends a push through the provider API's logic and the router; returns the answer.
    func push(
        to token: DeviceToken, topic: String = Fixture.bundle, body: String = #"{"aps":{"alert":"hi"}}"#,
        headers: [(String, String)] = []
    ) async throws -> ProviderResponse {
        await f.push(through: router, token: token, topic: topic, body: body, headers: headers)
    }

    func reason(of token: DeviceToken) -> APNsReason? {
        var connection = ProviderConnectionState(defaultEnvironment: .development)
        if case .respond(let response, _) = f.api.handle(
            f.request(token: token.hex), connection: &connection, now: Date())
        {
            return response.reason
        }
        return nil
    }

    func storedCount() async throws -> Int { try await f.store.storedCount() }

    /// Waits until the delivery log has `kinds` (the log is written behind the answer).
    func waitForLog(_ id: String, _ kinds: [DeliveryEvent.Kind]) async throws {
        // The log is committed by the store in the background, behind the answer.
        try await waitUntil("log of \(id) to be \(kinds)") {
            try await f.store.deliveryLog(id: id).map(\.kind) == kinds
        }
    }

    /// Waits until the store holds `count` pushes (an acknowledgement removes one after it crosses the socket).
    func waitForStored(_ count: Int) async throws {
        // The acknowledgement crosses the socket and its removal is a background commit.
        try await waitUntil("\(count) stored pushes") { try await storedCount() == count }
    }
}

@Suite struct DeviceLinkTests {
    @Test func aConnectedDeviceReceivesThePushAndTheAnswerWaitsForItsAcknowledgement() async throws {
        let h = try await LinkHarness()
        let client = try await GatewayLinkClient.connect(url: h.url, identity: DeviceIdentity(deviceID: "phone-1"))
        defer { Task { await client.close() } }
        #expect(client.deviceID == "phone-1")
        #expect(client.registrations.isEmpty)
        let inbox = Inbox(client)
        let token = try await client.register(topic: Fixture.bundle)
        #expect(
            h.f.directory.registry.currentToken(device: "phone-1", bundleID: Fixture.bundle, environment: .development)
                == token)
        // Registering again returns the same token.
        #expect(try await client.register(topic: Fixture.bundle) == token)

        let body = "{ \"aps\" : { \"alert\" : \"caf\u{e9}\" },\n \"n\": 1.50 }"
        let expiration = Int64(Date().timeIntervalSince1970) + 3600
        let response = try await h.push(
            to: token, body: body,
            headers: [
                ("apns-id", "6A3A0E3B-6C4B-4D2B-9C54-1E2D3C4B5A69"), ("apns-collapse-id", "score"),
                ("apns-expiration", String(expiration)), ("apns-priority", "10"), ("apns-push-type", "alert"),
            ])
        #expect(response.status == 200)
        #expect(response.apnsID == "6A3A0E3B-6C4B-4D2B-9C54-1E2D3C4B5A69")
        // The 200 came after the acknowledgement: nothing was stored.
        #expect(try await h.storedCount() == 0)
        let push = try #require(try await inbox.waitForPushes(1).first)
        #expect(push.payload == Data(body.utf8))
        #expect(push.topic == Fixture.bundle)
        #expect(push.token == token)
        #expect(push.collapseID == "score")
        #expect(push.expiration == expiration)
        #expect(push.priority == .immediate)
        #expect(push.pushType == .alert)
        #expect(push.uniqueID == response.uniqueID)
        try await h.waitForLog(response.apnsID, [.accepted, .delivered, .acknowledged])
        try await h.waitForLog(try #require(response.uniqueID), [.accepted, .delivered, .acknowledged])
    }

    @Test func aPushNotAcknowledgedBeforeTheLinkClosesIsStoredAndSentAgainOnReconnect() async throws {
        let h = try await LinkHarness()
        let identity = DeviceIdentity(deviceID: "phone-2")
        let first = try await GatewayLinkClient.connect(url: h.url, identity: identity, autoAcknowledge: false)
        let inbox = Inbox(first)
        let token = try await first.register(topic: Fixture.bundle)
        async let answer = h.push(to: token, headers: [("apns-id", "11111111-1111-1111-1111-111111111111")])
        _ = try await inbox.waitForPushes(1)
        await first.close()
        // The link closed without an acknowledgement: the push is stored, then answered.
        #expect(try await answer.status == 200)
        #expect(try await h.storedCount() == 1)
        try await h.waitForLog(
            "11111111-1111-1111-1111-111111111111", [.accepted, .delivered, .stored])

        let second = try await GatewayLinkClient.connect(url: h.url, identity: identity)
        defer { Task { await second.close() } }
        let again = try await Inbox(second).waitForPushes(1)
        #expect(again.map(\.apnsID) == ["11111111-1111-1111-1111-111111111111"])
        // The acknowledgement removes it from the store.
        try await h.waitForStored(0)
        try await h.waitForLog(
            "11111111-1111-1111-1111-111111111111",
            [.accepted, .delivered, .stored, .delivered, .acknowledged])
    }

    /// APNs answers 200 to an expiration-0 push it could not deliver, and drops it. The 200 comes
    /// only once the `discarded` line is durable: a crash right after it still leaves a trace.
    @Test func anExpirationZeroPushToAnOfflineDeviceIsLoggedDiscardedBeforeItsAnswer() async throws {
        // Log lines linger in groups, as in the gateway: only a line the answer waits for is there at once.
        let h = try await LinkHarness(logBatch: 4096)
        let token = h.f.token  // device-1, registered and never connected
        let id = "55555555-5555-5555-5555-555555555555"
        let response = try await h.push(to: token, headers: [("apns-expiration", "0"), ("apns-id", id)])
        #expect(response.status == 200)
        // No flush, no waiting: the line was committed before the answer.
        #expect(try await h.f.store.deliveryLog(id: id).map(\.kind) == [.accepted, .discarded])
        #expect(try await h.storedCount() == 0)
    }

    @Test func anOfflineDeviceGetsItsStoredPushWhenItConnects() async throws {
        let h = try await LinkHarness()
        let identity = DeviceIdentity(deviceID: "phone-5")
        let first = try await GatewayLinkClient.connect(url: h.url, identity: identity)
        let token = try await first.register(topic: Fixture.bundle)
        await first.close()
        // The client closed its socket; the gateway learns it when the channel goes inactive.
        try await waitUntil("the device is offline") { !h.router.links.isOnline("phone-5") }
        // Two pushes for the same app while offline: APNs keeps the newest.
        #expect(try await h.push(to: token, body: #"{"aps":{"alert":"old"}}"#).status == 200)
        #expect(try await h.push(to: token, body: #"{"aps":{"alert":"new"}}"#).status == 200)
        #expect(try await h.storedCount() == 1)

        let second = try await GatewayLinkClient.connect(url: h.url, identity: identity)
        defer { Task { await second.close() } }
        #expect(
            second.registrations == [LinkRegistration(topic: Fixture.bundle, environment: .development, token: token)])
        let pushes = try await Inbox(second).waitForPushes(1)
        #expect(pushes.map { String(decoding: $0.payload, as: UTF8.self) } == [#"{"aps":{"alert":"new"}}"#])
        try await h.waitForStored(0)
    }

    @Test func theDeviceDropsASecondCopyOfAnAPNsID() async throws {
        let h = try await LinkHarness()
        let client = try await GatewayLinkClient.connect(url: h.url, identity: DeviceIdentity(deviceID: "phone-6"))
        defer { Task { await client.close() } }
        let inbox = Inbox(client)
        let token = try await client.register(topic: Fixture.bundle)
        let id = ("apns-id", "44444444-4444-4444-4444-444444444444")
        #expect(try await h.push(to: token, headers: [id]).status == 200)
        // The second copy is acknowledged (the answer comes) but not handed on.
        #expect(try await h.push(to: token, body: #"{"aps":{"alert":"again"}}"#, headers: [id]).status == 200)
        #expect(try await h.push(to: token, body: #"{"aps":{"alert":"other"}}"#).status == 200)
        let pushes = try await inbox.waitForPushes(2)
        #expect(
            pushes.map { String(decoding: $0.payload, as: UTF8.self) }
                == [#"{"aps":{"alert":"hi"}}"#, #"{"aps":{"alert":"other"}}"#])
    }

    @Test func priorityOneWaitsForOtherTrafficAndGoesWithIt() async throws {
        let h = try await LinkHarness(qos: .init(batchWindow: .seconds(60)))
        let client = try await GatewayLinkClient.connect(url: h.url, identity: DeviceIdentity(deviceID: "phone-7"))
        defer { Task { await client.close() } }
        let inbox = Inbox(client)
        let token = try await client.register(topic: Fixture.bundle)
        // Held: stored, answered, not sent.
        let low = try await h.push(to: token, body: #"{"aps":{"badge":1}}"#, headers: [("apns-priority", "1")])
        #expect(low.status == 200)
        let normal = try await h.push(
            to: token, body: #"{"aps":{"badge":2}}"#, headers: [("apns-priority", "5"), ("apns-collapse-id", "n")])
        #expect(normal.status == 200)
        // Both wait on the link; the store keeps only the newest for the topic (APNs's policy), which is
        // what the device would get if it went offline now.
        #expect(try await h.storedCount() == 1)
        #expect(inbox.pushes.isEmpty)
        // A priority-10 push goes at once and takes them along.
        let urgent = try await h.push(to: token, body: #"{"aps":{"alert":"now"}}"#)
        #expect(urgent.status == 200)
        let pushes = try await inbox.waitForPushes(3)
        #expect(pushes.map(\.apnsID) == [urgent.apnsID, normal.apnsID, low.apnsID])
        try await h.waitForStored(0)
    }

    @Test func resetAndRemoveVoidTheTokens() async throws {
        let h = try await LinkHarness()
        let client = try await GatewayLinkClient.connect(url: h.url, identity: DeviceIdentity(deviceID: "phone-8"))
        defer { Task { await client.close() } }
        let inbox = Inbox(client)
        let token = try await client.register(topic: Fixture.bundle)
        let other = try await client.register(topic: "com.example.other")
        #expect(h.reason(of: token) == nil)

        try await client.unregister(topic: "com.example.other")
        #expect(h.reason(of: other) == .unregistered)
        let feedback = try await h.f.store.takeFeedback(bundleID: "com.example.other", environment: .development)
        #expect(feedback.map(\.token) == [other])
        await #expect(throws: GatewayLinkClient.Failure.self) {
            try await client.unregister(topic: "com.example.never")
        }

        let generation = try await client.reset()
        #expect(generation == client.generation + 1)
        #expect(h.reason(of: token) == .unregistered)
        try await inbox.wait(for: "the reset event") { $0.contains(.reset(generation: generation)) }
        let fresh = try await client.register(topic: Fixture.bundle)
        #expect(fresh != token)
        #expect(h.reason(of: fresh) == nil)
    }

    /// Scoped tokens (a Live Activity's, a push-to-start token): one per scope, apart from the app's,
    /// stable, reaching the device with the scoped token, listed with their scope on the next welcome,
    /// and given up alone (410 for it, the app's token still good, nothing on the feedback list).
    @Test func scopedTokensLiveBesideTheAppsAndGoAlone() async throws {
        let h = try await LinkHarness()
        let identity = DeviceIdentity(deviceID: "phone-s")
        let client = try await GatewayLinkClient.connect(url: h.url, identity: identity)
        let inbox = Inbox(client)
        let app = try await client.register(topic: Fixture.bundle)
        let activity = TokenScope.activity("6A1B")
        let scoped = try await client.token(topic: Fixture.bundle, scope: activity)
        let start = try await client.token(topic: Fixture.bundle, scope: .pushToStart("DeliveryAttributes"))
        #expect(Set([app, scoped, start]).count == 3)
        #expect(try await client.token(topic: Fixture.bundle, scope: activity) == scoped)
        let liveTopic = Fixture.bundle + ".push-type.liveactivity"
        let body = #"{"aps":{"event":"update","timestamp":1,"content-state":{}}}"#
        let answer = try await h.push(
            to: scoped, topic: liveTopic, body: body, headers: [("apns-push-type", "liveactivity")])
        #expect(answer.status == 200, "\(answer)")
        let got = try await inbox.waitForPushes(1)
        #expect(got.first?.token == scoped && got.first?.pushType == .liveactivity)

        await client.close()
        let again = try await GatewayLinkClient.connect(url: h.url, identity: identity)
        defer { Task { await again.close() } }
        #expect(again.registrations.first { $0.scope == activity }?.token == scoped, "\(again.registrations)")
        #expect(again.registrations.first { $0.scope == nil }?.token == app)

        // At most 64 live scoped tokens per app: the next is refused until one is given up.
        for i in 0..<(GatewayDirectory.scopedTokenLimit - 2) {
            _ = try await again.token(topic: Fixture.bundle, scope: .activity("more-\(i)"))
        }
        do {
            _ = try await again.token(topic: Fixture.bundle, scope: .activity("one-too-many"))
            Issue.record("a 65th scoped token was issued")
        } catch let failure as GatewayLinkClient.Failure {
            #expect(failure.code == .refused && failure.message.contains("holds 64 scoped tokens"), "\(failure)")
        }
        try await again.releaseToken(topic: Fixture.bundle, scope: .activity("more-0"))
        _ = try await again.token(topic: Fixture.bundle, scope: .activity("one-too-many"))

        try await again.releaseToken(topic: Fixture.bundle, scope: activity)
        #expect(h.reason(of: scoped) == .unregistered)
        #expect(h.reason(of: app) == nil)
        #expect(try await h.f.store.feedback(bundleID: Fixture.bundle, environment: .development).isEmpty)
        await #expect(throws: GatewayLinkClient.Failure.self) {
            try await again.releaseToken(topic: Fixture.bundle, scope: activity)
        }
    }

    @Test func aDeviceMustProveItHoldsItsKey() async throws {
        let h = try await LinkHarness()
        let owner = DeviceIdentity(deviceID: "phone-9")
        let client = try await GatewayLinkClient.connect(url: h.url, identity: owner)
        await client.close()
        // Another key claiming the same id is refused.
        await #expect(
            throws: GatewayLinkClient.Failure(
                code: "DeviceKeyMismatch", message: "device phone-9 is registered with another key")
        ) {
            _ = try await GatewayLinkClient.connect(url: h.url, identity: DeviceIdentity(deviceID: "phone-9"))
        }
        // A signature that does not verify is refused.
        let service = h.server.service
        let nonce = Data(repeating: 1, count: 32)
        let wrong = try owner.privateKey.signature(for: Data("something else".utf8)).rawRepresentation
        guard
            case .failure(let refusal) = await service.authenticate(
                device: "phone-9", publicKey: nil, signature: wrong, nonce: nonce)
        else { throw TestFailure("a bad signature was accepted") }
        #expect(refusal.code == "BadSignature")
        let right = try owner.privateKey.signature(for: DeviceLink.signedBytes(nonce: nonce)).rawRepresentation
        guard
            case .success = await service.authenticate(
                device: "phone-9", publicKey: nil, signature: right, nonce: nonce)
        else { throw TestFailure("the right signature was refused") }
        // A device the gateway does not know must bring its key.
        guard
            case .failure(let unknown) = await service.authenticate(
                device: "phone-x", publicKey: nil, signature: right, nonce: nonce)
        else { throw TestFailure("an unknown device without a key was accepted") }
        #expect(unknown.code == "UnknownDevice")
    }

    @Test func aDeviceCreatedByTheAdministratorIsClaimedByTheFirstKey() async throws {
        let h = try await LinkHarness()
        // Fixture's device-1 has no key and a registered app.
        let client = try await GatewayLinkClient.connect(url: h.url, identity: DeviceIdentity(deviceID: "device-1"))
        defer { Task { await client.close() } }
        #expect(client.registrations.map(\.token) == [h.f.token])
        #expect(h.f.directory.registry.device("device-1")?.publicKey.isEmpty == false)
    }

    @Test func aStoredPushWhoseAppWasRemovedMeanwhileIsDiscardedNotDelivered() async throws {
        let h = try await LinkHarness()
        try await h.f.directory.putApp(bundleID: "com.example.kept", teamID: Fixture.team)
        let identity = DeviceIdentity(deviceID: "phone-11")
        let first = try await GatewayLinkClient.connect(url: h.url, identity: identity)
        let token = try await first.register(topic: Fixture.bundle)
        let kept = try await first.register(topic: "com.example.kept")
        await first.close()
        // The client closed its socket; the gateway learns it when the channel goes inactive.
        try await waitUntil("the device is offline") { !h.router.links.isOnline("phone-11") }
        let removed = try await h.push(to: token)
        #expect(try await h.push(to: kept, topic: "com.example.kept").status == 200)
        #expect(try await h.storedCount() == 2)
        try await h.f.directory.unregisterApp(
            device: "phone-11", bundleID: Fixture.bundle, environment: .development, now: Date())

        let second = try await GatewayLinkClient.connect(url: h.url, identity: identity)
        defer { Task { await second.close() } }
        let pushes = try await Inbox(second).waitForPushes(1)
        #expect(pushes.map(\.token) == [kept])
        try await h.waitForStored(0)
        try await h.waitForLog(removed.apnsID, [.accepted, .stored, .discarded])
    }

    @Test func expiredPushesArePurgedAndLogged() async throws {
        let f = try await Fixture()
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: OfflinePolicy()))
        var connection = ProviderConnectionState(defaultEnvironment: .development)
        let expiration = Int64(f.now.timeIntervalSince1970) + 10
        guard
            case .accept(let push, _) = f.api.handle(
                f.request(headers: [("apns-expiration", String(expiration))]), connection: &connection, now: f.now)
        else { throw TestFailure("not accepted") }
        let response = await withCheckedContinuation { c in router.route(push) { c.resume(returning: $0) } }
        #expect(response.status == 200)
        #expect(try await router.offline.purgeExpired(now: f.now.addingTimeInterval(9)) == 0)
        #expect(try await router.offline.purgeExpired(now: f.now.addingTimeInterval(10)) == 1)
        #expect(try await f.store.storedCount() == 0)
        #expect(try await f.store.deliveryLog(id: push.apnsID).map(\.kind) == [.accepted, .stored, .discarded])
    }

    @Test func anAdministratorsResetAndDeleteReachTheConnectedDevice() async throws {
        let h = try await LinkHarness()
        let identity = DeviceIdentity(deviceID: "phone-12")
        let client = try await GatewayLinkClient.connect(url: h.url, identity: identity)
        let inbox = Inbox(client)
        // What the admin API does for POST /devices/{id}/reset and DELETE /devices/{id}.
        let reset = try await h.f.directory.resetDevice("phone-12", now: Date())
        h.router.links.deviceWasReset("phone-12", generation: reset.generation)
        try await inbox.wait(for: "the reset") { $0.contains(.reset(generation: reset.generation)) }
        try await h.f.directory.deleteDevice("phone-12", now: Date())
        h.router.links.disconnect("phone-12", reason: "an administrator deleted the device")
        try await inbox.wait(for: "the link to close") {
            $0.contains(.closed(reason: "DeviceDeleted: an administrator deleted the device"))
        }
        await #expect(
            throws: GatewayLinkClient.Failure(code: "DeviceDeleted", message: "device phone-12 was deleted")
        ) {
            _ = try await GatewayLinkClient.connect(url: h.url, identity: identity)
        }
    }

    @Test func aSecondConnectionReplacesTheFirst() async throws {
        let h = try await LinkHarness()
        let identity = DeviceIdentity(deviceID: "phone-10")
        let first = try await GatewayLinkClient.connect(url: h.url, identity: identity)
        let firstInbox = Inbox(first)
        let second = try await GatewayLinkClient.connect(url: h.url, identity: identity)
        defer { Task { await second.close() } }
        try await firstInbox.wait(for: "the first link to close") {
            $0.contains(.closed(reason: "Replaced: the device connected again"))
        }
        let token = try await second.register(topic: Fixture.bundle)
        #expect(try await h.push(to: token).status == 200)
        #expect(try await Inbox(second).waitForPushes(1).count == 1)
    }
}

/// Waits for something that happens on the other side of a real socket, or in a background store
/// commit, which the test has nothing to await on: polls every few milliseconds and fails after a
/// generous deadline. No test uses it to let time pass; QoS timing is tested in virtual time.
func waitUntil(
    _ what: String, within limit: Duration = .seconds(10), _ condition: () async throws -> Bool
) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now + limit
    while try await !condition() {
        guard clock.now < deadline else { throw TestFailure("timed out waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(5))  // polls a socket or a commit, within the deadline
    }
}
