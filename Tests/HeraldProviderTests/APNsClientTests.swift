import Crypto
import Foundation
import HeraldCore
import HeraldTesting
import Logging
import Synchronization
import Testing
import X509

@testable import HeraldProvider

/// A real `Gateway` in this process (HeraldTesting's ``TestGateway``: loopback ports the system
/// picks, a team, a key), with an app and an offline device whose token the tests send to.
final class RunningGateway: Sendable {
    static let team = TestGateway.teamID
    static let keyID = TestGateway.keyID
    static let bundle = "com.example.provider"

    let testbed: TestGateway
    let token: String
    var gateway: Gateway { testbed.gateway }
    var info: [String: String] { testbed.info }
    var signingKey: APNsSigningKey { testbed.signingKey }

    static func start() async throws -> RunningGateway {
        let testbed = try await TestGateway.start(apps: [bundle])
        return RunningGateway(testbed: testbed, token: try await testbed.token(for: bundle, device: "phone"))
    }

    private init(testbed: TestGateway, token: String) {
        self.testbed = testbed
        self.token = token
    }

    var caPEM: String { get throws { try testbed.caCertificatePEM } }

    func client(
        server: APNsServer? = nil, authentication: APNsAuthentication? = nil, retry: APNsRetryPolicy = .init(),
        // Generous: these tests assert answers, not times, and the whole suite (browsers, PostgreSQL,
        // bulk sends) shares two cores with them. A test of the deadline passes its own.
        timeout: Duration = .seconds(60), now: @escaping @Sendable () -> Date = { Date() },
        sleep: @escaping @Sendable (Duration) async throws -> Void = { _ in }
    ) throws -> APNsClient {
        try APNsClient(
            configuration: .init(
                server: server ?? APNsServer(url: info["providerURL"]!),
                authentication: authentication ?? .token(signingKey), trustedCAPEM: try caPEM, timeout: timeout,
                retry: retry),
            now: now, sleep: sleep)
    }

    func stop() async { await testbed.stop() }
}

/// Runs `body` with a client and a gateway, and shuts both down however `body` ends.
func with(
    _ g: RunningGateway, _ client: APNsClient, _ body: (APNsClient) async throws -> Void
) async throws {
    do {
        try await body(client)
    } catch {
        try? await client.shutdown()
        await g.stop()
        throw error
    }
    try await client.shutdown()
    await g.stop()
}

