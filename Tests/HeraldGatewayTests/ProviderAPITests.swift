import Crypto
import Foundation
import HeraldCore
import NIOCore
import Testing

@testable import HeraldGateway

@Suite struct ProviderAPITests {
    @Test func acceptsAValidPushAndEchoesApnsID() async throws {
        let f = try await Fixture()
        let id = "0c9e8fa0-5fd4-4b6d-9d6f-2a6f0d2c1b11"
        var c = ProviderConnectionState(defaultEnvironment: .development)
        guard
            case .accept(let push, nil) = f.api.handle(
                f.request(headers: [("apns-id", id)]), connection: &c, now: f.now)
        else { Issue.record("not accepted"); return }
        #expect(push.apnsID == id)
        #expect(push.uniqueID != nil)  // development environment
        #expect(push.pushType == .alert)
        #expect(push.priority == .immediate)
        #expect(push.registration.deviceID == "device-1")
        #expect(String(buffer: push.payload) == #"{"aps":{"alert":"hi"}}"#)
        // Production answers carry no apns-unique-id; the token is from development, so BadDeviceToken.
        #expect(f.reason(f.request(authority: "api.push.apple.com")) == .badDeviceToken)
    }

    /// A refusal is a line in the delivery log, kept for its whole retention: the topic it names is
    /// cut to the longest a topic can be, however much the request sent (a refusal before
    /// authentication costs its sender nothing but the request).
    @Test func aRefusalRecordsNoMoreOfTheTopicThanATopicCanBe() async throws {
        let f = try await Fixture()
        var c = ProviderConnectionState(defaultEnvironment: .development)
        let topic = String(repeating: "t", count: 12_000)
        guard
            case .respond(let response, _) = f.api.handle(
                f.request(topic: topic, jwt: "not-a-token"), connection: &c, now: f.now)
        else { Issue.record("not refused"); return }
        #expect(response.status == 403)
        #expect(response.subject?.topic == String(repeating: "t", count: 255) + "… (12000 bytes in all)")
        let detail = try #require(response.subject.map { RejectedDetail(response: response, refused: $0).text })
        #expect(detail.utf8.count < 1_000, "\(detail)")
        // A topic as sent is recorded as it is.
        guard case .respond(let plain, _) = f.api.handle(f.request(jwt: "not-a-token"), connection: &c, now: f.now)
        else { Issue.record("not refused"); return }
        #expect(plain.subject?.topic == Fixture.bundle)
    }

    @Test func generatesApnsIDWhenAbsent() async throws {
        let f = try await Fixture()
        var c = ProviderConnectionState(defaultEnvironment: .development)
        guard case .accept(let push, _) = f.api.handle(f.request(), connection: &c, now: f.now) else {
            Issue.record("not accepted")
            return
        }
        #expect(ProviderAPI.isCanonicalUUID(push.apnsID))
        #expect(push.apnsID == push.apnsID.lowercased())
    }

