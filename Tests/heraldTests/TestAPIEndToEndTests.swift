import Foundation
import Testing

/// The test API (docs/testing.md) against a real `herald gateway`: the Python example in the doc runs
/// as written, and each route's answers (reached, ended, timed out, bad input, reset) over curl.
@Suite(.serialized, .ownThread) struct TestAPIEndToEndTests {
    static let doc = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/testing.md")

    /// The doc's Python block, as written.
    static func example() throws -> String {
        let text = try String(contentsOf: doc, encoding: .utf8)
        let start = try #require(text.range(of: "```python\n"))
        let end = try #require(text.range(of: "\n```", range: start.upperBound..<text.endIndex))
        return String(text[start.upperBound..<end.lowerBound])
    }

    @Test func theDocsPythonExampleRunsAgainstARealGateway() throws {
        let p = try Provisioned(arguments: ["--test-api"])
        let script = p.gateway.state.appendingPathComponent("example.py")
        try Self.example().write(to: script, atomically: true, encoding: .utf8)
        let herald = try heraldExecutable()
        let environment = [
            "HERALD_ADMIN_URL=\(p.gateway.admin)", "HERALD_ADMIN_TOKEN=\(p.gateway.adminToken)",
            "HERALD_PROVIDER_URL=\(p.gateway.dev)", "HERALD_JWT=\(p.jwt)", "HERALD_TOPIC=\(Provisioned.topic)",
            "HERALD_GATEWAY_STATE=\(p.gateway.state.path)",
            "PATH=\(herald.deletingLastPathComponent().path):/usr/bin:/bin",
        ]
        let result = try run("/usr/bin/env", ["-i"] + environment + ["/usr/bin/python3", script.path])
        #expect(result.status == 0 && result.stdout == "ok\n", "\(result.stdout)\n\(result.stderr)")
        // The reset removed the device the Provisioned gateway had made; the example's own is there.
        let devices = try p.gateway.adminCall("GET", "/devices").body
        #expect(!devices.contains(#""id":"dev1""#), "\(devices)")
        #expect(p.gateway.stop() == 0)
    }

    @Test func waitsAnswerReachedEndedOrTimedOutAndResetEmptiesTheGateway() throws {
        let p = try Provisioned(arguments: ["--test-api"])
        func wait(_ query: String) throws -> CurlResponse { try p.gateway.adminCall("GET", "/test/wait?\(query)") }

        // Bad input names the field.
        for (query, field) in [
            ("state=acknowledged", "id, token or topic"), ("id=x&token=ab&state=stored", "id, token or topic"),
            ("id=x&state=sent", "state:"), ("token=zz&state=stored", "token:"),
            ("id=x&state=stored&timeout=61", "timeout:"), ("topic=t&state=stored&since=yesterday", "since:"),
        ] {
            let answer = try wait(query)
            #expect(answer.status == 400 && answer.body.contains(field), "\(query): \(answer.status) \(answer.body)")
        }

        // dev1 is offline: a push is stored. Waiting for it to be stored answers at once; for it to be
        // acknowledged, 200 with timedOut once the timeout passes, with the steps so far.
        let stored = try p.push().headers["apns-id"] ?? ""
        let reached = try wait("id=\(stored)&state=stored-device-offline")
        #expect(reached.status == 200 && reached.json?["reached"] as? Bool == true, "\(reached.body)")
        let late = try wait("id=\(stored)&state=acknowledged&timeout=0.3")
        #expect(late.status == 200 && late.json?["reached"] as? Bool == false, "\(late.body)")
        #expect(late.json?["timedOut"] as? Bool == true, "\(late.body)")
        #expect((late.json?["events"] as? [[String: Any]])?.count == 2)

        // A push that ends another way: 409 with how it ended.
        let rule = try p.gateway.adminCall(
            "POST", "/faults", #"{"tokenPrefix":"\#(p.token.prefix(8))","reason":"BadDeviceToken","remaining":1}"#)
        #expect(rule.status == 201)
        let mark = try #require(p.gateway.adminCall("POST", "/test/marks").json?["mark"] as? String)
        let refused = try p.push().headers["apns-id"] ?? ""
        let ended = try wait("id=\(refused)&state=acknowledged")
        #expect(ended.status == 409 && ended.json?["ended"] as? String == "rejected", "\(ended.body)")

        // The next push to a token, waited for before it is sent: the wait counts from a mark taken
        // before curl starts, so the push below is its next one whenever curl's request lands.
        let before = try #require(p.gateway.adminCall("POST", "/test/marks").json?["mark"] as? String)
        let waiting = try Child(
            URL(fileURLWithPath: "/usr/bin/curl"),
            [
                "-sS", "-w", "\n", "-H", "authorization: Bearer \(p.gateway.adminToken)",
                p.gateway.admin + "/test/wait?token=\(p.token)&state=stored&since=\(before)&timeout=20",
            ])
        let next = try p.push(body: #"{"aps":{"alert":"the next one"}}"#).headers["apns-id"] ?? ""
        let woke = try #require(waiting.reader.json())
        #expect(woke["reached"] as? Bool == true && woke["apnsID"] as? String == next, "\(woke)")
        // With a mark, the push before it is the next one since the mark.
        let sinceMark = try wait("token=\(p.token)&state=rejected&since=\(mark)")
        #expect(sinceMark.status == 200 && sinceMark.json?["apnsID"] as? String == refused, "\(sinceMark.body)")

        // Reset: no devices, no pushes, no log, no rules; the token is unknown now; the key still works.
        #expect(try p.gateway.adminCall("POST", "/faults", #"{"reason":"Shutdown"}"#).status == 201)
        #expect(try p.gateway.adminCall("POST", "/test/reset").status == 204)
        #expect(try p.gateway.adminCall("GET", "/devices").body == "[]")
        #expect(try p.gateway.adminCall("GET", "/faults").body == "[]")
        #expect(try p.gateway.adminCall("GET", "/deliveries").body == "[]")
        #expect(try p.gateway.adminCall("GET", "/delivery-metrics").json?["counts"] as? [Any] != nil)
        #expect((try p.gateway.adminCall("GET", "/delivery-metrics").json?["counts"] as? [Any])?.isEmpty == true)
        #expect(try p.gateway.adminCall("GET", "/deliveries/\(stored)").status == 404)
        let after = try p.push()
        #expect(after.status == 400 && after.reason == "BadDeviceToken", "\(after.status) \(after.body)")
        #expect(try p.gateway.adminCall("POST", "/devices", #"{"id":"dev1"}"#).status == 201, "the id is free again")
        #expect(p.gateway.stop() == 0)
    }

    @Test func withoutTheFlagTheTestAPIIsOffAndSaysHowToTurnItOn() throws {
        let p = try Provisioned()
        for (method, path) in [
            ("POST", "/test/reset"), ("GET", "/test/wait?id=x&state=stored"), ("POST", "/test/marks"),
        ] {
            let answer = try p.gateway.adminCall(method, path)
            #expect(answer.status == 404 && answer.body.contains("--test-api"), "\(path): \(answer.body)")
        }
        #expect(try p.gateway.adminCall("GET", "/devices").body.contains("dev1"), "nothing was erased")
        #expect(p.gateway.stop() == 0)
    }
}
