import Foundation
import HeraldRuntime
import Testing

/// The path of the built `herald` executable.
func heraldExecutable() throws -> URL {
    var directory = Bundle.main.bundleURL
    while !FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent("herald").path) {
        let parent = directory.deletingLastPathComponent()
        guard parent != directory else { throw CocoaError(.fileNoSuchFile) }
        directory = parent
    }
    return directory.appendingPathComponent("herald")
}

/// Runs a program to completion.
@discardableResult
func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> (
    status: Int32, stdout: String, stderr: String
) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
}

/// An HTTP answer as curl printed it with `-i`.
struct CurlResponse {
    var status: Int
    var version: String
    var headers: [String: String]
    var body: String

    var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] }
    var reason: String? { json?["reason"] as? String }
}

func curl(_ arguments: [String]) throws -> CurlResponse {
    let r = try run("/usr/bin/env", ["curl", "-sS", "-i", "--max-time", "20"] + arguments)
    guard r.status == 0 else { throw CocoaError(.fileReadUnknown, userInfo: ["curl": r.stderr]) }
    // Skip informational heads; the last head is the answer.
    var text = r.stdout
    var response = CurlResponse(status: 0, version: "", headers: [:], body: "")
    while true {
        guard let end = text.range(of: "\r\n\r\n") else { break }
        let head = text[..<end.lowerBound]
        let lines = head.components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        response.version = String(statusParts[0])
        response.status = Int(statusParts[1]) ?? 0
        response.headers = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            response.headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        text = String(text[end.upperBound...])
        if response.status >= 200 { break }
    }
    response.body = text
    return response
}

/// A `herald gateway` process on free ports, with its state directory.
final class GatewayProcess {
    let state: URL
    let process = Process()
    let output = Pipe()
    /// Stops the gateway if the tests end first (``watchingTheTests(_:)``).
    var parentWatch: Pipe!
    var info: GatewayInfo!

    init(state: URL? = nil, arguments: [String] = [], environment: [String: String] = [:]) throws {
        self.state = state ?? FileManager.default.temporaryDirectory.appendingPathComponent("herald-gw-\(UUID())")
        process.executableURL = try heraldExecutable()
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        parentWatch = watchingTheTests(process)
        process.arguments =
            [
                "gateway", "--state", self.state.path, "--port", "0", "--dev-port", "0", "--admin-port", "0",
                "--link-port", "0", "--binary-port", "0", "--feedback-port", "0", "--channels-port", "0",
                "--channels-dev-port", "0",
            ] + arguments
        process.standardOutput = output
        // The gateway's log, for tests that read what it says (and for a failing test's reader).
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: logPath)
        try process.run()
        // Wait for the ready line (the gateway writes it once every listener is bound).
        var seen = ""
        while !seen.contains("herald gateway ready") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { throw CocoaError(.fileReadUnknown, userInfo: ["gateway": "exited before it was ready"]) }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        info = try GatewayInfo.read(directory: self.state)
    }

    var dev: String { info.developmentURL! }
    /// Where the gateway's log (its standard error) goes: `gateway.log` beside its state directory.
    var logPath: String { state.path + ".log" }
    /// What the gateway has logged so far.
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    var tls: String { info.providerURL }
    var admin: String { info.adminURL }
    var adminToken: String { info.adminToken }
    var ca: String { info.caCertificate }

    func adminCall(_ method: String, _ path: String, _ body: String? = nil) throws -> CurlResponse {
        var args = ["-X", method, admin + path, "-H", "authorization: Bearer \(adminToken)"]
        if let body { args += ["-H", "content-type: application/json", "-d", body] }
        return try call(args)
    }

    /// `curl` with `arguments`, to this gateway: a failure says whether the gateway still runs.
    func call(_ arguments: [String]) throws -> CurlResponse {
        do {
            return try curl(arguments)
        } catch {
            throw explained(error, calling: "herald gateway", process, log: log)
        }
    }

    func stop(signal: Int32 = SIGTERM) -> Int32 {
        // Only while it runs: once reaped, its id may be another process's.
        if process.isRunning { kill(process.processIdentifier, signal) }
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: logPath)
    }
}

/// A gateway with a team, a key (`.p8` written), an app, a device with the app registered, and a JWT.
struct Provisioned {
    let gateway: GatewayProcess
    let token: String
    let jwt: String
    let p8: String
    static let team = "TEAM123456"
    static let key = "KEY1234567"
    static let topic = "com.example.demo"