    @Test func headerAndPathReasons() async throws {
        let f = try await Fixture()
        #expect(f.reason(f.request(headers: [("apns-id", "not-a-uuid")])) == .badMessageId)
        #expect(f.reason(f.request(headers: [("apns-topic", "again")])) == .duplicateHeaders)
        #expect(f.reason(f.request(method: "GET")) == .methodNotAllowed)
        #expect(f.reason(f.request(path: "/3/device/")) == .missingDeviceToken)
        #expect(f.reason(f.request(path: "/3/device")) == .missingDeviceToken)
        #expect(f.reason(f.request(path: "/4/device/abcd")) == .badPath)
        // The token ends at a query; a `/` after the prefix is a bad path, unless it is in the query.
        #expect(f.reason(f.request(path: "/3/device/\(f.token.hex)?priority=10")) == nil)
        #expect(f.reason(f.request(path: "/3/device/\(f.token.hex)?next=/a/b")) == nil)
        #expect(f.reason(f.request(path: "/3/device/\(f.token.hex)/")) == .badPath)
        #expect(f.reason(f.request(path: "/3/device/ab/\(f.token.hex)")) == .badPath)
        #expect(f.reason(f.request(path: "/3/device/?x=/")) == .missingDeviceToken)
        #expect(f.reason(f.request(token: "xyz")) == .badDeviceToken)
        #expect(f.reason(f.request(token: "abc")) == .badDeviceToken)  // odd length
        #expect(f.reason(f.request(token: String(repeating: "ab", count: 32))) == .badDeviceToken)  // unknown
        #expect(f.reason(f.request(topic: nil)) == .missingTopic)
        #expect(
            f.reason(f.request(headers: [("apns-collapse-id", String(repeating: "x", count: 65))])) == .badCollapseId)
        #expect(f.reason(f.request(headers: [("apns-collapse-id", String(repeating: "x", count: 64))])) == nil)
        #expect(f.reason(f.request(headers: [("apns-priority", "7")])) == .badPriority)
        #expect(f.reason(f.request(headers: [("apns-push-type", "carrier-pigeon")])) == .invalidPushType)
        #expect(f.reason(f.request(headers: [("apns-expiration", "soon")])) == .badExpirationDate)
        #expect(f.reason(f.request(headers: [("apns-expiration", "-1")])) == .badExpirationDate)
        #expect(f.reason(f.request(headers: [("apns-expiration", "0")])) == nil)
        // Uppercase token hex is the same token.
        #expect(f.reason(f.request(token: f.token.hex.uppercased())) == nil)
        // Header names in any case (HTTP/1.1), values with spaces or tabs around them (RFC 9110 OWS).
        #expect(f.reason(f.request(headers: [("APNS-Topic", "again")])) == .duplicateHeaders)
        #expect(f.reason(f.request(headers: [("Apns-Priority", "7")])) == .badPriority)
        #expect(f.reason(f.request(headers: [("apns_priority", "7")])) == nil)  // not the header
        #expect(f.reason(f.request(headers: [("apns-priority", " \t5 ")])) == nil)
        #expect(f.reason(f.request(headers: [("apns-push-type", " ALERT\t")])) == nil)
        #expect(f.reason(f.request(headers: [("apns-expiration", "\t0 ")])) == nil)
        #expect(f.reason(f.request(headers: [("apns-priority", "1 0")])) == .badPriority)
    }

    /// Header names and the `bearer ` prefix compare ignoring ASCII case only, the same whether
    /// the text is contiguous UTF-8 (the fast path) or any other collection of bytes.
    @Test func asciiCaseComparisons() {
        let cases: [(String, StaticString, Bool)] = [
            ("bearer abc", "bearer ", true), ("Bearer abc", "bearer ", true), ("BEARER ", "bearer ", true),
            ("bearex abc", "bearer ", false), ("bear", "bearer ", false), ("", "bearer ", false),
            ("APNS-ID", "apns-id", true), ("apns_id", "apns-id", false), ("apns\u{0D}id", "apns-id", false),
            ("Apns-Topic", "apns-topic", true), ("apns-topiC", "apns-topic", true),
            // Only letters fold: "{" is "[" + 0x20, "@" is "`" - 0x20.
            ("[", "{", false), ("@", "`", false), ("\u{C9}", "\u{E9}", false),
        ]
        for (text, prefix, expected) in cases {
            #expect(ASCIICase.hasPrefix(text.utf8, prefix) == expected, "\(text) / \(prefix)")
            #expect(ASCIICase.hasPrefix(text.utf8.lazy.map { $0 }, prefix) == expected, "\(text) / \(prefix)")
            #expect(ASCIICase.hasPrefix(Substring(text).utf8, prefix) == expected, "\(text) / \(prefix)")
        }
        #expect(ProviderRequest.is("Authorization", "authorization"))
        #expect(!ProviderRequest.is("Authorizations", "authorization"))
    }

    @Test func generatedIdentifiersAreTimeOrdered() async throws {
        let f = try await Fixture()
        var c = ProviderConnectionState(defaultEnvironment: .development)
        guard case .accept(let push, _) = f.api.handle(f.request(), connection: &c, now: f.now),
            let uniqueID = push.uniqueID
        else {
            Issue.record("not accepted with a unique id")
            return
        }
        for id in [push.apnsID, uniqueID] {
            let bytes = try #require(UUID(uuidString: id)?.uuid)
            #expect(bytes.6 >> 4 == 7)
            let milliseconds = [bytes.0, bytes.1, bytes.2, bytes.3, bytes.4, bytes.5].reduce(UInt64(0)) {
                $0 << 8 | UInt64($1)
            }
            #expect(milliseconds == UInt64(f.now.timeIntervalSince1970 * 1000))
        }
    }

    @Test func bodyReasons() async throws {
        let f = try await Fixture()
        #expect(f.reason(f.request(body: "")) == .payloadEmpty)
        #expect(f.reason(f.request(body: "not json")) == .payloadEmpty)
        #expect(f.reason(f.request(body: "[1]")) == .payloadEmpty)
        let big = #"{"aps":{"alert":"\#(String(repeating: "a", count: 4100))"}}"#
        #expect(f.reason(f.request(body: big)) == .payloadTooLarge)
        // 5120 for voip, to the app's .voip topic.
        let voip = #"{"aps":{},"x":"\#(String(repeating: "a", count: 4500))"}"#
        #expect(
            f.reason(f.request(topic: Fixture.bundle + ".voip", body: voip, headers: [("apns-push-type", "voip")]))
                == nil)
        // Background: inferred from the payload, priority 10 refused, 5 fine.
        let background = #"{"aps":{"content-available":1}}"#
        #expect(f.reason(f.request(body: background, headers: [("apns-priority", "10")])) == .badPriority)
        var c = ProviderConnectionState(defaultEnvironment: .development)
        guard case .accept(let push, _) = f.api.handle(f.request(body: background), connection: &c, now: f.now) else {
            Issue.record("background not accepted")
            return
        }
        #expect(push.pushType == .background)
        #expect(push.priority == .normal)
        #expect(push.contentAvailable)
    }

    @Test func topicReasons() async throws {
        let f = try await Fixture()
        #expect(f.reason(f.request(topic: "com.example.demo", headers: [("apns-push-type", "voip")])) == .badTopic)
        #expect(f.reason(f.request(topic: "has space")) == .badTopic)
        #expect(f.reason(f.request(topic: "com.other.app")) == .topicDisallowed)
        // Another team's app.
        try await f.directory.putTeam(id: "OTHER12345")
        try await f.directory.putApp(bundleID: "com.other.app", teamID: "OTHER12345")
        #expect(f.reason(f.request(topic: "com.other.app")) == .topicDisallowed)
        // Our own second app, but the token belongs to the first.
        try await f.directory.putApp(bundleID: "com.example.second", teamID: Fixture.team)
        #expect(f.reason(f.request(topic: "com.example.second")) == .deviceTokenNotForTopic)
        // A key scoped to other topics.
        let scoped = P256.Signing.PrivateKey()
        try await f.directory.putKey(
            id: "SCOPED1234", teamID: Fixture.team, publicKey: scoped.publicKey, topics: ["com.example.second"])
        #expect(f.reason(f.request(jwt: f.jwt(keyID: "SCOPED1234", key: scoped))) == .topicDisallowed)
    }

    @Test func tokenLifecycleReasons() async throws {
        var f = try await Fixture()
        let removedAt = f.now.addingTimeInterval(60)
        try await f.directory.unregisterApp(
            device: "device-1", bundleID: Fixture.bundle, environment: .development, now: removedAt)
        f.now = removedAt.addingTimeInterval(5)
        var c = ProviderConnectionState(defaultEnvironment: .development)
        guard case .respond(let response, _) = f.api.handle(f.request(), connection: &c, now: f.now) else {
            Issue.record("accepted a removed app's token")
            return
        }
        #expect(response.status == 410)
        #expect(response.reason == .unregistered)
        #expect(response.timestamp == Int64(removedAt.timeIntervalSince1970 * 1000))
        #expect(
            response.body == #"{"reason":"Unregistered","timestamp":\#(Int64(removedAt.timeIntervalSince1970 * 1000))}"#
        )
        // Re-registering gives the same token back, valid again, and takes it off the feedback list.
        let again = try await f.directory.registerApp(
            device: "device-1", bundleID: Fixture.bundle, environment: .development, now: f.now)
        #expect(again.token == f.token)
        #expect(f.reason(f.request()) == nil)
        #expect(try await f.store.takeFeedback(bundleID: Fixture.bundle, environment: .development).isEmpty)

        // Reset: old token 410 Unregistered, the new one differs.
        try await f.directory.resetDevice("device-1", now: f.now)
        #expect(f.reason(f.request()) == .unregistered)
        let fresh = try await f.directory.registerApp(
            device: "device-1", bundleID: Fixture.bundle, environment: .development, now: f.now)
        #expect(fresh.token != f.token)
        #expect(f.reason(f.request(token: fresh.token.hex)) == nil)

        // Deleted device: ExpiredToken.
        try await f.directory.deleteDevice("device-1", now: f.now)
        #expect(f.reason(f.request(token: fresh.token.hex)) == .expiredToken)
    }

    @Test func environmentsHaveSeparateTokenSpaces() async throws {
        let f = try await Fixture()
        let production = try await f.directory.registerApp(
            device: "device-1", bundleID: Fixture.bundle, environment: .production, now: f.now)
        #expect(production.token != f.token)
        #expect(f.reason(f.request(token: production.token.hex)) == .badDeviceToken)
        #expect(f.reason(f.request(token: production.token.hex, authority: "api.push.apple.com")) == nil)
        #expect(f.reason(f.request(token: production.token.hex, authority: "production.herald.test:2197")) == nil)
        #expect(f.reason(f.request(authority: "api.sandbox.push.apple.com")) == nil)
        #expect(
            ProviderAPI.environment(authority: "api.development.push.apple.com:443", default: .production)
                == .development)
        #expect(ProviderAPI.environment(authority: "localhost:2197", default: .production) == .production)
        // Apple's broadcast and channel management hosts name their environment the same way.
        for (host, environment) in [
            ("api-manage-broadcast.sandbox.push.apple.com:2195", APNsEnvironment.development),
            ("api-broadcast.sandbox.push.apple.com:443", .development),
            ("api-manage-broadcast.push.apple.com:2196", .production),
            ("api-broadcast.push.apple.com:443", .production),
        ] {
            let other: APNsEnvironment = environment == .development ? .production : .development
            #expect(ProviderAPI.environment(authority: host, default: other) == environment, "\(host)")
        }
    }

    @Test func jwtRulesInVirtualTime() async throws {
        let f = try await Fixture()
        let t0 = f.now
        var c = ProviderConnectionState(defaultEnvironment: .development)
        // No token at all.
        var r = f.request()
        r.authorization = nil
        #expect(f.reason(r, connection: &c) == .missingProviderToken)
        // Bad signature, unknown kid (no fallback to the one known key), wrong team.
        let other = P256.Signing.PrivateKey()
        #expect(f.reason(f.request(jwt: f.jwt(key: other)), connection: &c) == .invalidProviderToken)
        #expect(f.reason(f.request(jwt: f.jwt(keyID: "NOSUCHKEY1")), connection: &c) == .invalidProviderToken)
        #expect(f.reason(f.request(jwt: f.jwt(team: "WRONG12345")), connection: &c) == .invalidProviderToken)
        #expect(f.reason(f.request(jwt: "garbage"), connection: &c) == .invalidProviderToken)
        // Older than an hour.
        #expect(
            f.reason(f.request(jwt: f.jwt(issuedAt: t0.addingTimeInterval(-3601))), connection: &c)
                == .expiredProviderToken)
        // A good token; reused (cached) for 59 minutes, expired after 60.
        let good = f.jwt(issuedAt: t0)
        #expect(f.reason(f.request(jwt: good), connection: &c, at: t0) == nil)
        #expect(f.reason(f.request(jwt: good), connection: &c, at: t0.addingTimeInterval(59 * 60)) == nil)
        #expect(
            f.reason(f.request(jwt: good), connection: &c, at: t0.addingTimeInterval(3601)) == .expiredProviderToken)
        // A second token within 20 minutes of the first: 429.
        var d = ProviderConnectionState(defaultEnvironment: .development)
        #expect(f.reason(f.request(jwt: f.jwt(issuedAt: t0)), connection: &d, at: t0) == nil)
        let second = f.jwt(issuedAt: t0.addingTimeInterval(600))
        #expect(
            f.reason(f.request(jwt: second), connection: &d, at: t0.addingTimeInterval(600))
                == .tooManyProviderTokenUpdates)
        // After 20 minutes the switch is fine.
        let third = f.jwt(issuedAt: t0.addingTimeInterval(1201))
        #expect(f.reason(f.request(jwt: third), connection: &d, at: t0.addingTimeInterval(1201)) == nil)
        // A token that was 50 minutes old when it arrived expires 10 minutes later; replacing it
        // then is allowed, although 20 minutes have not passed.
        var e = ProviderConnectionState(defaultEnvironment: .development)
        #expect(f.reason(f.request(jwt: f.jwt(issuedAt: t0.addingTimeInterval(-3000))), connection: &e, at: t0) == nil)
        let renewed = f.jwt(issuedAt: t0.addingTimeInterval(660))
        #expect(f.reason(f.request(jwt: renewed), connection: &e, at: t0.addingTimeInterval(660)) == nil)
    }

    @Test func connectionIsBoundToOneTeamAndKeysToEnvironments() async throws {
        let f = try await Fixture()
        let otherKey = P256.Signing.PrivateKey()
        try await f.directory.putTeam(id: "OTHER12345")
        try await f.directory.putKey(id: "OTHERKEY12", teamID: "OTHER12345", publicKey: otherKey.publicKey)
        var c = ProviderConnectionState(defaultEnvironment: .development)
        #expect(f.reason(f.request(), connection: &c) == nil)
        #expect(c.boundTeam == Fixture.team)
        let later = f.now.addingTimeInterval(1300)
        #expect(
            f.reason(
                f.request(jwt: f.jwt(keyID: "OTHERKEY12", team: "OTHER12345", issuedAt: later, key: otherKey)),
                connection: &c, at: later)
                == .unrelatedKeyIdInToken)

        let prodKey = P256.Signing.PrivateKey()
        try await f.directory.putKey(
            id: "PRODKEY123", teamID: Fixture.team, publicKey: prodKey.publicKey, environment: .production)
        #expect(f.reason(f.request(jwt: f.jwt(keyID: "PRODKEY123", key: prodKey))) == .badEnvironmentKeyIdInToken)

        // Revoked keys stop working even while cached on a connection.
        var d = ProviderConnectionState(defaultEnvironment: .development)
        #expect(f.reason(f.request(), connection: &d) == nil)
        try await f.directory.revokeKey(Fixture.keyID)
        #expect(f.reason(f.request(), connection: &d) == .invalidProviderToken)
    }

    @Test func lenientTokenParsing() throws {
        let key = P256.Signing.PrivateKey()
        let header = Base64URL.encode(Data(#"{"alg":"ES256","typ":"JWT"}"#.utf8))
        let claims = Base64URL.encode(Data(#"{"iss":"TEAM123456","iat":"1800000000","kid":"KEY1234567"}"#.utf8))
        let input = header + "." + claims
        let signature = try key.signature(for: Data(input.utf8))
        let compact = input + "." + Base64URL.encode(signature.derRepresentation)
        let token = try ProviderToken(compact: Substring(compact))
        #expect(token.keyID == "KEY1234567")
        #expect(token.teamID == "TEAM123456")
        #expect(token.issuedAt == 1_800_000_000)
        #expect(token.isSigned(by: key.publicKey))
        #expect(!token.isSigned(by: P256.Signing.PrivateKey().publicKey))
        #expect(throws: ProviderToken.ParseError.self) {
            try ProviderToken(
                compact: Substring(Base64URL.encode(Data(#"{"alg":"HS256","kid":"K"}"#.utf8)) + "." + claims + ".AA"))
        }
    }

    @Test func suspendedTeamIsForbiddenAndShutdownAnswers503() async throws {
        let f = try await Fixture()
        try await f.directory.putTeam(id: Fixture.team, suspended: true)
        #expect(f.reason(f.request()) == .forbidden)
        try await f.directory.putTeam(id: Fixture.team, suspended: false)
        #expect(f.reason(f.request()) == nil)
        f.api.beginShutdown()
        #expect(f.reason(f.request()) == .shutdown)
    }

    @Test func perTokenRateLimit() async throws {
        var configuration = ProviderAPI.Configuration()
        configuration.tokenRate = 1
        configuration.tokenBurst = 3
        let f = try await Fixture(configuration: configuration)
        var c = ProviderConnectionState(defaultEnvironment: .development)
        let jwt = f.jwt()  // one token for the connection (signatures differ on every signing)
        for _ in 0..<3 { #expect(f.reason(f.request(jwt: jwt), connection: &c) == nil) }
        #expect(f.reason(f.request(jwt: jwt), connection: &c) == .tooManyRequests)
        #expect(f.reason(f.request(jwt: jwt), connection: &c, at: f.now.addingTimeInterval(1)) == nil)
    }

    @Test func faultRulesReachEveryReasonAndDelay() async throws {
        let f = try await Fixture()
        for reason in APNsReason.allCases {
            f.faults.removeAll()
            f.faults.add(FaultRule(tokenPrefix: String(f.token.hex.prefix(6)), reason: reason))
            var c = ProviderConnectionState(defaultEnvironment: .development)
            guard case .respond(let response, _) = f.api.handle(f.request(), connection: &c, now: f.now) else {
                Issue.record("\(reason) not answered")
                continue
            }
            #expect(response.reason == reason)
            #expect(response.status == reason.status)
            #expect((response.timestamp != nil) == (reason.status == 410))
        }
        f.faults.removeAll()
        f.faults.add(FaultRule(topic: Fixture.bundle, delayMilliseconds: 250, remaining: 1))
        var c = ProviderConnectionState(defaultEnvironment: .development)
        guard case .accept(_, let delay) = f.api.handle(f.request(), connection: &c, now: f.now) else {
            Issue.record("delayed push not accepted")
            return
        }
        #expect(delay == .milliseconds(250))
        #expect(f.faults.all.isEmpty)  // used up
        // Rules for other topics do not match.
        f.faults.add(FaultRule(topic: "com.other", reason: .internalServerError))
        #expect(f.reason(f.request()) == nil)
    }

    @Test func certificateGrants() async throws {
        let f = try await Fixture()
        let grant = CertificateGrant(bundleID: Fixture.bundle, topics: [], environments: [.development])
        var c = ProviderConnectionState(defaultEnvironment: .development, certificate: grant)
        var r = f.request(topic: nil)
        r.authorization = nil
        #expect(f.reason(r, connection: &c) == nil)  // single-topic certificate supplies the topic
        #expect(f.reason(f.request(authority: "api.push.apple.com"), connection: &c) == .badCertificateEnvironment)
        #expect(f.reason(f.request(topic: "com.example.elsewhere"), connection: &c) == .topicDisallowed)
        var bad = ProviderConnectionState(
            defaultEnvironment: .development,
            certificate: CertificateGrant(
                bundleID: Fixture.bundle, topics: [], environments: [.development], problem: "x"))
        #expect(f.reason(f.request(), connection: &bad) == .badCertificate)
        // A multi-topic certificate needs apns-topic.
        var multi = ProviderConnectionState(
            defaultEnvironment: .development,
            certificate: CertificateGrant(
                bundleID: Fixture.bundle, topics: [Fixture.bundle, Fixture.bundle + ".voip"],
                environments: [.development]))
        #expect(f.reason(r, connection: &multi) == .missingTopic)
    }

    /// Every reason has an honest or an injected path above; this pins the list to all 32.
    @Test func thereAreThirtyTwoReasons() {
        #expect(APNsReason.allCases.count == 32)
    }
}

/// A push another node of the cluster forwards (docs/cluster.md): taken only with the cluster's
/// credential, only by a node of a cluster, with what the sending node decided kept as it was.
@Suite struct ForwardedPushTests {
    static let secret = Array(repeating: UInt8(9), count: 32)

    func forwarded(_ f: Fixture, authorization: String?, fields: String? = nil, token: String? = nil)
        -> ProviderRequest
    {
        var r = ProviderRequest(
            method: "POST", path: ClusterForwarding.pathPrefix + (token ?? f.token.hex),
            body: ByteBuffer(string: #"{"aps":{"content-available":1}}"#))
        if let authorization { r.addHeader(name: "authorization", value: authorization) }
        r.addHeader(name: "apns-id", value: "0c9e8fa0-5fd4-4b6d-9d6f-2a6f0d2c1b11")
        r.addHeader(name: "apns-topic", value: Fixture.bundle)
        r.addHeader(name: "apns-push-type", value: "background")
        r.addHeader(name: "apns-priority", value: "5")
        r.addHeader(name: "apns-expiration", value: "1800000600")
        r.addHeader(name: "apns-collapse-id", value: "score")
        r.addHeader(
            name: ClusterForwarding.header,
            value: fields
                ?? ClusterForwarding.Fields(
                    environment: .development, acceptedAt: f.now.addingTimeInterval(-1), uniqueID: "u-1",
                    binaryIdentifier: 42
                ).text)
        return r
    }

    @Test func aForwardedPushIsTakenWithTheClusterCredentialAsItWasDecided() async throws {
        let f = try await Fixture()
        let credential = ClusterForwarding.Credential(tokenSecret: Self.secret)
        let api = ProviderAPI(registry: f.directory.registry, cluster: credential)
        var c = ProviderConnectionState(defaultEnvironment: .production)
        guard
            case .accept(let push, nil) = api.handle(
                forwarded(f, authorization: credential.authorization), connection: &c, now: f.now)
        else {
            Issue.record("not accepted")
            return
        }
        #expect(push.forwarded)
        #expect(push.apnsID == "0c9e8fa0-5fd4-4b6d-9d6f-2a6f0d2c1b11" && push.uniqueID == "u-1")
        #expect(push.registration.deviceID == "device-1" && push.registration.environment == .development)
        #expect(push.pushType == .background && push.priority == .normal && push.contentAvailable)
        #expect(push.expiration == 1_800_000_600 && push.collapseID == "score" && push.binaryIdentifier == 42)
        #expect(push.receivedAt == f.now.addingTimeInterval(-1))
        // The connection is another node's: what it sends counts for its idle deadline.
        #expect(c.hasAuthenticated)
    }

    @Test func withoutTheCredentialOrOutsideAClusterItIsRefused() async throws {
        let f = try await Fixture()
        let credential = ClusterForwarding.Credential(tokenSecret: Self.secret)
        let api = ProviderAPI(registry: f.directory.registry, cluster: credential)
        func reason(_ api: ProviderAPI, _ r: ProviderRequest) -> APNsReason? {
            var c = ProviderConnectionState(defaultEnvironment: .development)
            guard case .respond(let response, _) = api.handle(r, connection: &c, now: f.now) else { return nil }
            // Refused for its credential, a connection has not authenticated.
            if response.reason == .invalidProviderToken { #expect(!c.hasAuthenticated) }
            return response.reason
        }
        // Another cluster's credential, a provider's JWT, none at all.
        let other = ClusterForwarding.Credential(tokenSecret: Array(repeating: 8, count: 32))
        #expect(reason(api, forwarded(f, authorization: other.authorization)) == .invalidProviderToken)
        #expect(reason(api, forwarded(f, authorization: "bearer \(f.jwt())")) == .invalidProviderToken)
        #expect(reason(api, forwarded(f, authorization: nil)) == .invalidProviderToken)
        // A gateway that is no node of a cluster does not know the path.
        #expect(reason(f.api, forwarded(f, authorization: credential.authorization)) == .badPath)
        // What the sending node must say, said wrong.
        #expect(reason(api, forwarded(f, authorization: credential.authorization, fields: "mars 1 - -")) == .badPath)
        #expect(
            reason(api, forwarded(f, authorization: credential.authorization, token: "zz")) == .badDeviceToken)
        // A registration this node does not know (yet): 503, and the sender stores the push itself.
        #expect(
            reason(
                api,
                forwarded(f, authorization: credential.authorization, token: String(repeating: "ab", count: 32)))
                == .serviceUnavailable)
    }

    @Test func theFieldsHeaderReadsBackWhatWasWritten() {
        let fields = ClusterForwarding.Fields(
            environment: .production, acceptedAt: Date(timeIntervalSince1970: 1_800_000_000.123), uniqueID: nil,
            binaryIdentifier: nil)
        #expect(fields.text == "production 1800000000123 - -")
        #expect(ClusterForwarding.Fields(text: fields.text) == fields)
        #expect(ClusterForwarding.Fields(text: "development 12 u 4294967296") == nil, "a binary id is 32 bits")
        #expect(ClusterForwarding.Fields(text: "development 12 u") == nil)
        // A time no node writes, which the delivery log could not turn back into milliseconds.
        #expect(ClusterForwarding.Fields(text: "development 9223372036854775807 - -") == nil)
        #expect(ClusterForwarding.Fields(text: "development -1 - -") == nil)
        #expect(ClusterForwarding.Fields(text: "development 1000000000000000 - -") != nil)
    }
}

/// The channel management API's logic where the end-to-end test cannot reach: a stopping gateway
/// and a suspended team (docs/broadcast.md's table).
@Suite struct ChannelAPITests {
    func reason(_ api: ProviderAPI, _ f: Fixture) -> String? {
        var connection = ProviderConnectionState(defaultEnvironment: .development)
        var request = ProviderRequest(method: "GET", path: "/1/apps/\(Fixture.bundle)/all-channels")
        request.addHeader(name: "authorization", value: "bearer \(f.jwt())")
        guard case .respond(let response, _) = api.handle(request, connection: &connection, now: f.now) else {
            return nil
        }
        #expect(response.identifiesRequest && response.apnsID.count == 36)
        return response.reasonText
    }

    @Test func aStoppingGatewayAndASuspendedTeamAreRefused() async throws {
        let f = try await Fixture()
        let api = f.api.managingChannels(store: f.store)
        #expect(reason(api, f) == nil, "the listing is work on the store")
        _ = try await f.directory.putTeam(id: Fixture.team, suspended: true)
        #expect(reason(api, f) == "Forbidden")
        _ = try await f.directory.putTeam(id: Fixture.team, suspended: false)
        api.beginShutdown()
        #expect(reason(api, f) == "Shutdown")
    }
}
