import Foundation
import Testing

/// A process's resident memory in KiB (`VmRSS`), and its peak (`VmHWM`).
func residentMemory(pid: Int32) -> (now: Int, peak: Int) {
    let text =
        (FileHandle(forReadingAtPath: "/proc/\(pid)/status")?.readDataToEndOfFile()).map {
            String(decoding: $0, as: UTF8.self)
        } ?? ""
    func field(_ name: String) -> Int {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
    return (field("VmRSS"), field("VmHWM"))
}

/// HTTP/2 abuse the way attackers do it, from a raw-frame client (Tests/Clients/h2_abuse.py), each
/// against a real `herald gateway` while a well-behaved client keeps pushing on its own connection.
extension ConnectionFloodTests {
    @Suite(.serialized, .ownThread) struct HTTP2AbuseTests {
        /// One push from a well-behaved client on a connection of its own: its status and seconds.
        static func controlPush(_ p: Provisioned, _ body: URL) throws -> (status: Int, seconds: Double) {
            let r = try run(
                "/usr/bin/env",
                [
                    "curl", "-sS", "--http2-prior-knowledge", "-o", "/dev/null", "-w",
                    "%{http_code} %{time_starttransfer}",
                    "--max-time", "20", "-H", "authorization: bearer \(p.jwt)", "-H",
                    "apns-topic: \(Provisioned.topic)",
                    "--data-binary", "@\(body.path)", p.gateway.dev + "/3/device/" + p.token,
                ])
            let parts = r.stdout.split(separator: " ")
            return (Int(parts.first ?? "") ?? 0, Double(parts.last ?? "") ?? 99)
        }

        @Test func everyAttackGetsItsGoAwayAndOtherConnectionsKeepTheirLatency() throws {
            let p = try Provisioned(arguments: ["--first-bytes-timeout", "2"])
            let pid = p.gateway.process.processIdentifier
            let body = p.gateway.state.appendingPathComponent("control.json")
            try Data(#"{"aps":{"alert":"control"}}"#.utf8).write(to: body)
            // The well-behaved client's normal latency (time to the answer's first byte).
            var baseline: [Double] = []
            for _ in 0..<20 {
                let control = try Self.controlPush(p, body)
                #expect(control.status == 200)
                baseline.append(control.seconds)
            }
            let normal = baseline.sorted()[baseline.count / 2]
            let memoryBefore = residentMemory(pid: pid)

            let good = "/3/device/" + p.token
            let auth = ["authorization: bearer \(p.jwt)", "apns-topic: \(Provisioned.topic)"]
            // (attack, path, expected GOAWAY code, expected debug text)
            let attacks: [(String, String, Int, String?)] = [
                ("rapid-reset", good, 11, nil),
                ("continuation-flood", good, 11, nil),
                ("settings-flood", good, 11, nil),
                ("ping-flood", good, 11, nil),
                ("big-header", good, 1, nil),
                // Answers with a body (400 BadDeviceToken), which a window of 0 keeps from going out.
                ("zero-window", "/3/device/00", 11, "answers waited for a flow-control window that never opened"),
                ("many-streams", good, 1, nil),
            ]
            for (attack, path, code, debug) in attacks {
                let client = Process()
                client.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
                let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                    .appendingPathComponent("Clients/h2_abuse.py").path
                let portText = String(URL.port(p.gateway.dev))
                client.arguments = [script, attack, "127.0.0.1", portText, path] + auth
                // Twenty connections in a row, as an attacker who reconnects would (the slow one once).
                client.environment = ["H2_ABUSE_REPEAT": attack == "zero-window" ? "1" : "20"]
                let output = Pipe()
                client.standardOutput = output
                try client.run()
                // Meanwhile, another connection keeps pushing.
                var during: [Double] = []
                repeat {
                    let control = try Self.controlPush(p, body)
                    #expect(control.status == 200, "\(attack): a control push got \(control.status)")
                    during.append(control.seconds)
                } while client.isRunning
                let result = output.fileHandleForReading.readDataToEndOfFile()
                client.waitUntilExit()
                let json = try JSONSerialization.jsonObject(with: result) as? [String: Any] ?? [:]
                let goaway = json["goaway"] as? [String: Any]
                #expect(goaway?["code"] as? Int == code, "\(attack): \(json)")
                if let debug { #expect(goaway?["debug"] as? String == debug, "\(attack): \(json)") }
                #expect(json["allClosed"] as? Bool == true, "\(attack): a connection was not closed: \(json)")
                let codes = json["codes"] as? [Any] ?? []
                #expect(!codes.isEmpty && codes.allSatisfy { $0 as? Int == code }, "\(attack): \(codes)")
                // Within their normal latency: no control answer slower than 50 times the median before
                // the attacks, or a quarter of a second, whichever is more.
                let worst = during.max() ?? 0
                // Said only when it fails: a passing run prints nothing.
                let summary =
                    "h2 abuse: \(attack): GOAWAY \(goaway?["name"] ?? "none") after \(json["seconds"] ?? "?") s; "
                    + "\(during.count) control pushes, worst \(worst) s (normally \(normal) s); "
                    + "gateway RSS \(residentMemory(pid: pid).now) KiB"
                #expect(worst < max(0.25, 50 * normal), "\(summary)")
            }

            // Streams opened and never finished are reset (CANCEL) at the deadline; the connection stays.
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Clients/h2_abuse.py").path
            let unfinished = try run(
                "/usr/bin/python3",
                [script, "unfinished-streams", "127.0.0.1", String(URL.port(p.gateway.dev)), good] + auth)
            let held = try JSONSerialization.jsonObject(with: Data(unfinished.stdout.utf8)) as? [String: Any] ?? [:]
            #expect(held["resets"] as? Int == 100, "\(held)")
            #expect(held["goaway"] is NSNull, "\(held)")
            #expect((held["seconds"] as? Double ?? 0) >= 1.9, "\(held)")

            // Bodies that do not add up to their content-length (short, long, not a number) are
            // malformed: each stream is reset with PROTOCOL_ERROR, and the push after them on the same
            // connection is delivered.
            let lies = try run(
                "/usr/bin/python3",
                [script, "content-length-lies", "127.0.0.1", String(URL.port(p.gateway.dev)), good] + auth)
            let lied = try JSONSerialization.jsonObject(with: Data(lies.stdout.utf8)) as? [String: Any] ?? [:]
            #expect(lied["resetCodes"] as? [String: Int] == ["1": 1, "3": 1, "5": 1], "\(lied)")
            #expect(lied["statuses"] as? [String: Int] == ["7": 200], "\(lied)")
            #expect(lied["goaway"] is NSNull, "\(lied)")

            // The process is up, answers, and its memory stayed bounded.
            #expect(p.gateway.process.isRunning)
            #expect(try p.gateway.adminCall("GET", "/healthz").status == 200)
            let memoryAfter = residentMemory(pid: pid)
            #expect(
                memoryAfter.now - memoryBefore.now < 64 * 1024,
                "resident memory grew from \(memoryBefore.now) KiB to \(memoryAfter.now) KiB")
            // Every attack's connection was closed with a logged reason.
            #expect(p.gateway.log.contains("reason=MaxStreamsViolation"), "\(p.gateway.log)")
            #expect(p.gateway.log.contains("answers waited 2 s for a flow-control window"))
            #expect(p.gateway.stop() == 0)
        }
    }
}