    init(arguments: [String] = [], state: URL? = nil, existing: Provisioned? = nil) throws {
        gateway = try GatewayProcess(state: state, arguments: arguments)
        if let existing {
            token = existing.token
            jwt = existing.jwt
            p8 = existing.p8
            return
        }
        p8 = gateway.state.appendingPathComponent("AuthKey.p8").path
        let keys = try run(
            try heraldExecutable().path,
            ["keys", "new", "--state", gateway.state.path, "--team", Self.team, "--key-id", Self.key, "--out", p8])
        #expect(keys.status == 0, "\(keys.stderr)")
        #expect(
            try gateway.adminCall("POST", "/apps", #"{"bundleID":"\#(Self.topic)","teamID":"\#(Self.team)"}"#).status
                == 201)
        #expect(try gateway.adminCall("POST", "/devices", #"{"id":"dev1"}"#).status == 201)
        let registration = try gateway.adminCall("POST", "/devices/dev1/apps", #"{"bundleID":"\#(Self.topic)"}"#)
        token = registration.json?["token"] as? String ?? ""
        jwt = try run(
            try heraldExecutable().path, ["keys", "token", "--p8", p8, "--key-id", Self.key, "--team", Self.team]
        )
        .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func push(
        _ base: String? = nil, token: String? = nil, topic: String? = Provisioned.topic,
        body: String = #"{"aps":{"alert":"hi"}}"#,
        headers: [String] = [], auth: Bool = true, http: String = "--http2-prior-knowledge", extra: [String] = []
    ) throws -> CurlResponse {
        var args = [http, (base ?? gateway.dev) + "/3/device/" + (token ?? self.token), "-d", body]
        if auth { args += ["-H", "authorization: bearer \(jwt)"] }
        if let topic { args += ["-H", "apns-topic: \(topic)"] }
        for h in headers { args += ["-H", h] }
        // To this gateway, a failure says whether it still runs.
        return try base == nil ? gateway.call(args + extra) : curl(args + extra)
    }
}

@Suite(.serialized, .ownThread) struct GatewayEndToEndTests {
    @Test func everyReasonOverRealSockets() throws {
        let p = try Provisioned()
        // Honest requests.
        let ok = try p.push(headers: ["apns-id: 4f1c0d6e-1a2b-4c3d-8e9f-0a1b2c3d4e5f"])
        #expect(ok.version == "HTTP/2" && ok.status == 200)
        #expect(ok.headers["apns-id"] == "4f1c0d6e-1a2b-4c3d-8e9f-0a1b2c3d4e5f")
        #expect(ok.headers["apns-unique-id"] != nil)
        #expect(ok.body.isEmpty)
        let cases: [(CurlResponse, Int, String)] = [
            (try p.push(token: "zz"), 400, "BadDeviceToken"),
            (try p.push(token: String(repeating: "0", count: 64)), 400, "BadDeviceToken"),
            (try p.push(token: ""), 400, "MissingDeviceToken"),
            (try p.push(topic: nil), 400, "MissingTopic"),
            (try p.push(headers: ["apns-id: nope"]), 400, "BadMessageId"),
            (try p.push(headers: ["apns-priority: 3"]), 400, "BadPriority"),
            (try p.push(headers: ["apns-push-type: fax"]), 400, "InvalidPushType"),
            (try p.push(headers: ["apns-expiration: tomorrow"]), 400, "BadExpirationDate"),
            (try p.push(headers: ["apns-collapse-id: " + String(repeating: "c", count: 65)]), 400, "BadCollapseId"),
            (try p.push(topic: "com.example.unknown"), 400, "TopicDisallowed"),
            (try p.push(topic: "bad topic"), 400, "BadTopic"),
            (try p.push(body: ""), 400, "PayloadEmpty"),
            (try p.push(body: "{" + String(repeating: " ", count: 5000) + "}"), 413, "PayloadTooLarge"),
            (try p.push(auth: false), 403, "MissingProviderToken"),
            (try p.push(headers: ["apns-push-type: background"], extra: ["-X", "GET"]), 405, "MethodNotAllowed"),
        ]
        for (response, status, reason) in cases {
            #expect(
                response.status == status && response.reason == reason, "\(reason): \(response.status) \(response.body)"
            )
            #expect(response.headers["content-type"] == "application/json")
            #expect(response.headers["apns-id"] != nil)
        }
        let path = try curl(["--http2-prior-knowledge", p.gateway.dev + "/4/notify", "-d", "{}"])
        #expect(path.status == 404 && path.reason == "BadPath")
        let duplicate = try p.push(headers: ["apns-topic: \(Provisioned.topic)"])
        #expect(duplicate.status == 400 && duplicate.reason == "DuplicateHeaders")
        let bogus = try curl([
            "--http2-prior-knowledge", p.gateway.dev + "/3/device/" + p.token, "-d", "{}",
            "-H", "authorization: bearer e30.e30.AAAA", "-H", "apns-topic: \(Provisioned.topic)",
        ])
        #expect(bogus.status == 403 && bogus.reason == "InvalidProviderToken")

        // Removing the app: 410 Unregistered with the removal time in milliseconds.
        let removed = try p.gateway.adminCall("DELETE", "/devices/dev1/apps/\(Provisioned.topic)")
        #expect(removed.status == 200)
        let gone = try p.push()
        #expect(gone.status == 410 && gone.reason == "Unregistered")
        let stamp = gone.json?["timestamp"] as? Int ?? 0
        #expect(abs(Double(stamp) / 1000 - Date().timeIntervalSince1970) < 120)

        // Every reason, including those no honest request produces, through fault rules.
        let re = try p.gateway.adminCall("POST", "/devices/dev1/apps", #"{"bundleID":"\#(Provisioned.topic)"}"#)
        #expect(re.json?["token"] as? String == p.token)  // same token back
        let reasons: [(String, Int)] = [
            ("BadCollapseId", 400), ("BadDeviceToken", 400), ("BadExpirationDate", 400), ("BadMessageId", 400),
            ("BadPriority", 400), ("BadTopic", 400), ("DeviceTokenNotForTopic", 400), ("DuplicateHeaders", 400),
            ("IdleTimeout", 400), ("InvalidPushType", 400), ("MissingDeviceToken", 400), ("MissingTopic", 400),
            ("PayloadEmpty", 400), ("TopicDisallowed", 400), ("BadCertificate", 403),
            ("BadCertificateEnvironment", 403),
            ("ExpiredProviderToken", 403), ("Forbidden", 403), ("InvalidProviderToken", 403),
            ("MissingProviderToken", 403),
            ("UnrelatedKeyIdInToken", 403), ("BadEnvironmentKeyIdInToken", 403), ("BadPath", 404),
            ("MethodNotAllowed", 405),
            ("ExpiredToken", 410), ("Unregistered", 410), ("PayloadTooLarge", 413),
            ("TooManyProviderTokenUpdates", 429),
            ("TooManyRequests", 429), ("InternalServerError", 500), ("ServiceUnavailable", 503), ("Shutdown", 503),
        ]
        #expect(reasons.count == 32)
        for (reason, status) in reasons {
            let rule = try p.gateway.adminCall(
                "POST", "/faults",
                #"{"id":"r","tokenPrefix":"\#(p.token.prefix(8))","reason":"\#(reason)","remaining":1}"#)
            #expect(rule.status == 201)
            let answer = try p.push()
            #expect(answer.status == status && answer.reason == reason, "\(reason): \(answer.status) \(answer.body)")
            #expect((answer.json?["timestamp"] != nil) == (status == 410))
        }
        // The rules were used up: the next push is accepted.
        #expect(try p.push().status == 200)
        #expect(p.gateway.stop() == 0)
    }

    @Test func tlsHTTP1AndCertificates() throws {
        let p = try Provisioned()
        let h2 = try p.push(p.gateway.tls, http: "--http2", extra: ["--cacert", p.gateway.ca])
        #expect(h2.version == "HTTP/2" && h2.status == 200)
        let h1 = try p.push(p.gateway.tls, http: "--http1.1", extra: ["--cacert", p.gateway.ca])
        #expect(h1.version == "HTTP/1.1" && h1.status == 200)
        #expect(h1.headers["apns-id"] != nil)
        let h1dev = try p.push(headers: ["apns-collapse-id: x"], http: "--http1.1")
        #expect(h1dev.version == "HTTP/1.1" && h1dev.status == 200)
        let h1bad = try p.push(token: "00", http: "--http1.1")
        #expect(h1bad.status == 400 && h1bad.reason == "BadDeviceToken")

        // An app certificate: no JWT, no apns-topic (a single-app certificate supplies it).
        let issued = try p.gateway.adminCall(
            "POST", "/apps/\(Provisioned.topic)/certificates", #"{"environments":["development"]}"#)
        #expect(issued.status == 201)
        // A validity no certificate can have is named, and the gateway goes on (one of these days
        // overflowed the seconds, and stopped it).
        for days in ["0", "3651", "106751991167301"] {
            let refused = try p.gateway.adminCall(
                "POST", "/apps/\(Provisioned.topic)/certificates", #"{"environments":["development"],"days":\#(days)}"#)
            #expect(refused.status == 400 && refused.body.contains("days: 1 to 3650"), "\(days): \(refused.body)")
        }
        let cert = p.gateway.state.appendingPathComponent("app.pem").path
        let key = p.gateway.state.appendingPathComponent("app-key.pem").path
        try (issued.json?["certificate"] as? String ?? "").write(toFile: cert, atomically: true, encoding: .utf8)
        try (issued.json?["privateKey"] as? String ?? "").write(toFile: key, atomically: true, encoding: .utf8)
        let byCert = try p.push(
            p.gateway.tls, topic: nil, auth: false, http: "--http2",
            extra: ["--cacert", p.gateway.ca, "--cert", cert, "--key", key])
        #expect(byCert.status == 200, "\(byCert.body)")
        let production = try curl([
            "--http2", "--cacert", p.gateway.ca, "--cert", cert, "--key", key,
            p.gateway.tls + "/3/device/" + p.token, "-H", "host: api.push.apple.com", "-d", #"{"aps":{"alert":"x"}}"#,
        ])
        #expect(production.status == 403 && production.reason == "BadCertificateEnvironment", "\(production.body)")
        #expect(p.gateway.stop() == 0)
    }

    @Test func killNineLosesNothingAccepted() throws {
        let p = try Provisioned(arguments: ["--offline-depth", "1000"])
        // 300 pushes on one HTTP/2 connection, 50 streams at a time (h2load; curl 7.88's -Z fails on h2c).
        let payload = p.gateway.state.appendingPathComponent("payload.json")
        try Data(#"{"aps":{"alert":"n"}}"#.utf8).write(to: payload)
        let r = try run(
            "/usr/bin/env",
            [
                "h2load", "-n", "300", "-c", "1", "-m", "50", "-d", payload.path, "-H",
                "authorization: bearer \(p.jwt)",
                "-H", "apns-topic: \(Provisioned.topic)", p.gateway.dev + "/3/device/" + p.token,
            ])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("status codes: 300 2xx, 0 3xx, 0 4xx, 0 5xx"), "\(r.stdout)")
        // No graceful anything: SIGKILL, then start again on the same state.
        #expect(p.gateway.stop(signal: SIGKILL) == SIGKILL)
        let again = try Provisioned(state: p.gateway.state, existing: p)
        let stored = try again.gateway.adminCall("GET", "/devices/dev1/stored")
        let list = (try? JSONSerialization.jsonObject(with: Data(stored.body.utf8))) as? [[String: Any]] ?? []
        #expect(list.count == 300)
        #expect(list.allSatisfy { ($0["payload"] as? String) == #"{"aps":{"alert":"n"}}"# })
        // The delivery log of one of them says accepted, then stored.
        let first = list.first?["apnsID"] as? String ?? ""
        let log = try again.gateway.adminCall("GET", "/deliveries/\(first)")
        let kinds = ((try? JSONSerialization.jsonObject(with: Data(log.body.utf8))) as? [[String: Any]] ?? [])
            .compactMap { $0["kind"] as? String }
        #expect(kinds == ["accepted", "stored"])
        #expect(again.gateway.stop() == 0)
    }

    @Test func gracefulStopFinishesStreamsInFlight() throws {
        let p = try Provisioned()
        // Make the next push wait 1.5 s before it is handled, then stop the gateway meanwhile.
        #expect(
            try p.gateway.adminCall(
                "POST", "/faults", #"{"topic":"\#(Provisioned.topic)","delayMilliseconds":1500,"remaining":1}"#
            ).status == 201)
        let payload = p.gateway.state.appendingPathComponent("late.json")
        try Data(#"{"aps":{"alert":"late"}}"#.utf8).write(to: payload)
        let client = Process()
        client.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        client.arguments = [
            "nghttp", "-nv", "-d", payload.path, "-H", "authorization: bearer \(p.jwt)", "-H",
            "apns-topic: \(Provisioned.topic)",
            p.gateway.dev + "/3/device/" + p.token,
        ]
        let out = Pipe()
        client.standardOutput = out
        try client.run()
        // The rule is used up once the gateway has the request. (Polling a real socket for that
        // moment, with a deadline; nothing here waits for time to pass.)
        let deadline = Date().addingTimeInterval(20)
        while try p.gateway.adminCall("GET", "/faults").body.trimmingCharacters(in: .whitespacesAndNewlines) != "[]" {
            #expect(Date() < deadline, "the delayed push never reached the gateway")
            if Date() >= deadline { return }
        }
        #expect(p.gateway.stop() == 0)
        let trace = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        client.waitUntilExit()
        // The stream in flight got its 200, and the connection was ended by GOAWAY with the reason.
        #expect(trace.contains(":status: 200"), "\(trace)")
        #expect(trace.contains("recv GOAWAY"))
        #expect(trace.contains(#"{"reason":"Shutdown"}"#))
        #expect(trace.contains("SETTINGS_MAX_CONCURRENT_STREAMS(0x03):1000"))
    }
}

@Suite(.serialized, .ownThread) struct GatewayStartupTests {
    /// The tests' own gateways stop when the tests do (``watchingTheTests(_:)``): closing the pipe is
    /// what the kernel does when the test process dies.
    @Test func aTestGatewayStopsByItselfWhenTheTestsEnd() throws {
        let gateway = try GatewayProcess()
        try gateway.parentWatch.fileHandleForWriting.close()
        // A safety net, not a wait: a gateway that ignored the pipe is killed, and the test fails.
        let watchdog = watchdog(gateway.process, after: 60)
        gateway.process.waitUntilExit()
        watchdog.cancel()
        #expect(gateway.process.terminationReason == .exit)
        #expect(gateway.process.terminationStatus == 0)
        #expect(gateway.log.contains("has ended; stopping"), "\(gateway.log)")
    }

    @Test func busyPortsAreNamed() throws {
        let first = try GatewayProcess()
        let tlsPort = URL(string: first.tls)!.port!
        let adminPort = URL(string: first.admin)!.port!
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("herald-gw-\(UUID())").path
        let provider = try run(
            try heraldExecutable().path,
            [
                "gateway", "--state", state, "--port", "\(tlsPort)", "--dev-port", "0", "--admin-port", "0",
                "--link-port", "0", "--binary-port", "0", "--feedback-port", "0", "--channels-port", "0",
                "--channels-dev-port", "0",
            ])
        #expect(provider.status != 0)
        #expect(provider.stderr.contains("provider API could not listen on 127.0.0.1:\(tlsPort)"), "\(provider.stderr)")
        let admin = try run(
            try heraldExecutable().path,
            [
                "gateway", "--state", state, "--port", "0", "--dev-port", "0", "--admin-port", "\(adminPort)",
                "--link-port", "0", "--binary-port", "0", "--feedback-port", "0", "--channels-port", "0",
                "--channels-dev-port", "0",
            ])
        #expect(admin.status != 0)
        #expect(admin.stderr.contains("admin API could not listen on 127.0.0.1:\(adminPort)"), "\(admin.stderr)")
        let linkPort = URL(string: first.info.linkDevelopmentURL)!.port!
        let link = try run(
            try heraldExecutable().path,
            [
                "gateway", "--state", state, "--port", "0", "--dev-port", "0", "--admin-port", "0",
                "--link-port", "\(linkPort)", "--binary-port", "0", "--feedback-port", "0", "--channels-port", "0",
                "--channels-dev-port", "0",
            ])
        #expect(link.status != 0)
        #expect(link.stderr.contains("device link could not listen on 127.0.0.1:\(linkPort)"), "\(link.stderr)")
        #expect(first.stop() == 0)
    }

    @Test(arguments: [
        (["--threads", "0"], "--threads must be at least 1"),
        (["--link-threads", "0"], "--link-threads must be at least 1"),
        (["--cluster-address", "https://10.0.0.7/"], "--cluster-address needs a host name or IP address"),
        (["--idle-timeout=-1"], "--idle-timeout must not be negative"),
        (["--max-connections-per-address=-1"], "--max-connections-per-address must not be negative"),
        (["--link-max-connections-per-address=-2"], "--link-max-connections-per-address must not be negative"),
        (["--store-queue=-1"], "--store-queue must not be negative"),
        // Durations that would overflow as nanoseconds, which stopped the gateway at start.
        (["--idle-timeout", "inf"], "--idle-timeout must be at most a century"),
        (["--link-ticket-hours", "1e12"], "--link-ticket-hours must be at most a century"),
        (["--ack-timeout", "1e11"], "--ack-timeout must be at most a century"),
        (["--link-ticket-hours", "0.0001"], "--link-ticket-hours must be 0 (no tickets) or at least a second"),
        (["--log-format", "xml"], "--log-format"),
    ])
    func badOptionsAreNamed(arguments: [String], message: String) throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("herald-gw-\(UUID())").path
        let r = try run(try heraldExecutable().path, ["gateway", "--state", state] + arguments)
        #expect(r.status != 0)
        #expect(r.stderr.contains(message), "\(r.stderr)")
        // Refused before anything was created.
        #expect(!FileManager.default.fileExists(atPath: state))
    }

    @Test func restartReusesTheStateDirectory() throws {
        let first = try GatewayProcess()
        let token = first.adminToken
        let ca = try String(contentsOfFile: first.ca, encoding: .utf8)
        #expect(first.stop() == 0)
        let second = try GatewayProcess(state: first.state)
        #expect(second.adminToken == token)
        #expect(try String(contentsOfFile: second.ca, encoding: .utf8) == ca)
        #expect(try second.adminCall("GET", "/healthz").body == #"{"status":"ok"}"#)
        #expect(try curl([second.admin + "/teams"]).status == 401)
        #expect(second.stop() == 0)
    }

    @Test func everyListenerBindsLoopbackUnlessToldOtherwise() throws {
        let local = try GatewayProcess()
        let addresses = listeningAddresses(pid: local.process.processIdentifier)
        // Provider API, development listener, device link, binary, feedback, admin API, channel
        // management over TLS and its development listener.
        #expect(addresses.count == 8, "\(addresses)")
        #expect(addresses.allSatisfy { $0.hasPrefix("127.0.0.1:") }, "\(addresses)")
        #expect(local.admin.hasPrefix("http://127.0.0.1:"))
        #expect(local.stop() == 0)

        // --listen 0.0.0.0: everything but the development listeners on every address, and the admin
        // API over TLS only, with its token.
        let open = try GatewayProcess(arguments: ["--listen", "0.0.0.0"])
        let wide = listeningAddresses(pid: open.process.processIdentifier)
        #expect(wide.filter { $0.hasPrefix("0.0.0.0:") }.count == 6, "\(wide)")
        #expect(
            Set(wide.filter { $0.hasPrefix("127.0.0.1:") })
                == [
                    "127.0.0.1:\(URL.port(open.dev))",
                    "127.0.0.1:\(URL.port(open.info.channelsDevelopmentURL ?? ""))",
                ], "\(wide)")
        #expect(open.admin.hasPrefix("https://127.0.0.1:"), "\(open.admin)")
        let port = URL.port(open.admin)
        let secure = try curl([
            "--cacert", open.ca, "https://localhost:\(port)/teams", "-H", "authorization: Bearer \(open.adminToken)",
        ])
        #expect(secure.status == 200, "\(secure)")
        #expect(try curl(["--cacert", open.ca, "https://localhost:\(port)/teams"]).status == 401)
        let plain = try RawSocket(port: port)
        plain.send("GET /teams HTTP/1.1\r\nhost: localhost\r\n\r\n")
        let answer = plain.readUntilClosed()
        #expect(answer.closed && !answer.text.contains("HTTP/1.1 200"), "\(answer)")
        #expect(open.stop() == 0)
    }

    @Test func aSecondGatewayOnTheSameStateIsRefusedAndTouchesNothing() throws {
        let first = try GatewayProcess()
        let runtime = first.state.appendingPathComponent("gateway.json")
        let before = try Data(contentsOf: runtime)
        let second = try run(
            try heraldExecutable().path,
            [
                "gateway", "--state", first.state.path, "--port", "0", "--dev-port", "0", "--admin-port", "0",
                "--link-port", "0", "--binary-port", "0", "--feedback-port", "0", "--channels-port", "0",
                "--channels-dev-port", "0",
            ])
        #expect(second.status != 0)
        let pid = first.process.processIdentifier
        #expect(
            second.stderr.contains("the state directory \(first.state.path) is in use by herald gateway, pid \(pid)"),
            "\(second.stderr)")
        #expect(try Data(contentsOf: runtime) == before)
        #expect(try first.adminCall("GET", "/healthz").status == 200)
        #expect(first.stop() == 0)
        // Once the first is gone, the directory is free again.
        let third = try GatewayProcess(state: first.state)
        #expect(third.stop() == 0)
    }
}
