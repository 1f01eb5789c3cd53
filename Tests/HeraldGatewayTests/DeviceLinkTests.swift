import Crypto
import Foundation
import HeraldCore
import HeraldRuntime
import HeraldTesting
import Logging
import NIOCore
import NIOPosix
import Testing

@testable import HeraldGateway

/// The device link from the gateway's side: the real handler, link service, router and store, with
/// each device on a testing channel (``VirtualDevice``), so every step awaits what the gateway
/// writes or commits and nothing polls. The link over real sockets, with the device daemon's own
/// client, is `theServerUpgradesARealClientAndAPushCrossesIt` here and the end-to-end tests of the
/// `herald` executable (DeviceLinkEndToEndTests).
@Suite(.timeLimit(.minutes(3))) struct DeviceLinkTests {
    @Test func aConnectedDeviceReceivesThePushAndTheAnswerWaitsForItsAcknowledgement() async throws {
        let h = try await LinkBench()
        let device = try await h.connect(DeviceIdentity(deviceID: "phone-1"), autoAcknowledge: false)
        #expect(device.deviceID == "phone-1")
        #expect(device.registrations.isEmpty)
        let token = try await device.register(topic: Fixture.bundle)
        #expect(
            h.f.directory.registry.currentToken(device: "phone-1", bundleID: Fixture.bundle, environment: .development)
                == token)
        // Registering again returns the same token.
        #expect(try await device.register(topic: Fixture.bundle) == token)

        let body = "{ \"aps\" : { \"alert\" : \"caf\u{e9}\" },\n \"n\": 1.50 }"
        let expiration = Int64(Date().timeIntervalSince1970) + 3600
        async let answer = h.push(
            to: token, body: body,
            headers: [
                ("apns-id", "6A3A0E3B-6C4B-4D2B-9C54-1E2D3C4B5A69"), ("apns-collapse-id", "score"),
                ("apns-expiration", String(expiration)), ("apns-priority", "10"), ("apns-push-type", "alert"),
            ])
        let push = try #require(try await device.pushes(1).first)
        #expect(push.payload == Data(body.utf8))
        #expect(push.topic == Fixture.bundle)
        #expect(push.token == token)
        #expect(push.collapseID == "score")
        #expect(push.expiration == expiration)
        #expect(push.priority == .immediate)
        #expect(push.pushType == .alert)
        // Written and stored nowhere: the answer waits for the acknowledgement.
        #expect(try await h.f.store.storedCount() == 0)
        try await device.acknowledge([push.apnsID])
        let response = await answer
        #expect(response.status == 200)
        #expect(response.apnsID == "6A3A0E3B-6C4B-4D2B-9C54-1E2D3C4B5A69")
        #expect(push.uniqueID == response.uniqueID)
        // The 200 came after the acknowledgement: nothing was stored.
        #expect(try await h.storedCount() == 0)
        #expect(try await h.log(response.apnsID) == [.accepted, .delivered, .acknowledged])
        #expect(try await h.log(try #require(response.uniqueID)) == [.accepted, .delivered, .acknowledged])
    }

    @Test func aPushNotAcknowledgedBeforeTheLinkClosesIsStoredAndSentAgainOnReconnect() async throws {
        let h = try await LinkBench()
        let identity = DeviceIdentity(deviceID: "phone-2")
        let first = try await h.connect(identity, autoAcknowledge: false)
        let token = try await first.register(topic: Fixture.bundle)
        let id = "11111111-1111-1111-1111-111111111111"
        async let answer = h.push(to: token, headers: [("apns-id", id)])
        _ = try await first.pushes(1)
        try await first.close()
        // The link closed without an acknowledgement: the push is stored, then answered.
        #expect(await answer.status == 200)
        #expect(try await h.storedCount() == 1)
        #expect(try await h.log(id) == [.accepted, .delivered, .stored])

        let second = try await h.connect(identity)
        #expect(try await second.pushes(1).map(\.apnsID) == [id])
        // The acknowledgement removes it from the store.
        #expect(try await h.storedCount() == 0)
        #expect(try await h.log(id) == [.accepted, .delivered, .stored, .delivered, .acknowledged])
    }

    /// APNs answers 200 to an expiration-0 push it could not deliver, and drops it. The 200 comes
    /// only once the `discarded` line is durable: a crash right after it still leaves a trace.
    @Test func anExpirationZeroPushToAnOfflineDeviceIsLoggedDiscardedBeforeItsAnswer() async throws {
        // Log lines linger in groups, as in the gateway: only a line the answer waits for is there at once.
        let h = try await LinkBench(logBatch: 4096)
        let token = h.f.token  // device-1, registered and never connected
        let id = "55555555-5555-5555-5555-555555555555"
        let response = await h.push(to: token, headers: [("apns-expiration", "0"), ("apns-id", id)])
        #expect(response.status == 200)
        // No flush, no waiting: the line was committed before the answer.
        #expect(try await h.f.store.deliveryLog(id: id).map(\.kind) == [.accepted, .discarded])
        #expect(try await h.f.store.storedCount() == 0)
    }

    @Test func anOfflineDeviceGetsItsStoredPushWhenItConnects() async throws {
        let h = try await LinkBench()
        let identity = DeviceIdentity(deviceID: "phone-5")
        let first = try await h.connect(identity)
        let token = try await first.register(topic: Fixture.bundle)
        try await first.close()
        #expect(!h.router.links.isOnline("phone-5"))
        // Two pushes for the same app while offline: APNs keeps the newest.
        #expect(await h.push(to: token, body: #"{"aps":{"alert":"old"}}"#).status == 200)
        #expect(await h.push(to: token, body: #"{"aps":{"alert":"new"}}"#).status == 200)
        #expect(try await h.storedCount() == 1)

        let second = try await h.connect(identity)
        #expect(
            second.registrations == [LinkRegistration(topic: Fixture.bundle, environment: .development, token: token)])
        let pushes = try await second.pushes(1)
        #expect(pushes.map { String(decoding: $0.payload, as: UTF8.self) } == [#"{"aps":{"alert":"new"}}"#])
        #expect(try await h.storedCount() == 0)
        #expect(try await second.written().isEmpty, "the older push was sent too")
    }

    /// The gateway does not deduplicate by `apns-id`: a second push with the same id is sent and
    /// answered like the first, and the device drops the copy (the daemon's client does; its
    /// `LinkClientHandlerTests` show it).
    @Test func aSecondPushWithTheSameAPNsIDIsSentForTheDeviceToDrop() async throws {
        let h = try await LinkBench()
        let device = try await h.connect(DeviceIdentity(deviceID: "phone-6"))
        let token = try await device.register(topic: Fixture.bundle)
        let id = "44444444-4444-4444-4444-444444444444"
        var sent: [LinkPush] = []
        for body in [#"{"aps":{"alert":"hi"}}"#, #"{"aps":{"alert":"again"}}"#, #"{"aps":{"alert":"other"}}"#] {
            let headers = body.contains("other") ? [] : [("apns-id", id)]
            async let answer = h.push(to: token, body: body, headers: headers)
            sent += try await device.pushes(1)
            #expect(await answer.status == 200)
        }
        #expect(
            sent.map { String(decoding: $0.payload, as: UTF8.self) }
                == [#"{"aps":{"alert":"hi"}}"#, #"{"aps":{"alert":"again"}}"#, #"{"aps":{"alert":"other"}}"#])
        #expect(sent.prefix(2).map(\.apnsID) == [id, id])
        #expect(try await h.log(id) == [.accepted, .delivered, .acknowledged, .accepted, .delivered, .acknowledged])
    }

    @Test func priorityOneWaitsForOtherTrafficAndGoesWithIt() async throws {
        let h = try await LinkBench(qos: .init(batchWindow: .seconds(60)))
        let device = try await h.connect(DeviceIdentity(deviceID: "phone-7"))
        let token = try await device.register(topic: Fixture.bundle)
        // Held: stored, answered, not sent.
        let low = await h.push(to: token, body: #"{"aps":{"badge":1}}"#, headers: [("apns-priority", "1")])
        #expect(low.status == 200)
        let normal = await h.push(
            to: token, body: #"{"aps":{"badge":2}}"#, headers: [("apns-priority", "5"), ("apns-collapse-id", "n")])
        #expect(normal.status == 200)
        // Both wait on the link; the store keeps only the newest for the topic (APNs's policy), which is
        // what the device would get if it went offline now.
        #expect(try await h.storedCount() == 1)
        #expect(try await device.written().isEmpty)
        // A priority-10 push goes at once and takes them along.
        async let urgent = h.push(to: token, body: #"{"aps":{"alert":"now"}}"#)
        let pushes = try await device.pushes(3)
        let urgentID = await urgent.apnsID
        #expect(await urgent.status == 200)
        #expect(pushes.map(\.apnsID) == [urgentID, normal.apnsID, low.apnsID])
        #expect(try await h.storedCount() == 0)
    }

    @Test func resetAndRemoveVoidTheTokens() async throws {
        let h = try await LinkBench()
        let device = try await h.connect(DeviceIdentity(deviceID: "phone-8"))
        let token = try await device.register(topic: Fixture.bundle)
        let other = try await device.register(topic: "com.example.other")
        #expect(h.reason(of: token) == nil)

        try await device.unregister(topic: "com.example.other")
        #expect(h.reason(of: other) == .unregistered)
        let feedback = try await h.f.store.takeFeedback(bundleID: "com.example.other", environment: .development)
        #expect(feedback.map(\.token) == [other])
        await #expect(throws: GatewayLinkFailure.self) {
            try await device.unregister(topic: "com.example.never")
        }

        let generation = try await device.reset()
        #expect(generation == device.generation + 1)
        #expect(h.reason(of: token) == .unregistered)
        let fresh = try await device.register(topic: Fixture.bundle)
        #expect(fresh != token)
        #expect(h.reason(of: fresh) == nil)
    }

    /// Scoped tokens (a Live Activity's, a push-to-start token): one per scope, apart from the app's,
    /// stable, reaching the device with the scoped token, listed with their scope on the next welcome,
    /// and given up alone (410 for it, the app's token still good, nothing on the feedback list).
    @Test func scopedTokensLiveBesideTheAppsAndGoAlone() async throws {
        let h = try await LinkBench()
        let identity = DeviceIdentity(deviceID: "phone-s")
        let device = try await h.connect(identity)
        let app = try await device.register(topic: Fixture.bundle)
        let activity = TokenScope.activity("6A1B")
        let scoped = try await device.token(topic: Fixture.bundle, scope: activity)
        let start = try await device.token(topic: Fixture.bundle, scope: .pushToStart("DeliveryAttributes"))
        #expect(Set([app, scoped, start]).count == 3)
        #expect(try await device.token(topic: Fixture.bundle, scope: activity) == scoped)
        let liveTopic = Fixture.bundle + ".push-type.liveactivity"
        let body = #"{"aps":{"event":"update","timestamp":1,"content-state":{}}}"#
        async let answer = h.push(
            to: scoped, topic: liveTopic, body: body, headers: [("apns-push-type", "liveactivity")])
        let got = try await device.pushes(1)
        #expect(await answer.status == 200)
        #expect(got.first?.token == scoped && got.first?.pushType == .liveactivity)

        try await device.close()
        let again = try await h.connect(identity)
        #expect(again.registrations.first { $0.scope == activity }?.token == scoped, "\(again.registrations)")
        #expect(again.registrations.first { $0.scope == nil }?.token == app)

        // At most 64 live scoped tokens per app: the next is refused until one is given up.
        for i in 0..<(GatewayDirectory.scopedTokenLimit - 2) {
            _ = try await again.token(topic: Fixture.bundle, scope: .activity("more-\(i)"))
        }
        do {
            _ = try await again.token(topic: Fixture.bundle, scope: .activity("one-too-many"))
            Issue.record("a 65th scoped token was issued")
        } catch let failure as GatewayLinkFailure {
            #expect(failure.code == .refused && failure.message.contains("holds 64 scoped tokens"), "\(failure)")
        }
        try await again.releaseToken(topic: Fixture.bundle, scope: .activity("more-0"))
        _ = try await again.token(topic: Fixture.bundle, scope: .activity("one-too-many"))

        try await again.releaseToken(topic: Fixture.bundle, scope: activity)
        #expect(h.reason(of: scoped) == .unregistered)
        #expect(h.reason(of: app) == nil)
        #expect(try await h.f.store.feedback(bundleID: Fixture.bundle, environment: .development).isEmpty)
        await #expect(throws: GatewayLinkFailure.self) {
            try await again.releaseToken(topic: Fixture.bundle, scope: activity)
        }
    }

    @Test func aDeviceMustProveItHoldsItsKey() async throws {
        let h = try await LinkBench()
        let owner = DeviceIdentity(deviceID: "phone-9")
        try await h.connect(owner).close()
        // Another key claiming the same id is refused.
        await #expect(
            throws: GatewayLinkFailure(
                code: "DeviceKeyMismatch", message: "device phone-9 is registered with another key")
        ) {
            _ = try await h.connect(DeviceIdentity(deviceID: "phone-9"))
        }
        // A signature that does not verify is refused.
        let nonce = Data(repeating: 1, count: 32)
        let wrong = try owner.privateKey.signature(for: Data("something else".utf8)).rawRepresentation
        guard
            case .failure(let refusal) = await h.service.authenticate(
                device: "phone-9", publicKey: nil, signature: wrong, nonce: nonce)
        else { throw TestFailure("a bad signature was accepted") }
        #expect(refusal.code == "BadSignature")
        let right = try owner.privateKey.signature(for: DeviceLink.signedBytes(nonce: nonce)).rawRepresentation
        guard
            case .success = await h.service.authenticate(
                device: "phone-9", publicKey: nil, signature: right, nonce: nonce)
        else { throw TestFailure("the right signature was refused") }
        // A device the gateway does not know must bring its key.
        guard
            case .failure(let unknown) = await h.service.authenticate(
                device: "phone-x", publicKey: nil, signature: right, nonce: nonce)
        else { throw TestFailure("an unknown device without a key was accepted") }
        #expect(unknown.code == "UnknownDevice")
    }

    @Test func aDeviceCreatedByTheAdministratorIsClaimedByTheFirstKey() async throws {
        let h = try await LinkBench()
        // Fixture's device-1 has no key and a registered app.
        let device = try await h.connect(DeviceIdentity(deviceID: "device-1"))
        #expect(device.registrations.map(\.token) == [h.f.token])
        #expect(h.f.directory.registry.device("device-1")?.publicKey.isEmpty == false)
    }

    /// A device with two apps, gone offline, and a push stored for each: `removed` to the one
    /// (Fixture.bundle, `token`) a test goes on to remove, the other to `kept`.
    func awayWithAPushForEachOfTwoApps(_ h: LinkBench, device: String) async throws -> (
        identity: DeviceIdentity, token: DeviceToken, kept: DeviceToken, removed: ProviderResponse
    ) {
        try await h.f.directory.putApp(bundleID: "com.example.kept", teamID: Fixture.team)
        let identity = DeviceIdentity(deviceID: device)
        let first = try await h.connect(identity)
        let token = try await first.register(topic: Fixture.bundle)
        let kept = try await first.register(topic: "com.example.kept")
        try await first.close()
        #expect(!h.router.links.isOnline(device))
        let removed = await h.push(to: token)
        #expect(removed.status == 200)
        #expect(await h.push(to: kept, topic: "com.example.kept").status == 200)
        #expect(try await h.storedCount() == 2)
        return (identity, token, kept, removed)
    }

    @Test func aStoredPushWhoseAppWasRemovedMeanwhileIsDiscardedNotDelivered() async throws {
        let h = try await LinkBench()
        let (identity, _, kept, removed) = try await awayWithAPushForEachOfTwoApps(h, device: "phone-11")
        try await h.f.directory.unregisterApp(
            device: "phone-11", bundleID: Fixture.bundle, environment: .development, now: Date())

        let second = try await h.connect(identity)
        #expect(try await second.pushes(1).map(\.token) == [kept])
        #expect(try await h.storedCount() == 0)
        #expect(try await h.log(removed.apnsID) == [.accepted, .stored, .discarded])
        #expect(try await second.written().isEmpty)
    }

    /// Removed and registered again (the same token) before the device came back: the push sent to
    /// the first installation is void all the same, whichever the gateway sees first on reconnection
    /// (a race the end-to-end test of Apple's states once lost).
    @Test func aStoredPushOfAnAppRemovedAndRegisteredAgainIsDiscardedNotDelivered() async throws {
        let h = try await LinkBench()
        let (identity, token, kept, before) = try await awayWithAPushForEachOfTwoApps(h, device: "phone-13")
        let removedAt = Date()
        try await h.f.directory.unregisterApp(
            device: "phone-13", bundleID: Fixture.bundle, environment: .development, now: removedAt)
        let again = try await h.f.directory.registerApp(
            device: "phone-13", bundleID: Fixture.bundle, environment: .development,
            now: removedAt.addingTimeInterval(1))
        #expect(again.token == token)

        // The backlog is read in one go: the kept app's push arrives with the other one's discard.
        let second = try await h.connect(identity)
        #expect(try await second.pushes(1).map(\.token) == [kept])
        #expect(try await h.storedCount() == 0)
        #expect(try await h.log(before.apnsID) == [.accepted, .stored, .discarded])
        #expect(try await second.written().isEmpty)
        // The token works again: a push sent now goes to the device.
        async let now = h.push(to: token, body: #"{"aps":{"alert":"again"}}"#)
        #expect(try await second.pushes(1).map(\.token) == [token])
        #expect(await now.status == 200)
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
        let h = try await LinkBench()
        let identity = DeviceIdentity(deviceID: "phone-12")
        let device = try await h.connect(identity)
        // What the admin API does for POST /devices/{id}/reset and DELETE /devices/{id}.
        let reset = try await h.f.directory.resetDevice("phone-12", now: Date())
        h.router.links.deviceWasReset("phone-12", generation: reset.generation)
        #expect(try await device.nextReset() == reset.generation)
        try await h.f.directory.deleteDevice("phone-12", now: Date())
        h.router.links.disconnect("phone-12", reason: "an administrator deleted the device")
        #expect(try await device.closed() == "DeviceDeleted: an administrator deleted the device")
        await #expect(throws: GatewayLinkFailure(code: "DeviceDeleted", message: "device phone-12 was deleted")) {
            _ = try await h.connect(identity)
        }
    }

    @Test func aSecondConnectionReplacesTheFirst() async throws {
        let h = try await LinkBench()
        let identity = DeviceIdentity(deviceID: "phone-10")
        let first = try await h.connect(identity)
        let second = try await h.connect(identity)
        #expect(try await first.closed() == "Replaced: the device connected again")
        let token = try await second.register(topic: Fixture.bundle)
        async let answer = h.push(to: token)
        #expect(try await second.pushes(1).count == 1)
        #expect(await answer.status == 200)
    }

    /// A listening socket handed over (systemd's socket activation) gets the link's socket options
    /// when the server takes it, so the connections it accepts have Nagle off and keepalive on, as
    /// those of a socket the server binds itself.
    @Test func aSocketHandedOverGivesItsConnectionsTheLinksOptions() async throws {
        let h = try await LinkBench()
        let socket = try InheritedSocketsTests.socketOnLoopback(listening: true)
        let server = try await DeviceLinkServer.start(
            host: "127.0.0.1", port: 0, sockets: [socket], tls: nil, directory: h.f.directory, links: h.router.links,
            offline: h.router.offline, configuration: h.service.configuration,
            group: MultiThreadedEventLoopGroup.singleton, logger: .silent)
        var noDelay: CInt = 0
        var length = socklen_t(MemoryLayout<CInt>.size)
        #expect(getsockopt(socket, CInt(IPPROTO_TCP), TCP_NODELAY, &noDelay, &length) == 0 && noDelay != 0)
        let url = "ws://127.0.0.1:\(server.localAddress?.port ?? 0)/device/v1"
        let client = try await GatewayLinkClient.connect(url: url, identity: DeviceIdentity(deviceID: "phone-handed"))
        let accepted = try #require(server.channels.all.first)
        #expect(try await accepted.getOption(.tcpOption(.tcp_nodelay)).get() != 0)
        #expect(try await accepted.getOption(.socketOption(.so_keepalive)).get() != 0)
        await client.close()
        await server.shutdown()
    }

    /// The link server on a real loopback port with the device daemon's own client: the WebSocket
    /// upgrade, the hello, a registration and a push with its acknowledgement cross real sockets.
    /// Each step awaits the client (its requests' answers, its event stream), never a poll.
    @Test func theServerUpgradesARealClientAndAPushCrossesIt() async throws {
        let h = try await LinkBench()
        let server = try await DeviceLinkServer.start(
            host: "127.0.0.1", port: 0, tls: nil, directory: h.f.directory, links: h.router.links,
            offline: h.router.offline, configuration: h.service.configuration,
            group: MultiThreadedEventLoopGroup.singleton, logger: .silent)
        let url = "ws://127.0.0.1:\(server.localAddress?.port ?? 0)/device/v1"
        let client = try await GatewayLinkClient.connect(url: url, identity: DeviceIdentity(deviceID: "phone-real"))
        var events = client.events.makeAsyncIterator()
        #expect(client.deviceID == "phone-real")
        // The accepted socket has Nagle off and TCP keepalive on, inherited from the listening socket.
        let accepted = try #require(server.channels.all.first)
        #expect(try await accepted.getOption(.tcpOption(.tcp_nodelay)).get() != 0)
        #expect(try await accepted.getOption(.socketOption(.so_keepalive)).get() != 0)
        let token = try await client.register(topic: Fixture.bundle)
        // The client acknowledges what it reads: the answer is the acknowledgement's.
        let response = await h.push(to: token, headers: [("apns-id", "66666666-6666-6666-6666-666666666666")])
        #expect(response.status == 200)
        guard case .pushes(let pushes) = await events.next() else { throw TestFailure("no push event") }
        #expect(pushes.map(\.apnsID) == [response.apnsID] && pushes.first?.token == token)
        #expect(try await h.log(response.apnsID) == [.accepted, .delivered, .acknowledged])
        await client.close()
        #expect(await events.next() == .closed(reason: nil))
        await server.shutdown()
    }
}
