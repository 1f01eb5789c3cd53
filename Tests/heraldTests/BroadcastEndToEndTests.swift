import Foundation
import Testing

/// The broadcast API (docs/broadcast.md) on a real `herald gateway`: curl over the cleartext
/// development listener and a Python HTTP/2 client over TLS send; `herald test-device` processes
/// subscribed over their device links receive.
@Suite(.serialized, .ownThread) struct BroadcastEndToEndTests {
    static let path = "/4/broadcasts/apps/\(Provisioned.topic)"
    static let update = #"{"aps":{"event":"update","timestamp":1700000000,"content-state":{"stop":3,"eta":"12:40"}}}"#
    static let liveActivity = ["apns-push-type: liveactivity"]

    /// Creates a channel with the storage policy given, over the channel management API.
    static func channel(_ p: Provisioned, policy: Int) throws -> String {
        let made = try curl([
            "--http2-prior-knowledge",
            try #require(p.gateway.info.channelsDevelopmentURL) + "/1/apps/\(Provisioned.topic)/channels",
            "-H", "authorization: bearer \(p.jwt)", "--data-binary",
            #"{"message-storage-policy":\#(policy),"push-type":"LiveActivity"}"#,
        ])
        #expect(made.status == 201, "\(made)")
        return try #require(made.headers["apns-channel-id"])
    }

    /// Sends a broadcast with curl over h2c.
    static func send(
        _ p: Provisioned, channel: String, body: String = update, headers: [String] = liveActivity,
        to base: String? = nil
    ) throws -> CurlResponse {
        var args = [
            "--http2-prior-knowledge", (base ?? p.gateway.dev) + path, "-H", "authorization: bearer \(p.jwt)", "-H",
            "apns-channel-id: \(channel)", "--data-binary", body,
        ]
        for h in headers { args += ["-H", h] }
        return try curl(args)
    }

    /// A test-device on the gateway's device link, subscribed to `channels`.
    static func device(_ p: Provisioned, _ name: String, channels: [String], on node: GatewayProcess? = nil) throws
        -> LinkedTestDevice
    {
        let node = node ?? p.gateway
        return try LinkedTestDevice(
            [
                "--gateway", node.info.linkDevelopmentURL, "--identity",
                node.state.appendingPathComponent("\(name).json").path,
            ] + channels.flatMap { ["--channel", $0] })
    }

