import Crypto
import Foundation
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldGateway

/// An HTTP exchange with curl: the status, the headers (names lower-cased) and the body.
struct Exchange {
    var status: Int
    var headers: [String: String]
    var body: String
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]) ?? [:] }

    /// Runs curl on a thread of its own: waiting for it on one of the (two, on this machine) threads
    /// Swift's concurrency runs on would starve the gateway in the same process.
    static func curl(_ method: String, _ url: String, headers: [String] = [], body: String? = nil) async throws
        -> Exchange
    {
        try await offThread { try blockingCurl(method, url, headers: headers, body: body) }
    }

    /// A shell command's standard output, run off Swift concurrency's threads like ``curl(_:_:headers:body:)``.
    static func shell(_ command: String) async throws -> String {
        try await offThread {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", command]
            let out = Pipe()
            process.standardOutput = out
            try process.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
    }

    static func blockingCurl(_ method: String, _ url: String, headers: [String], body: String?) throws -> Exchange {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            ["curl", "-sS", "-i", "--max-time", "20", "-X", method, url] + headers.flatMap { ["-H", $0] }
            + (body.map { ["-H", "content-type: application/json", "--data-binary", $0] } ?? [])
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard let split = text.range(of: "\r\n\r\n") else { return Exchange(status: 0, headers: [:], body: text) }
        let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        let status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
        return Exchange(status: status, headers: headers, body: String(text[split.upperBound...]))
    }
}

/// The push console's server side: its sign-in, cookie and CSRF rules, and its sends, which go through
/// the real provider API. (The page itself is driven in Chromium by heraldTests' ConsoleEndToEndTests.)
@Suite struct ConsoleTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func theSessionCookieIsHttpOnlyStrictAndAChangeNeedsItsCSRFTokenFromTheConsolesOrigin() async throws {
        let clock = ManualClock(now: Self.start)
        let gateway = try await TestGateway.start(apps: ["com.example.console"], clock: clock)
        let admin = try #require(gateway.info["adminURL"])
        let token = gateway.gateway.adminToken

        // The page and its files are open; everything else wants the token or a session.
        #expect(try await Exchange.curl("GET", admin + "/console").status == 200)
        #expect(try await Exchange.curl("GET", admin + "/console/files/console.js").status == 200)
        let escape = try await Exchange.curl("GET", admin + "/console/files/..%2Fgateway.sqlite")
        #expect(escape.status == 404, "\(escape)")
        #expect(try await Exchange.curl("GET", admin + "/devices").status == 401)