func alert(_ text: String = "hello", apnsID: String? = nil) -> APNsNotification {
    APNsNotification(
        payload: Data(#"{"aps":{"alert":"\#(text)"}}"#.utf8), topic: RunningGateway.bundle, pushType: .alert,
        apnsID: apnsID)
}

@Suite(.serialized) struct APNsClientTests {
    @Test func sendsOverTLSWithATokenAndTheGatewayKeepsThePush() async throws {
        let g = try await RunningGateway.start()
        try await with(g, try g.client()) { client async throws in
            let id = "6e1f2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b"
            let delivery = try await client.send(alert("stored", apnsID: id), to: g.token)
            #expect(delivery.apnsID == id)
            #expect(delivery.uniqueID != nil)  // development environment
            #expect(delivery.attempts == 1)
            // The device is offline: the 200 means the push is in the store, bytes unchanged.
            let pending = try await g.gateway.router.offline.store.pending(device: "phone", now: Date())
            #expect(pending.map(\.apnsID) == [id])
            #expect(pending.first?.payload == alert("stored").payload)
        }
    }

    @Test func everyReasonIsATypedError() async throws {
        let g = try await RunningGateway.start()
        try await with(g, try g.client(retry: .never)) { client async throws in
            for reason in APNsReason.allCases {
                // An expired provider token is signed again and retried once, so it takes two.
                g.gateway.faults.add(FaultRule(reason: reason, remaining: reason == .expiredProviderToken ? 2 : 1))
                do {
                    _ = try await client.send(alert(), to: g.token)
                    Issue.record("\(reason) was accepted")
                } catch let error as APNsError {
                    #expect(error.reason == .known(reason))
                    #expect(error.status == reason.status)
                    #expect(error.apnsID != nil)
                    #expect((error.timestamp != nil) == (reason.status == 410), "\(reason)")
                }
            }
            // The honest ones: a token the gateway never issued, and a topic that is not an app.
            do {
                _ = try await client.send(alert(), to: String(repeating: "ab", count: 32))
                Issue.record("an unknown token was accepted")
            } catch let error as APNsError {
                #expect(error.reason == .known(.badDeviceToken))
                #expect(error.tokenIsInvalid)
            }
            do {
                var n = alert()
                n.topic = "com.example.nobody"
                _ = try await client.send(n, to: g.token)
                Issue.record("another topic was accepted")
            } catch let error as APNsError {
                #expect(error.reason == .known(.topicDisallowed))
            }
            await #expect(throws: APNsClientError.invalidDeviceToken("not/hex")) {
                _ = try await client.send(alert(), to: "not/hex")
            }
        }
    }

    @Test func retriesOnlyWhatMayBeRetried() async throws {
        let g = try await RunningGateway.start()
        let waits = Mutex<[Duration]>([])
        let client = try g.client(
            retry: APNsRetryPolicy(maximumAttempts: 3, initialBackoff: .milliseconds(400)),
            sleep: { d in waits.withLock { $0.append(d) } })
        try await with(g, client) { client async throws in

            // Two 503s, then the push goes through on the third attempt with the same apns-id.
            g.gateway.faults.add(FaultRule(reason: .serviceUnavailable, remaining: 2))
            let id = RandomUUID.lowercaseString()
            let delivery = try await client.send(alert(apnsID: id), to: g.token)
            #expect(delivery.attempts == 3)
            #expect(delivery.apnsID == id)
            let backoffs = waits.withLock { $0 }
            #expect(backoffs.count == 2)
            #expect(backoffs[0] >= .milliseconds(200) && backoffs[0] <= .milliseconds(400))
            #expect(backoffs[1] >= .milliseconds(400) && backoffs[1] <= .milliseconds(800))

            // 429 TooManyRequests: later, once.
            waits.withLock { $0 = [] }
            g.gateway.faults.add(FaultRule(reason: .tooManyRequests, remaining: 1))
            #expect(try await client.send(alert(), to: g.token).attempts == 2)

            // Three attempts, then the 500 is the answer.
            waits.withLock { $0 = [] }
            g.gateway.faults.add(FaultRule(reason: .internalServerError, remaining: 5))
            await #expect(throws: APNsError.self) { _ = try await client.send(alert(), to: g.token) }
            #expect(waits.withLock { $0.count } == 2)
            g.gateway.faults.removeAll()

            // Never retried: the answer is final.
            for reason: APNsReason in [.badDeviceToken, .unregistered, .payloadTooLarge, .tooManyProviderTokenUpdates] {
                waits.withLock { $0 = [] }
                // An expired provider token is signed again and retried once, so it takes two.
                g.gateway.faults.add(FaultRule(reason: reason, remaining: reason == .expiredProviderToken ? 2 : 1))
                await #expect(throws: APNsError.self) { _ = try await client.send(alert(), to: g.token) }
                #expect(waits.withLock { $0.isEmpty }, "\(reason) was retried")
            }

        }
    }

    /// A token signed before the clock jumped (a laptop that slept) is refused as expired; the
    /// client signs a new one and sends again at once, on the same connection.
    @Test func anExpiredTokenIsSignedAgainOnce() async throws {
        let g = try await RunningGateway.start()
        let calls = Mutex(0)
        let clock: @Sendable () -> Date = {
            calls.withLock { n in
                n += 1
                return n == 1 ? Date().addingTimeInterval(-2 * 3600) : Date()
            }
        }
        let waits = Mutex(0)
        try await with(g, try g.client(now: clock, sleep: { _ in waits.withLock { $0 += 1 } })) {
            client async throws in
            #expect(try await client.send(alert(), to: g.token).attempts == 2)
            #expect(waits.withLock { $0 } == 0)
            #expect(try await client.send(alert(), to: g.token).attempts == 1)
        }
    }

    /// A bulk send: 300 pushes, 50 in flight over one connection. Two are answered 503 first and go
    /// through on their retry; a malformed token and one the gateway does not know are counted, not
    /// thrown; `progress` sees every answer, one at a time.
    @Test func aBulkSendCountsEveryAnswerAndRetriesWhatMayBeRetried() async throws {
        let g = try await RunningGateway.start()
        let waits = Mutex(0)
        let client = try g.client(
            retry: APNsRetryPolicy(maximumAttempts: 3, initialBackoff: .milliseconds(10)),
            sleep: { _ in waits.withLock { $0 += 1 } })
        try await with(g, client) { client async throws in
            g.gateway.faults.add(FaultRule(reason: .serviceUnavailable, remaining: 2))
            let unknown = String(repeating: "ab", count: 32)
            let tokens = Array(repeating: g.token, count: 298) + ["not-hex", unknown]
            let seen = Mutex<[Int]>([])
            let tally = await client.send(alert("bulk"), to: tokens, concurrency: 50) { tally in
                seen.withLock { $0.append(tally.done) }
            }
            #expect(tally.done == 300)
            #expect(tally.answers["200"] == 298, "\(tally.answers)")
            #expect(tally.answers.keys.contains { $0.hasPrefix("no answer") && $0.contains("not-hex") })
            #expect(tally.answers.keys.contains { $0.hasPrefix("400") && $0.contains("BadDeviceToken") })
            #expect(seen.withLock { $0 } == Array(1...300))
            #expect(waits.withLock { $0 } == 2, "each 503 waited once before its retry")
        }
    }

    /// 2,600 refusals with a body each (`{"reason":"BadDeviceToken"}`, about 70 KB in all) on one
    /// connection: more than the connection's first flow-control window, which the client gives back
    /// as it reads, so every answer arrives.
    @Test func refusalsBeyondTheFirstFlowControlWindowAllArrive() async throws {
        let g = try await RunningGateway.start()
        try await with(g, try g.client()) { client async throws in
            let unknown = String(repeating: "cd", count: 32)
            let tally = await client.send(alert("many"), to: Array(repeating: unknown, count: 2_600), concurrency: 100)
            #expect(tally.done == 2_600)
            #expect(tally.answers.count == 1 && tally.answers.first?.value == 2_600, "\(tally.answers)")
            #expect(tally.answers.keys.first?.contains("BadDeviceToken") == true, "\(tally.answers)")
        }
    }

    @Test func aDeadlineEndsTheWait() async throws {
        let g = try await RunningGateway.start()
        try await with(g, try g.client(timeout: .milliseconds(300))) { client async throws in
            g.gateway.faults.add(FaultRule(delayMilliseconds: 5000, remaining: 1))
            await #expect(throws: APNsClientError.deadlineExceeded(attempts: 1)) {
                _ = try await client.send(alert(), to: g.token)
            }
        }
    }

    @Test func certificateAuthenticationNeedsNoToken() async throws {
        let g = try await RunningGateway.start()
        let key = P256.Signing.PrivateKey()
        let certificate = try g.gateway.ca.issueAppCertificate(
            bundleID: RunningGateway.bundle, environments: [.development], key: key)
        let client = try g.client(
            authentication: .certificate(
                chainPEM: try certificate.serializeAsPEM().pemString, privateKeyPEM: key.pemRepresentation))
        try await with(g, client) { client async throws in
            #expect(try await client.send(alert(), to: g.token).attempts == 1)
        }
    }

    @Test func manyConcurrentSendsAndTheDevelopmentListener() async throws {
        let g = try await RunningGateway.start()
        let client = try g.client()
        let ids = try await withThrowingTaskGroup(of: String.self) { group in
            for i in 0..<100 {
                group.addTask { try await client.send(alert("n\(i)"), to: g.token).apnsID }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(ids.count == 100)
        try await client.shutdown()

        // Cleartext HTTP/1.1 to the development listener, as a test setup without TLS would.
        let development = try g.client(server: APNsServer(url: g.info["developmentURL"]!))
        #expect(try await development.send(alert(), to: g.token).attempts == 1)
        try await development.shutdown()
        await g.stop()
    }
}

@Suite struct APNsPiecesTests {
    @Test func concurrentFirstRequestsShareOneToken() async throws {
        // ES256 signatures differ on every signing: two first requests signing at once would send two
        // tokens on one connection, which APNs answers with TooManyProviderTokenUpdates.
        let cache = APNsTokenCache(key: APNsSigningKey(keyID: "KEY1234567", teamID: "TEAM123456", privateKey: .init()))
        let tokens = await withTaskGroup(of: String.self) { group in
            for _ in 0..<64 { group.addTask { (try? cache.token()) ?? "" } }
            return await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(tokens.count == 1 && tokens.first?.isEmpty == false)
    }

    /// The same on real threads, a hundred times: a caller that read the time before another signed,
    /// and took the lock after, used to see a token from its future and sign a second one (a bulk
    /// send got one 429 `TooManyProviderTokenUpdates` in 10,000).
    @Test func callersRacingOnThreadsShareOneToken() throws {
        let key = APNsSigningKey(keyID: "KEY1234567", teamID: "TEAM123456", privateKey: .init())
        for _ in 0..<100 {
            let cache = APNsTokenCache(key: key)
            let tokens = Mutex(Set<String>())
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                let token = (try? cache.token()) ?? ""
                tokens.withLock { _ = $0.insert(token) }
            }
            try #require(tokens.withLock { $0.count } == 1)
        }
    }

    @Test func applePresets() {
        #expect(APNsServer.production.url == "https://api.push.apple.com:443")
        #expect(APNsServer.sandbox.url == "https://api.sandbox.push.apple.com:443")
        #expect(APNsServer(url: "https://localhost:2197/").url == "https://localhost:2197")
    }

    @Test func errorBodiesAndUnknownReasons() {
        let gone = APNsError.parse(
            status: 410, body: Data(#"{"reason":"Unregistered","timestamp":1800000000123}"#.utf8), apnsID: "x")
        #expect(gone.reason == .known(.unregistered))
        #expect(gone.timestamp == Date(timeIntervalSince1970: 1_800_000_000.123))
        #expect(gone.tokenIsInvalid)
        #expect(!gone.isRetryable)
        let novel = APNsError.parse(status: 400, body: Data(#"{"reason":"SomethingNew"}"#.utf8), apnsID: nil)
        #expect(novel.reason == .unknown("SomethingNew"))
        #expect(APNsError.parse(status: 502, body: Data("<html>".utf8), apnsID: nil).reason == .unknown(""))
        #expect(APNsError.parse(status: 503, body: Data(), apnsID: nil).isRetryable)
        // A timestamp no server means is no timestamp: one of 1e19 ms made the error's description
        // (what `herald push` prints) overflow converting it back.
        for strange in ["1e19", "-5", "1e300"] {
            let odd = APNsError.parse(
                status: 410, body: Data(#"{"reason":"Unregistered","timestamp":\#(strange)}"#.utf8), apnsID: nil)
            #expect(odd.timestamp == nil, "\(strange)")
            #expect(odd.description == "410 Unregistered")
        }
    }

    /// Tokens are renewed once `refreshAge` old, never before 20 minutes nor after 59, in
    /// virtual time.
    @Test func tokensFollowTheRefreshRule() throws {
        let clock = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let key = APNsSigningKey(keyID: "KEY1234567", teamID: "TEAM123456", privateKey: P256.Signing.PrivateKey())
        let cache = APNsTokenCache(key: key, refreshAge: 40 * 60, now: { clock.withLock { $0 } })
        func advance(minutes: Double) { clock.withLock { $0 = $0.addingTimeInterval(minutes * 60) } }
        let first = try cache.token()
        advance(minutes: 39)
        #expect(try cache.token() == first)
        advance(minutes: 1)
        let second = try cache.token()
        #expect(second != first)
        // The token names the key and team and when it was issued.
        let claims = try #require(Base64URL.decode(second.split(separator: ".")[1]))
        #expect(String(decoding: claims, as: UTF8.self) == #"{"iss":"TEAM123456","iat":1800002400}"#)
        cache.discard(first)  // an old token: nothing happens
        #expect(try cache.token() == second)
        cache.discard(second)
        #expect(try cache.token() != second)

        #expect(APNsTokenCache(key: key, refreshAge: 60).refreshAge == 20 * 60)
        #expect(APNsTokenCache(key: key, refreshAge: 7200).refreshAge == 59 * 60)
    }
}

/// The channel management API through ``APNsClient`` against a gateway in this process.
@Suite(.serialized) struct APNsChannelTests {
    @Test func channelsAreCreatedReadListedAndDeletedWithTypedErrors() async throws {
        let g = try await RunningGateway.start()
        let server = APNsServer(url: try #require(g.info["channelsURL"]))
        try await with(g, try g.client()) { client async throws in
            let kept = try await client.createChannel(
                bundleID: RunningGateway.bundle, storagePolicy: .mostRecentMessage, on: server)
            let live = try await client.createChannel(
                bundleID: RunningGateway.bundle, storagePolicy: .noStorage, on: server)
            #expect(kept.requestID.count == 36 && kept.channelID != live.channelID)
            #expect(
                try await client.channelStoragePolicy(
                    bundleID: RunningGateway.bundle, channelID: kept.channelID, on: server)
                    == .mostRecentMessage)
            #expect(
                try await client.channelStoragePolicy(
                    bundleID: RunningGateway.bundle, channelID: live.channelID, on: server)
                    == .noStorage)
            #expect(
                try await client.channelIDs(bundleID: RunningGateway.bundle, on: server)
                    == [kept.channelID, live.channelID])
            try await client.deleteChannel(bundleID: RunningGateway.bundle, channelID: kept.channelID, on: server)
            #expect(try await client.channelIDs(bundleID: RunningGateway.bundle, on: server) == [live.channelID])
            // The reasons the channel API adds come back typed; the shared ones as before.
            for (channel, reason) in [(kept.channelID, BroadcastReason.channelNotRegistered), ("%%%", .badChannelId)] {
                do {
                    try await client.deleteChannel(bundleID: RunningGateway.bundle, channelID: channel, on: server)
                    Issue.record("deleted \(channel)")
                } catch let error as APNsError {
                    #expect(error.reason == .broadcast(reason) && error.status == reason.status, "\(error)")
                    #expect(error.apnsID?.count == 36, "the apns-request-id")
                }
            }
            do {
                _ = try await client.channelIDs(bundleID: "com.example.nobody", on: server)
                Issue.record("listed another team's app")
            } catch let error as APNsError {
                #expect(error.reason == .known(.topicDisallowed))
            }
        }
    }

    /// Broadcasts go to the provider API (the client's server by default) and come back with the
    /// unique id; the broadcast API's refusals are typed like the channel API's.
    @Test func broadcastsAreSentToTheProviderAPIWithTypedErrors() async throws {
        let g = try await RunningGateway.start()
        let channels = APNsServer(url: try #require(g.info["channelsURL"]))
        try await with(g, try g.client()) { client async throws in
            let kept = try await client.createChannel(
                bundleID: RunningGateway.bundle, storagePolicy: .mostRecentMessage, on: channels)
            let live = try await client.createChannel(
                bundleID: RunningGateway.bundle, storagePolicy: .noStorage, on: channels)
            let update = APNsLiveActivity(
                event: .update, timestamp: Date(timeIntervalSince1970: 1_700_000_000),
                contentState: .object(["eta": .int(5)]))
            let sent = try await client.broadcast(update, bundleID: RunningGateway.bundle, channelID: kept.channelID)
            #expect(sent.requestID.count == 36 && sent.uniqueID.count == 36 && sent.uniqueID != sent.requestID)
            let ended = try await client.broadcast(
                APNsLiveActivity(event: .end), bundleID: RunningGateway.bundle, channelID: live.channelID,
                priority: .normal, expiration: 0)
            #expect(ended.uniqueID != sent.uniqueID)
            let refusals: [(APNsLiveActivity, String, Int64?, APNsError.Reason)] = [
                (update, live.channelID, 100, .known(.badExpirationDate)),
                (
                    APNsLiveActivity(event: .start, attributesType: "Trip"), kept.channelID, nil,
                    .broadcast(.badRequestPayload)
                ),
                (update, Data(repeating: 1, count: 16).base64EncodedString(), nil, .broadcast(.channelNotRegistered)),
            ]
            for (activity, channel, expiration, reason) in refusals {
                do {
                    _ = try await client.broadcast(
                        activity, bundleID: RunningGateway.bundle, channelID: channel, expiration: expiration)
                    Issue.record("broadcast \(activity.event) on \(channel) was taken")
                } catch let error as APNsError {
                    #expect(error.reason == reason, "\(error)")
                    #expect(error.apnsID?.count == 36, "the apns-request-id")
                }
            }
        }
    }
}

/// A Live Activity's payload as ActivityKit reads it.
@Suite struct APNsLiveActivityTests {
    @Test func everyFieldLandsInApsWithDatesAsSeconds() throws {
        let start = APNsLiveActivity(
            event: .start, timestamp: Date(timeIntervalSince1970: 1_700_000_000.9),
            contentState: .object(["stop": .int(3)]), staleDate: Date(timeIntervalSince1970: 1_700_000_600),
            dismissalDate: Date(timeIntervalSince1970: 1_700_003_600), relevanceScore: 75,
            alert: .init(title: "Delivery", body: "On its way", sound: "default"), attributesType: "DeliveryAttributes",
            attributes: .object(["order": .string("A-17")]), inputPushToken: true, inputPushChannel: "AQ==")
        #expect(
            String(decoding: start.payload(), as: UTF8.self)
                == #"{"aps":{"alert":{"body":"On its way","title":"Delivery"},"attributes":{"order":"A-17"},"#
                + #""attributes-type":"DeliveryAttributes","content-state":{"stop":3},"dismissal-date":1700003600,"#
                + #""event":"start","input-push-channel":"AQ==","input-push-token":1,"relevance-score":75,"#
                + #""sound":"default","stale-date":1700000600,"timestamp":1700000000}}"#)
        let end = APNsLiveActivity(event: .end, timestamp: Date(timeIntervalSince1970: 5), relevanceScore: 0.5)
        #expect(
            String(decoding: end.payload(), as: UTF8.self)
                == #"{"aps":{"content-state":{},"event":"end","relevance-score":0.5,"timestamp":5}}"#)
        let push = APNsNotification.liveActivity(end, bundleID: "com.example.trip", priority: .normal)
        #expect(push.topic == "com.example.trip.push-type.liveactivity" && push.pushType == .liveactivity)
        #expect(push.priority == .normal && push.payload == end.payload())
    }
}
