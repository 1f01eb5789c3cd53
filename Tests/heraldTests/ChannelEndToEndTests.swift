import Foundation
import Testing

/// The channel management API (docs/broadcast.md) on a real `herald gateway`, driven by curl over
/// its cleartext development listener and by a Python HTTP/2 client over TLS: every endpoint and
/// every reason, the same answer from both.
@Suite(.serialized, .ownThread) struct ChannelEndToEndTests {
    /// One answer, as either client saw it.
    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: String
        var reason: String? {
            ((try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any])?["reason"] as? String
        }
        var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] }
    }

    /// A gateway with the demo team, key and app, and both clients: on the channel management
    /// listeners, or (`provider`) on the provider API's (where broadcasts are sent).
    struct Channels {
        let p: Provisioned
        let dev: String
        let tls: String

        init(p: Provisioned, provider: Bool = false) {
            self.p = p
            dev = (provider ? p.gateway.info.developmentURL : p.gateway.info.channelsDevelopmentURL) ?? ""
            tls = (provider ? p.gateway.info.providerURL : p.gateway.info.channelsURL) ?? ""
        }

        /// Sends the same request with curl (h2c, development listener) and then with Python's h2
        /// (TLS); both must see the same status and reason unless `alike` is false (a delete: the
        /// second finds the channel gone). Returns both answers.
        func both(
            _ method: String, _ path: String, headers: [String] = [], body: String? = nil, auth: Bool = true,
            authority: String? = nil, alike: Bool = true
        ) throws -> (curl: Answer, python: Answer) {
            var all = headers
            if auth { all.append("authorization: bearer \(p.jwt)") }
            var args = ["--http2-prior-knowledge", "-X", method]
            for h in all { args += ["-H", h] }
            if let body { args += ["--data-binary", body] }
            if let authority {
                // :authority names the environment; the connection still goes to the listener.
                args += ["--connect-to", "\(authority):80:127.0.0.1:\(URL.port(dev))", "http://\(authority)\(path)"]
            } else {
                args.append(dev + path)
            }
            let c = try curl(args)
            let port = URL.port(tls)
            let py = try pythonClient(
                "h2_request.py",
                ["localhost", "\(port)", method, path, p.gateway.ca, body ?? "-", authority ?? "-"] + all)
            let python = Answer(
                status: py.json?["status"] as? Int ?? -1, headers: py.json?["headers"] as? [String: String] ?? [:],
                body: py.json?["body"] as? String ?? "")
            let curlAnswer = Answer(status: c.status, headers: c.headers, body: c.body)
            if alike {
                #expect(curlAnswer.status == python.status, "curl \(curlAnswer) / python \(python) \(py.stderr)")
                #expect(curlAnswer.reason == python.reason, "\(method) \(path)")
            }
            return (curlAnswer, python)
        }
    }

    static let create = #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#
    static let path = "/1/apps/\(Provisioned.topic)/channels"
    static let all = "/1/apps/\(Provisioned.topic)/all-channels"

    @Test func everyEndpointAndReason() throws {
        let c = Channels(p: try Provisioned(arguments: ["--durability", "normal"]))
        #expect(c.dev.hasPrefix("http://127.0.0.1:") && c.tls.hasPrefix("https://localhost:"))

        // Create: 201 with a generated channel id and a request id, echoed when given.
        let requestID = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
        let made = try c.both("POST", Self.path, headers: ["apns-request-id: \(requestID)"], body: Self.create)
        for answer in [made.curl, made.python] {
            #expect(answer.status == 201, "\(answer)")
            #expect(answer.headers["apns-request-id"] == requestID)
            #expect(answer.headers["apns-id"] == nil)
            #expect(Data(base64Encoded: answer.headers["apns-channel-id"] ?? "")?.count == 16, "\(answer.headers)")
        }
        let first = try #require(made.curl.headers["apns-channel-id"])
        let second = try #require(made.python.headers["apns-channel-id"])
        #expect(first != second)
        let noStorage = try c.both(
            "POST", Self.path, body: #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#)
        #expect(noStorage.curl.headers["apns-request-id"]?.count == 36, "generated")
        let third = try #require(noStorage.curl.headers["apns-channel-id"])

        // Read: the policy as created.
        let read = try c.both("GET", Self.path, headers: ["apns-channel-id: \(first)"])
        for answer in [read.curl, read.python] {
            #expect(answer.status == 200)
            #expect(
                answer.json?["message-storage-policy"] as? Int == 1
                    && answer.json?["push-type"] as? String == "LiveActivity")
        }
        let readNone = try c.both("GET", Self.path, headers: ["apns-channel-id: \(third)"])
        #expect(readNone.curl.json?["message-storage-policy"] as? Int == 0)

        // List: every channel of the app in this environment, oldest first.
        let listed = try c.both("GET", Self.all)
        let ids = listed.curl.json?["channels"] as? [String]
        #expect(ids?.count == 4 && ids?.first == first, "\(listed.curl.body)")
        #expect(listed.python.json?["channels"] as? [String] == ids)

        // Delete: 204 without a body, then the channel is not registered any more.
        let deleted = try c.both("DELETE", Self.path, headers: ["apns-channel-id: \(first)"], alike: false)
        #expect(deleted.curl.status == 204 && deleted.curl.body.isEmpty)
        #expect(deleted.python.status == 404 && deleted.python.reason == "ChannelNotRegistered", "already gone")
        let gone = try c.both("GET", Self.path, headers: ["apns-channel-id: \(first)"])
        #expect(gone.curl.status == 404 && gone.curl.reason == "ChannelNotRegistered")

        // HTTP/1.1 as well (the development listener takes both): a 204 carries no content-length.
        let h1 = try curl([
            "--http1.1", "-X", "POST", c.dev + Self.path, "-H", "authorization: bearer \(c.p.jwt)", "--data-binary",
            Self.create,
        ])
        #expect(h1.status == 201 && h1.version == "HTTP/1.1", "\(h1)")
        let h1Deleted = try curl([
            "--http1.1", "-X", "DELETE", c.dev + Self.path, "-H", "authorization: bearer \(c.p.jwt)", "-H",
            "apns-channel-id: \(h1.headers["apns-channel-id"] ?? "")",
        ])
        #expect(h1Deleted.status == 204 && h1Deleted.headers["content-length"] == nil, "\(h1Deleted)")

        // Every reason of the channel API.
        let unknown = Data(repeating: 7, count: 16).base64EncodedString()
        let cases: [(String, String, [String], String?, Bool, Int, String)] = [
            ("GET", Self.path, [], nil, true, 400, "MissingChannelId"),
            ("DELETE", Self.path, [], nil, true, 400, "MissingChannelId"),
            ("GET", Self.path, ["apns-channel-id: not base64!"], nil, true, 400, "BadChannelId"),
            ("GET", Self.path, ["apns-channel-id: \(unknown)"], nil, true, 404, "ChannelNotRegistered"),
            ("POST", Self.path, [], "nope", true, 400, "BadRequestPayload"),
            ("POST", Self.path, [], "[1]", true, 400, "BadRequestPayload"),
            ("POST", Self.path, [], #"{"message-storage-policy":1}"#, true, 400, "MissingPushType"),
            (
                "POST", Self.path, [], #"{"message-storage-policy":2,"push-type":"LiveActivity"}"#, true, 400,
                "BadRequestParams"
            ),
            (
                "POST", Self.path, [], #"{"message-storage-policy":true,"push-type":"LiveActivity"}"#, true, 400,
                "BadRequestParams"
            ),
            (
                "POST", Self.path, [], #"{"message-storage-policy":1,"push-type":"Alert"}"#, true, 400,
                "BadRequestParams"
            ),
            ("POST", Self.path, ["apns-request-id: seven"], Self.create, true, 400, "BadRequestParams"),
            ("POST", Self.path, [], Self.create, false, 403, "MissingProviderToken"),
            (
                "POST", Self.path, ["apns-channel-id: a", "apns-channel-id: b"], Self.create, true, 400,
                "DuplicateHeaders"
            ),
            ("PUT", Self.path, [], Self.create, true, 405, "MethodNotAllowed"),
            ("POST", Self.all, [], Self.create, true, 405, "MethodNotAllowed"),
            ("GET", "/1/apps/\(Provisioned.topic)/chanels", [], nil, true, 404, "BadPath"),
            ("GET", "/3/device/abc", [], nil, true, 404, "BadPath"),
            ("POST", "/1/apps/com.example.nobody/channels", [], Self.create, true, 400, "TopicDisallowed"),
        ]
        for (method, path, headers, body, auth, status, reason) in cases {
            let answer = try c.both(method, path, headers: headers, body: body, auth: auth)
            #expect(
                answer.curl.status == status && answer.curl.reason == reason,
                "\(method) \(path) \(headers) \(body ?? ""): \(answer.curl)")
            #expect(answer.curl.headers["apns-request-id"]?.count == 36, "\(answer.curl.headers)")
        }

        // Authenticated like the provider API: the app's certificate on the TLS listener, no token;
        // a development certificate asking for production is refused as there.
        let issued = try c.p.gateway.adminCall(
            "POST", "/apps/\(Provisioned.topic)/certificates", #"{"environments":["development"]}"#)
        let cert = c.p.gateway.state.appendingPathComponent("app.pem").path
        let key = c.p.gateway.state.appendingPathComponent("app-key.pem").path
        try (issued.json?["certificate"] as? String ?? "").write(toFile: cert, atomically: true, encoding: .utf8)
        try (issued.json?["privateKey"] as? String ?? "").write(toFile: key, atomically: true, encoding: .utf8)
        let certified = ["--http2", "--cacert", c.p.gateway.ca, "--cert", cert, "--key", key]
        let byCert = try curl(certified + [c.tls + Self.all])
        #expect(byCert.status == 200 && (byCert.json?["channels"] as? [String])?.count == 3, "\(byCert.body)")
        let wrongEnvironment = try curl(
            certified + [c.tls + Self.all, "-H", "host: api-manage-broadcast.push.apple.com"])
        #expect(wrongEnvironment.status == 403 && wrongEnvironment.reason == "BadCertificateEnvironment")

        // The provider API's listeners do not serve it.
        let onProvider = try curl([
            "--http2-prior-knowledge", "-X", "POST", c.p.gateway.dev + Self.path, "-H",
            "authorization: bearer \(c.p.jwt)",
            "--data-binary", Self.create,
        ])
        #expect(onProvider.status == 404 && onProvider.reason == "BadPath")

        // 10,000 channels per app and environment: the next is refused, in production there is room,
        // and production's channels are its own.
        let payload = c.p.gateway.state.appendingPathComponent("channel.json")
        try Data(Self.create.utf8).write(to: payload)
        let load = try run(
            "/usr/bin/env",
            [
                "h2load", "-n", "9997", "-c", "1", "-m", "50", "-N", "60s", "-d", payload.path, "-H",
                "authorization: bearer \(c.p.jwt)", c.dev + Self.path,
            ])
        #expect(load.stdout.contains("status codes: 9997 2xx, 0 3xx, 0 4xx, 0 5xx"), "\(load.stdout)")
        let full = try c.both("POST", Self.path, body: Self.create)
        #expect(full.curl.status == 400 && full.curl.reason == "CannotCreateChannelConfig", "\(full.curl)")
        let production = "api-manage-broadcast.push.apple.com"
        let elsewhere = try c.both("POST", Self.path, body: Self.create, authority: production)
        #expect(elsewhere.curl.status == 201 && elsewhere.python.status == 201)
        let productionList = try c.both("GET", Self.all, authority: production)
        #expect((productionList.curl.json?["channels"] as? [String])?.count == 2)
        let devCount = try c.both("GET", Self.all)
        #expect((devCount.curl.json?["channels"] as? [String])?.count == 10_000)
        let crossRead = try c.both("GET", Self.path, headers: ["apns-channel-id: \(second)"], authority: production)
        #expect(crossRead.curl.reason == "ChannelNotRegistered", "channels are not shared between environments")

        // An app whose broadcast is turned off: FeatureNotEnabled.
        let off = try c.p.gateway.adminCall(
            "POST", "/apps", #"{"bundleID":"\#(Provisioned.topic)","teamID":"\#(Provisioned.team)","broadcast":false}"#)
        #expect(off.status == 201 && off.json?["broadcast"] as? Bool == false, "\(off.body)")
        let disabled = try c.both("GET", Self.all)
        #expect(disabled.curl.status == 403 && disabled.curl.reason == "FeatureNotEnabled")
        #expect(c.p.gateway.stop() == 0)
    }

    /// `herald channel` (HeraldProvider's channel client) against the gateway's TLS channel listener.
    @Test func theChannelCommandManagesAnAppsChannels() throws {
        let p = try Provisioned()
        let herald = try heraldExecutable().path
        let common = [
            "--url", try #require(p.gateway.info.channelsURL), "--ca", p.gateway.ca, "--p8", p.p8, "--key-id",
            Provisioned.key, "--team", Provisioned.team, "--topic", Provisioned.topic, "--up", "/nonexistent/up.json",
        ]
        let made = try run(herald, ["channel", "create", "--policy", "1"] + common)
        #expect(made.status == 0, "\(made.stderr)")
        let id = made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(Data(base64Encoded: id)?.count == 16, "\(made.stdout)")
        let read = try run(herald, ["channel", "read", "--channel-id", id] + common)
        #expect(read.stdout == "message-storage-policy 1 (latest kept)\n", "\(read.stderr)")
        let listed = try run(herald, ["channel", "list", "--json"] + common)
        let ids = ((try? JSONSerialization.jsonObject(with: Data(listed.stdout.utf8))) as? [String: Any])?["channels"]
        #expect(ids as? [String] == [id], "\(listed.stdout) \(listed.stderr)")
        let deleted = try run(herald, ["channel", "delete", "--channel-id", id] + common)
        #expect(deleted.status == 0 && deleted.stdout == "deleted \(id)\n", "\(deleted.stderr)")
        let again = try run(herald, ["channel", "read", "--channel-id", id] + common)
        #expect(again.status == 1 && again.stderr.contains("404 ChannelNotRegistered"), "\(again.stderr)")
        let bad = try run(herald, ["channel", "create", "--policy", "2"] + common)
        #expect(bad.status != 0 && bad.stderr.contains("--policy must be 0 or 1"), "\(bad.stderr)")
        let noID = try run(herald, ["channel", "delete"] + common)
        #expect(noID.status != 0 && noID.stderr.contains("delete needs --channel-id"), "\(noID.stderr)")
        #expect(p.gateway.stop() == 0)
    }
}
