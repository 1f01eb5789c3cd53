import Foundation
import Testing

/// Clients that reset their streams after the answers, as real ones do (docs/listeners.md, "What
/// clients send"): APNSwift resets some streams with CANCEL, curl every stream with STREAM_CLOSED. A
/// reset of an answered stream costs the gateway nothing, and none of them is cut off for it. (Counting
/// every RST_STREAM, swift-nio-http2's default of 200 in 30 s, cut them off within a second under load.)
/// The suites that flood one gateway connection (HTTP/2 attacks, 20,000 pushes from one client): each
/// keeps both cores busy for seconds, so they take turns rather than overlap, which starved the
/// in-process suites running beside them on the two-core CI machine.
@Suite(.serialized, .ownThread) enum ConnectionFloodTests {}

extension ConnectionFloodTests {
    @Suite(.serialized, .ownThread) struct ResettingClientsTests {
        static let clients = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Clients")

        /// 20,000 pushes on one connection, 100 in flight, each stream reset (CANCEL) once answered: every
        /// push is answered 200, and the connection gets no GOAWAY.
        @Test func twentyThousandPushesEachResetAfterItsAnswerAllSucceed() throws {
            let p = try Provisioned(arguments: ["--durability", "normal"])
            let r = try run(
                "/usr/bin/python3",
                [
                    Self.clients.appendingPathComponent("h2_resetting_client.py").path, "127.0.0.1",
                    String(URL.port(p.gateway.dev)), "/3/device/" + p.token, "20000", "100", "8",
                    "authorization: bearer \(p.jwt)", "apns-topic: \(Provisioned.topic)",
                ])
            let json = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any] ?? [:]
            #expect(json["statuses"] as? [String: Int] == ["200": 20_000], "\(json) \(r.stderr)")
            #expect(json["resets"] as? Int == 20_000, "\(json)")
            #expect(json["goaway"] is NSNull, "\(json)")
            #expect(json["closed"] as? Bool == false, "\(json)")
            #expect(
                !p.gateway.log.contains("ExcessiveRSTFrames") && !p.gateway.log.contains("reset before their answers"))
            #expect(p.gateway.stop() == 0)
        }

        /// curl's parallel transfers share one HTTP/2 connection and reset every stream (STREAM_CLOSED)
        /// after its answer: 1,000 of them are all answered 200.
        @Test func curlsParallelPushesOnOneConnectionAreAllAnswered() throws {
            let p = try Provisioned(arguments: ["--durability", "normal"])
            let config = p.gateway.state.appendingPathComponent("curl.cfg")
            let url = p.gateway.tls + "/3/device/" + p.token
            try String(repeating: "url = \"\(url)\"\n", count: 1_000).write(
                to: config, atomically: true, encoding: .utf8)
            let r = try run(
                "/usr/bin/env",
                [
                    "curl", "-sS", "--no-progress-meter", "--http2", "--cacert", p.gateway.ca, "--parallel",
                    "--parallel-max", "100", "-K", config.path,
                    "-o", "/dev/null", "-w", "%{http_code} %{num_connects}\n", "--max-time", "60",
                    "-H", "authorization: bearer \(p.jwt)", "-H", "apns-topic: \(Provisioned.topic)",
                    "-d", #"{"aps":{"alert":"one of many"}}"#,
                ])
            let lines = r.stdout.split(separator: "\n")
            #expect(lines.count == 1_000)
            #expect(r.stderr.isEmpty, "\(r.stderr)")
            #expect(lines.allSatisfy { $0.hasPrefix("200 ") }, "\(Set(lines))")
            // One connection carried them all (each transfer says how many connections it opened).
            #expect(lines.map { Int($0.split(separator: " ").last ?? "") ?? 0 }.reduce(0, +) == 1, "\(Set(lines))")
            #expect(!p.gateway.log.contains("ExcessiveRSTFrames"))
            #expect(p.gateway.stop() == 0)
        }
    }
}