        // A wrong token; the right one from another site's page (login forgery); the right one.
        let wrong = try await Exchange.curl("POST", admin + "/console/session", body: #"{"token":"nope"}"#)
        #expect(wrong.status == 401 && wrong.headers["set-cookie"] == nil)
        let forgedSignIn = try await Exchange.curl(
            "POST", admin + "/console/session", headers: ["origin: http://evil.example"],
            body: #"{"token":"\#(token)"}"#)
        #expect(forgedSignIn.status == 403 && forgedSignIn.headers["set-cookie"] == nil)
        let signIn = try await Exchange.curl("POST", admin + "/console/session", body: #"{"token":"\#(token)"}"#)
        #expect(signIn.status == 200)
        let setCookie = try #require(signIn.headers["set-cookie"])
        #expect(setCookie.hasPrefix("herald_console="))
        for attribute in ["Path=/", "Max-Age=43200", "HttpOnly", "SameSite=Strict"] {
            #expect(setCookie.contains("; \(attribute)"), "\(setCookie)")
        }
        #expect(!setCookie.contains("Secure"), "served on loopback without TLS")
        let cookie = "cookie: " + String(setCookie.split(separator: ";")[0])
        let csrf = try #require(signIn.json["csrf"] as? String)
        #expect(
            try await Exchange.curl("GET", admin + "/console/session", headers: [cookie]).json["csrf"] as? String
                == csrf)

        // Reading with the cookie; changing needs the CSRF token, and a browser's Origin must be the console's.
        #expect(try await Exchange.curl("GET", admin + "/devices", headers: [cookie]).status == 200)
        let rule = #"{"reason":"BadDeviceToken"}"#
        let noToken = try await Exchange.curl("POST", admin + "/faults", headers: [cookie], body: rule)
        #expect(noToken.status == 403 && noToken.body.contains("x-herald-csrf"), "\(noToken)")
        let wrongToken = try await Exchange.curl(
            "POST", admin + "/faults", headers: [cookie, "x-herald-csrf: \(csrf)x"], body: rule)
        #expect(wrongToken.status == 403)
        let foreign = try await Exchange.curl(
            "POST", admin + "/faults", headers: [cookie, "x-herald-csrf: \(csrf)", "origin: http://localhost:1"],
            body: rule)
        #expect(foreign.status == 403 && foreign.body.contains("origin"), "\(foreign)")
        #expect(gateway.gateway.faults.all.isEmpty)
        let host = String(admin.dropFirst("http://".count))
        let added = try await Exchange.curl(
            "POST", admin + "/faults", headers: [cookie, "x-herald-csrf: \(csrf)", "origin: http://\(host)"],
            body: rule)
        #expect(added.status == 201 && gateway.gateway.faults.all.count == 1, "\(added)")

        // A cookie altered, or signed for another admin token, is no session.
        let value = String(setCookie.split(separator: ";")[0].dropFirst("herald_console=".count))
        let (expiry, mac) = (value.split(separator: ".")[0], value.split(separator: ".")[1])
        let later = "cookie: herald_console=\(Int(expiry)! + 3600).\(mac)"
        #expect(try await Exchange.curl("GET", admin + "/devices", headers: [later]).status == 401)
        let other = ConsoleSession(adminToken: token + "x").cookie(now: clock.now())
        #expect(
            try await Exchange.curl("GET", admin + "/devices", headers: ["cookie: herald_console=\(other)"]).status
                == 401)

        // Twelve hours on, the session is over.
        clock.advance(by: ConsoleSession.lifetime - 1)
        #expect(try await Exchange.curl("GET", admin + "/devices", headers: [cookie]).status == 200)
        clock.advance(by: 1)
        #expect(try await Exchange.curl("GET", admin + "/devices", headers: [cookie]).status == 401)

        // Signing out clears the cookie (it needs the CSRF token too: a forged sign-out is refused).
        let fresh = try await Exchange.curl("POST", admin + "/console/session", body: #"{"token":"\#(token)"}"#)
        let freshCookie = "cookie: " + String(try #require(fresh.headers["set-cookie"]).split(separator: ";")[0])
        #expect(try await Exchange.curl("DELETE", admin + "/console/session", headers: [freshCookie]).status == 403)
        let out = try await Exchange.curl(
            "DELETE", admin + "/console/session",
            headers: [freshCookie, "x-herald-csrf: \(try #require(fresh.json["csrf"] as? String))"])
        #expect(out.status == 204 && out.headers["set-cookie"]?.contains("Max-Age=0") == true, "\(out)")
        await gateway.stop()
    }

    @Test func aSendGoesThroughTheProviderAPIWithATokenOrACertificateAndReachesTheDevice() async throws {
        let app = "com.example.console"
        let gateway = try await TestGateway.start(apps: [app])
        let device = try await gateway.device()
        let deviceToken = try await device.token(for: app)
        let admin = try #require(gateway.info["adminURL"])
        let bearer = "authorization: Bearer \(gateway.gateway.adminToken)"
        func send(_ fields: [String: Any]) async throws -> [String: Any] {
            var form: [String: Any] = [
                "authentication": "token", "keyID": TestGateway.keyID, "privateKey": gateway.p8,
                "environment": "development", "app": app, "token": deviceToken, "pushType": "alert",
                "payload": #"{"aps":{"alert":{"title":"Console","body":"hello"}}}"#,
            ]
            form.merge(fields) { $1 }
            let body = String(decoding: try JSONSerialization.data(withJSONObject: form), as: UTF8.self)
            let exchange = try await Exchange.curl("POST", admin + "/console/send", headers: [bearer], body: body)
            #expect(exchange.status == 200, "\(exchange)")
            return exchange.json
        }

        // With the key: over the development listener, 200, and the device shows it.
        let byToken = try await send([:])
        let answer = try #require(byToken["answer"] as? [String: Any])
        #expect(answer["status"] as? Int == 200 && answer["uniqueID"] is String, "\(byToken)")
        #expect(answer["url"] as? String == gateway.developmentURL)
        #expect(await device.nextPresentation()?.title == "Console")
        #expect((byToken["curl"] as? String)?.contains("authorization: bearer ey") == true)
        // With a certificate the gateway issues for the send: over TLS.
        let byCertificate = try await send([
            "authentication": "certificate", "payload": #"{"aps":{"alert":"by certificate"}}"#,
        ])
        let certificateAnswer = try #require(byCertificate["answer"] as? [String: Any])
        #expect(certificateAnswer["status"] as? Int == 200, "\(byCertificate)")
        #expect((certificateAnswer["url"] as? String)?.hasPrefix("https://") == true)
        #expect(await device.nextPresentation()?.body == "by certificate")
        // Its curl command, run where the certificate Devices & apps downloads lies, sends the same push.
        let issued = try await Exchange.curl(
            "POST", admin + "/apps/\(app)/certificates", headers: [bearer], body: #"{"environments":["development"]}"#)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("console-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // As the page writes it: the certificate, then its key.
        let blocks = ["certificate", "privateKey"].map {
            (issued.json[$0] as? String ?? "").trimmingCharacters(in: .whitespacesAndNewlines) + "\n"
        }
        try blocks.joined()
            .write(to: folder.appendingPathComponent("\(app).pem"), atomically: true, encoding: .utf8)
        let command = try #require(byCertificate["curl"] as? String)
        let shown = try await Exchange.shell("cd '\(folder.path)' && " + command + " -sS --max-time 20")
        #expect(shown.hasPrefix("HTTP/2 200"), "\(command)\n\(shown)")
        #expect(await device.nextPresentation()?.body == "by certificate")
        // The provider API answered them: its counters say so.
        let metrics = try await Exchange.curl("GET", admin + "/metrics", headers: [bearer]).body
        #expect(metrics.contains(#"herald_provider_requests_total{status="200",reason=""} 3"#), "\(metrics)")

        // The provider API's own answers come back as they are: a development token in production.
        let production = try await send(["environment": "production"])
        let productionAnswer = try #require(production["answer"] as? [String: Any])
        #expect(productionAnswer["status"] as? Int == 400 && productionAnswer["reason"] as? String == "BadDeviceToken")

        // Checked before sending, naming the key or field: what the gateway would refuse; nothing goes out.
        let checks: [([String: Any], String)] = [
            (["payload": #"{"aps":{"alert":"hi"}"#], "payload"),
            (["payload": #"{"aps":{"alert":""# + String(repeating: "x", count: 4100) + #""}}"#], "payload"),
            (
                ["pushType": "background", "priority": 10, "payload": #"{"aps":{"content-available":1}}"#],
                "apns-priority"
            ),
            (["priority": 7], "apns-priority"),
            (["pushType": "fax"], "apns-push-type"),
            (["token": "not-hex"], "token"),
            (["privateKey": "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----"], "privateKey"),
            (["privateKey": P256.Signing.PrivateKey().pemRepresentation], "privateKey"),
            (["keyID": "NOSUCHKEY1"], "keyID"),
            (["authentication": "certificate", "app": "com.example.unknown"], "app"),
            (["authentication": "password"], "authentication"),
        ]
        for (fields, key) in checks {
            let result = try await send(fields)
            #expect((result["invalid"] as? [String: Any])?["key"] as? String == key, "\(fields): \(result)")
            #expect(result["answer"] == nil)
        }
        let after = try await Exchange.curl("GET", admin + "/metrics", headers: [bearer]).body
        #expect(after.contains(#"herald_provider_requests_total{status="200",reason=""} 3"#))
        // The history has the three sends, newest first, both acknowledged by the device.
        let history = try await Exchange.curl(
            "GET", admin + "/deliveries?app=\(app)&status=acknowledged", headers: [bearer])
        let entries = try JSONSerialization.jsonObject(with: Data(history.body.utf8)) as? [[String: Any]] ?? []
        #expect(entries.count == 3 && entries.allSatisfy { $0["topic"] as? String == app }, "\(history)")
        for (query, field) in [("status=sent", "status: one of"), ("limit=0", "limit: 1 to 1000")] {
            let refused = try await Exchange.curl("GET", admin + "/deliveries?\(query)", headers: [bearer])
            #expect(refused.status == 400 && refused.body.contains(field), "\(query): \(refused)")
        }
        // A dry run gives the commands and sends nothing.
        let dry = try await send(["dryRun": true])
        #expect(
            dry["answer"] == nil && dry["invalid"] == nil && (dry["herald"] as? String)?.contains("--key-id") == true)
        #expect(dry["warnings"] == nil)

        // What Apple accepts and handles quietly is not refused but named: by the console's own check
        // on a dry run, and by the gateway's herald-warnings header on a send.
        func warned(_ result: [String: Any]) -> [String] {
            (result["warnings"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        }
        let background = try await send([
            "pushType": "background", "priority": 5, "payload": #"{"aps":{"alert":"hi"}}"#, "dryRun": true,
        ])
        #expect(background["invalid"] == nil && background["answer"] == nil, "\(background)")
        #expect(warned(background) == ["BackgroundWithAlert", "BackgroundWithoutContentAvailable"], "\(background)")
        let badge = try await send(["payload": #"{"aps":{"alert":"hi","badge":"seven"}}"#])
        let badgeAnswer = try #require(badge["answer"] as? [String: Any])
        #expect(badgeAnswer["status"] as? Int == 200 && badgeAnswer["warnings"] as? String == "BadgeNotANumber")
        #expect(warned(badge) == ["BadgeNotANumber"], "\(badge)")
        let explained = (badge["warnings"] as? [[String: Any]])?.first
        #expect((explained?["source"] as? String) == "Generating a remote notification", "\(badge)")

        // A key's .p8 given to the console (as `herald up` gives the demo key's) is what the Send form
        // starts with; only the private half of one of this gateway's keys is taken.
        let keys = admin + "/console/keys/"
        let wrongHalf = try await Exchange.curl(
            "PUT", keys + TestGateway.keyID, headers: [bearer], body: P256.Signing.PrivateKey().pemRepresentation)
        #expect(wrongHalf.status == 400 && wrongHalf.body.contains("not the private half"), "\(wrongHalf)")
        let unknown = try await Exchange.curl("PUT", keys + "NOSUCHKEY1", headers: [bearer], body: gateway.p8)
        #expect(unknown.status == 404, "\(unknown)")
        let kept = try await Exchange.curl("PUT", keys + TestGateway.keyID, headers: [bearer], body: gateway.p8)
        #expect(kept.status == 204, "\(kept)")
        let settings = try await Exchange.curl("GET", admin + "/console/settings", headers: [bearer]).json
        #expect((settings["signingKeys"] as? [String: String])?[TestGateway.keyID] == gateway.p8)
        #expect((settings["warnings"] as? [[String: Any]])?.count == PushWarning.allCases.count)

        // The app removed from the device: its token is on the feedback list, which reading leaves as it is.
        let token = try #require(DeviceToken(hex: deviceToken))
        let registration = try #require(gateway.gateway.directory.registry.registration(token, in: .development))
        _ = try await gateway.gateway.directory.unregisterApp(
            device: registration.deviceID, bundleID: app, environment: .development, now: gateway.clock.now())
        for _ in 0..<2 {
            let feedback = try await Exchange.curl(
                "GET", admin + "/feedback/\(app)?environment=development", headers: [bearer])
            #expect(feedback.status == 200 && feedback.body.contains(deviceToken), "\(feedback)")
        }

        await device.stop()
        await gateway.stop()
    }

    @Test func theLiveStreamSendsTheMetricsCountersAsEvents() async throws {
        let gateway = try await TestGateway.start(apps: ["com.example.console"])
        let admin = try #require(gateway.info["adminURL"])
        // A push answered 410 by a fault rule, so a counter other than zero is in the stream.
        gateway.gateway.faults.add(FaultRule(reason: .unregistered))
        let token = try await gateway.token(for: "com.example.console")
        let client = try gateway.providerClient()
        await #expect(throws: APNsError.self) {
            try await client.send(
                APNsNotification(payload: Data(#"{"aps":{"alert":"x"}}"#.utf8), topic: "com.example.console"), to: token
            )
        }
        try await client.shutdown()
        let lines = try await Self.firstEvent(
            admin + "/console/events", headers: ["authorization: Bearer \(gateway.gateway.adminToken)"])
        #expect(lines.first == "event: metrics", "\(lines)")
        #expect(
            lines.contains(#"data: herald_provider_requests_total{status="410",reason="Unregistered"} 1"#), "\(lines)")
        #expect(lines.contains { $0.hasPrefix("data: herald_devices_online 0") }, "\(lines)")
        #expect(!lines.contains { $0.hasPrefix("data: #") }, "comments are left out")
        await gateway.stop()
    }

    /// The first Server-Sent Event of a stream, read with curl as it arrives (then curl is stopped).
    static func firstEvent(_ url: String, headers: [String]) async throws -> [String] {
        try await offThread {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["curl", "-sS", "-N", "--max-time", "20", url] + headers.flatMap { ["-H", $0] }
            let out = Pipe()
            process.standardOutput = out
            try process.run()
            defer {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
            var text = ""
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                // read(2) itself: it returns what the pipe has (FileHandle's reads may wait for more).
                let count = read(out.fileHandleForReading.fileDescriptor, &buffer, buffer.count)
                if count <= 0 { break }
                text += String(decoding: buffer[..<count], as: UTF8.self)
                // The opening comment, then one event up to its blank line.
                let events = text.components(separatedBy: "\n\n").filter { !$0.hasPrefix(":") }
                if events.count >= 2 { return events[0].components(separatedBy: "\n") }
            }
            return text.components(separatedBy: "\n")
        }
    }
}