    @Test func aBroadcastReachesEverySubscriberAndAKeptMessageTheLateOnes() throws {
        let p = try Provisioned(arguments: ["--durability", "normal"])
        let kept = try Self.channel(p, policy: 1)
        let fleeting = try Self.channel(p, policy: 0)
        let one = try Self.device(p, "one", channels: [kept])
        let both = try Self.device(p, "both", channels: [kept, fleeting])
        let none = try Self.device(p, "none", channels: [])
        defer { for d in [one, both, none] { d.watchdog.cancel() } }

        // Over h2c with curl: 200 with the request id echoed and a unique id; both subscribers get
        // the payload byte for byte, on the app's Live Activity topic.
        let requestID = "7d444840-9dc0-11d1-b245-5ffdce74fad2"
        let first = try Self.send(p, channel: kept, headers: Self.liveActivity + ["apns-request-id: \(requestID)"])
        #expect(first.status == 200 && first.body.isEmpty, "\(first)")
        #expect(first.headers["apns-request-id"] == requestID)
        let uniqueID = try #require(first.headers["apns-unique-id"])
        #expect(uniqueID.count == 36 && uniqueID != requestID)
        for device in [one, both] {
            let got = try #require(device.child.reader.json())
            #expect(got["event"] as? String == "broadcast", "\(got)")
            #expect(got["uniqueID"] as? String == uniqueID && got["channel"] as? String == kept)
            #expect(got["payload"] as? String == Self.update)
            #expect(got["topic"] as? String == "\(Provisioned.topic).push-type.liveactivity")
            #expect(got["priority"] as? Int == 10 && got["expiration"] == nil)
        }

        // Over TLS with Python's h2, on the no-storage channel, at priority 5 and expiration 0.
        let c = ChannelEndToEndTests.Channels(p: p, provider: true)
        let port = URL.port(c.tls)
        let ended = #"{"aps":{"event":"end","timestamp":1700000100,"dismissal-date":1700003600}}"#
        let py = try pythonClient(
            "h2_request.py",
            [
                "localhost", "\(port)", "POST", Self.path, p.gateway.ca, ended, "-",
                "authorization: bearer \(p.jwt)", "apns-channel-id: \(fleeting)", "apns-push-type: liveactivity",
                "apns-priority: 5", "apns-expiration: 0",
            ])
        #expect(py.json?["status"] as? Int == 200, "\(py.json ?? [:]) \(py.stderr)")
        let pyHeaders = py.json?["headers"] as? [String: String] ?? [:]
        let secondID = try #require(pyHeaders["apns-unique-id"])
        #expect(pyHeaders["apns-request-id"]?.count == 36)
        let second = try #require(both.child.reader.json())
        #expect(second["uniqueID"] as? String == secondID && second["channel"] as? String == fleeting, "\(second)")
        #expect(second["priority"] as? Int == 5 && second["expiration"] as? Int == 0)
        #expect(second["payload"] as? String == ended)

        // A device that subscribes later gets the kept channel's latest message, and nothing of the
        // channel that keeps none: its first line is the kept message, its next the next broadcast.
        let late = try Self.device(p, "late", channels: [fleeting, kept])
        defer { late.watchdog.cancel() }
        let keptAgain = try #require(late.child.reader.json())
        #expect(keptAgain["uniqueID"] as? String == uniqueID && keptAgain["channel"] as? String == kept, "\(keptAgain)")
        let third = try Self.send(p, channel: fleeting, headers: Self.liveActivity + ["apns-expiration: 0"])
        #expect(third.status == 200, "\(third)")
        let next = try #require(late.child.reader.json())
        #expect(next["uniqueID"] as? String == third.headers["apns-unique-id"], "\(next)")

        // The device subscribed to nothing got none of them: its first line is a push sent to it now.
        let push = try p.push(token: none.token)
        #expect(push.status == 200)
        let noneFirst = try #require(none.child.reader.json())
        #expect(noneFirst["event"] as? String == "push" && noneFirst["apnsID"] as? String == push.headers["apns-id"])

        // The kept message outlives the gateway: after a restart a new subscriber still gets it.
        #expect(p.gateway.stop() == 0)
        let restarted = try Provisioned(state: p.gateway.state, existing: p)
        let afterRestart = try Self.device(restarted, "after", channels: [kept])
        defer { afterRestart.watchdog.cancel() }
        let stillKept = try #require(afterRestart.child.reader.json())
        #expect(stillKept["uniqueID"] as? String == uniqueID && stillKept["payload"] as? String == Self.update)

        // A subscription to a channel that is not the app's is refused, naming the channel.
        let stranger = Data(repeating: 9, count: 16).base64EncodedString()
        let refused = try run(
            "/usr/bin/timeout",
            [
                "60", try heraldExecutable().path, "test-device", "--topic", Provisioned.topic, "--channel", stranger,
                "--gateway",
                restarted.gateway.info.linkDevelopmentURL, "--identity",
                restarted.gateway.state.appendingPathComponent("stranger.json").path,
            ])
        #expect(
            refused.status != 0 && refused.stderr.contains("NotFound") && refused.stderr.contains(stranger),
            "\(refused.stderr)")
        #expect(restarted.gateway.stop() == 0)
    }

    @Test func everyReasonOfTheBroadcastAPI() throws {
        let p = try Provisioned(arguments: ["--durability", "normal"])
        let kept = try Self.channel(p, policy: 1)
        let fleeting = try Self.channel(p, policy: 0)
        let c = ChannelEndToEndTests.Channels(p: p, provider: true)
        let unknown = Data(repeating: 7, count: 16).base64EncodedString()
        let channel = "apns-channel-id: \(kept)"
        let type = "apns-push-type: liveactivity"
        let start = #"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes-type":"A","attributes":{}}}"#
        let cases: [(String, [String], String?, Bool, Int, String)] = [
            (Self.path, [type], Self.update, true, 400, "MissingChannelId"),
            (Self.path, [type, "apns-channel-id: *"], Self.update, true, 400, "BadChannelId"),
            (Self.path, [type, "apns-channel-id: \(unknown)"], Self.update, true, 404, "ChannelNotRegistered"),
            (Self.path, [channel], Self.update, true, 400, "MissingPushType"),
            (Self.path, [channel, "apns-push-type: alert"], Self.update, true, 400, "InvalidPushType"),
            (Self.path, [channel, type, "apns-priority: 1"], Self.update, true, 400, "BadPriority"),
            (Self.path, [channel, type, "apns-priority: high"], Self.update, true, 400, "BadPriority"),
            (Self.path, [channel, type, "apns-expiration: -1"], Self.update, true, 400, "BadExpirationDate"),
            (
                Self.path, [type, "apns-channel-id: \(fleeting)", "apns-expiration: 1900000000"], Self.update, true,
                400, "BadExpirationDate"
            ),
            (Self.path, [channel, type], nil, true, 400, "BadRequestPayload"),
            (Self.path, [channel, type], "nope", true, 400, "BadRequestPayload"),
            (Self.path, [channel, type], #"{"aps":{"alert":"hi"}}"#, true, 400, "BadRequestPayload"),
            (Self.path, [channel, type], start, true, 400, "BadRequestPayload"),
            (
                Self.path, [channel, type], #"{"aps":{"event":"update","content-state":{}}}"#, true, 400,
                "BadRequestPayload"
            ),
            (Self.path, [channel, type], #"{"aps":{"event":"update","timestamp":1}}"#, true, 400, "BadRequestPayload"),
            (
                Self.path, [channel, type],
                #"{"aps":{"event":"end","timestamp":1},"pad":""# + String(repeating: "x", count: 5120) + #""}"#, true,
                413, "PayloadTooLarge"
            ),
            (Self.path, [channel, type, "apns-request-id: seven"], Self.update, true, 400, "BadRequestParams"),
            (Self.path, [channel, type], Self.update, false, 403, "MissingProviderToken"),
            (Self.path, [channel, channel, type], Self.update, true, 400, "DuplicateHeaders"),
            ("/4/broadcasts/apps/", [channel, type], Self.update, true, 404, "BadPath"),
            ("/4/broadcasts/apps/com.example.nobody", [channel, type], Self.update, true, 400, "TopicDisallowed"),
        ]
        for (path, headers, body, auth, status, reason) in cases {
            let answer = try c.both("POST", path, headers: headers, body: body, auth: auth)
            #expect(
                answer.curl.status == status && answer.curl.reason == reason,
                "\(path) \(headers) \(body ?? ""): \(answer.curl)")
            #expect(answer.curl.headers["apns-request-id"]?.count == 36, "\(answer.curl.headers)")
            #expect(answer.curl.headers["apns-unique-id"] == nil)
        }
        let get = try c.both("GET", Self.path, headers: [channel, type])
        #expect(get.curl.status == 405 && get.curl.reason == "MethodNotAllowed")

        // The channel listeners do not take broadcasts.
        let onChannels = try curl([
            "--http2-prior-knowledge", try #require(p.gateway.info.channelsDevelopmentURL) + Self.path, "-H",
            "authorization: bearer \(p.jwt)", "-H", channel, "-H", type, "--data-binary", Self.update,
        ])
        #expect(onChannels.status == 404 && onChannels.reason == "BadPath", "\(onChannels)")

        // An app whose broadcast is turned off: FeatureNotEnabled.
        let off = try p.gateway.adminCall(
            "POST", "/apps", #"{"bundleID":"\#(Provisioned.topic)","teamID":"\#(Provisioned.team)","broadcast":false}"#)
        #expect(off.status == 201)
        let disabled = try c.both("POST", Self.path, headers: [channel, type], body: Self.update)
        #expect(disabled.curl.status == 403 && disabled.curl.reason == "FeatureNotEnabled")
        #expect(p.gateway.stop() == 0)
    }

    /// `herald channel broadcast` and `herald push --live-activity` (HeraldProvider's broadcast and
    /// Live Activity payload) as a provider's shell sends them, received by a test-device.
    @Test func theCommandsSendBroadcastsAndLiveActivityPushes() throws {
        let p = try Provisioned()
        let kept = try Self.channel(p, policy: 1)
        let device = try Self.device(p, "cli", channels: [kept])
        defer { device.watchdog.cancel() }
        let herald = try heraldExecutable().path
        let credentials = [
            "--ca", p.gateway.ca, "--p8", p.p8, "--key-id", Provisioned.key, "--team", Provisioned.team, "--topic",
            Provisioned.topic, "--up", "/nonexistent/up.json",
        ]
        let broadcast = try run(
            herald,
            [
                "channel", "broadcast", "--provider-url", p.gateway.tls, "--channel-id", kept, "--content-state",
                #"{"stop":4}"#, "--timestamp", "1700000500", "--alert", "Two stops",
            ] + credentials)
        #expect(broadcast.status == 0, "\(broadcast.stderr)")
        let words = broadcast.stdout.split(separator: " ").map(String.init)
        #expect(words.count == 5 && words[0] == "200" && words[3] == "apns-unique-id", "\(broadcast.stdout)")
        let got = try #require(device.child.reader.json())
        #expect(got["uniqueID"] as? String == words.last?.trimmingCharacters(in: .whitespacesAndNewlines), "\(got)")
        #expect(
            got["payload"] as? String
                == #"{"aps":{"alert":{"body":"Two stops"},"content-state":{"stop":4},"event":"update","timestamp":1700000500}}"#
        )

        let push = try run(
            herald,
            [
                "push", "--url", p.gateway.tls, "--token", device.token, "--live-activity", "end", "--content-state",
                #"{"stop":5}"#, "--timestamp", "1700000600", "--dismissal-date", "1700004200", "--json",
            ] + credentials)
        #expect(push.status == 0, "\(push.stderr)")
        let pushed = try #require(device.child.reader.json())
        #expect(pushed["event"] as? String == "push" && pushed["pushType"] as? String == "liveactivity", "\(pushed)")
        #expect(pushed["topic"] as? String == "\(Provisioned.topic).push-type.liveactivity")
        #expect(
            pushed["payload"] as? String
                == #"{"aps":{"content-state":{"stop":5},"dismissal-date":1700004200,"event":"end","timestamp":1700000600}}"#
        )

        // Refusals: typed from the gateway, or caught before anything is sent.
        let unknown = Data(repeating: 3, count: 16).base64EncodedString()
        let notThere = try run(
            herald, ["channel", "broadcast", "--provider-url", p.gateway.tls, "--channel-id", unknown] + credentials)
        #expect(notThere.status == 1 && notThere.stderr.contains("404 ChannelNotRegistered"), "\(notThere.stderr)")
        let starting = try run(
            herald, ["channel", "broadcast", "--channel-id", kept, "--event", "start"] + credentials)
        #expect(starting.status != 0 && starting.stderr.contains("a broadcast cannot start"), "\(starting.stderr)")
        let noType = try run(
            herald, ["push", "--url", p.gateway.tls, "--token", device.token, "--live-activity", "start"] + credentials)
        #expect(noType.status != 0 && noType.stderr.contains("a start needs --attributes-type"), "\(noType.stderr)")
        let stray = try run(herald, ["push", "--url", p.gateway.tls, "--content-state", "{}"] + credentials)
        #expect(stray.status != 0 && stray.stderr.contains("go with --live-activity"), "\(stray.stderr)")
        let badJSON = try run(
            herald,
            [
                "push", "--url", p.gateway.tls, "--token", device.token, "--live-activity", "update", "--content-state",
                "[1]",
            ]
                + credentials)
        #expect(
            badJSON.status != 0 && badJSON.stderr.contains("--content-state must be a JSON object"),
            "\(badJSON.stderr)")
        #expect(p.gateway.stop() == 0)
    }
}
