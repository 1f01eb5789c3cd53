import Foundation
import Testing

/// Connection faults (docs/admin-api.md) set with `herald gateway faults add` on a real gateway, seen
/// by real clients: nghttp's frame trace, h2load's counts, curl's errors and timings.
@Suite(.serialized, .ownThread) struct ConnectionFaultsEndToEndTests {
    /// `herald gateway faults <arguments>` against `p`'s gateway; its output.
    func faults(_ p: Provisioned, _ arguments: [String]) throws -> String {
        let r = try run(
            try heraldExecutable().path, ["gateway", "faults"] + arguments + ["--state", p.gateway.state.path])
        #expect(r.status == 0, "\(arguments): \(r.stderr)")
        return r.stdout
    }

    static func client(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Clients/\(name)").path
    }

    /// One push with nghttp, its frames traced (`-v`).
    func nghttp(_ p: Provisioned) throws -> String {
        let payload = p.gateway.state.appendingPathComponent("nghttp.json")
        try Data(#"{"aps":{"alert":"traced"}}"#.utf8).write(to: payload)
        let r = try run(
            "/usr/bin/env",
            [
                "nghttp", "-v", "-d", payload.path, "-H", "authorization: bearer \(p.jwt)", "-H",
                "apns-topic: \(Provisioned.topic)", p.gateway.dev + "/3/device/" + p.token,
            ])
        return r.stdout + r.stderr
    }

    @Test func goAwayAtOnceAfterStreamsAndDuringADrain() throws {
        let p = try Provisioned()
        // At once, with a chosen error and reason: the push is answered, then GOAWAY.
        let added = try faults(
            p,
            [
                "add", "--connection", "goaway", "--goaway-error", "ENHANCE_YOUR_CALM", "--goaway-reason",
                "TooManyRequests", "--remaining", "1",
            ])
        #expect(added.hasPrefix("fault-") && added.contains("connection goaway"), "\(added)")
        // A client that reads on after its answer (nghttp stops reading once its last stream is done).
        let port = URL(string: p.gateway.dev)!.port!
        let seen = try run(
            "/usr/bin/python3",
            [
                Self.client("h2_goaway.py"), "127.0.0.1", "\(port)", "/3/device/" + p.token, #"{"aps":{"alert":"x"}}"#,
                "authorization: bearer \(p.jwt)", "apns-topic: \(Provisioned.topic)",
            ])
        let answer = try #require(
            (try? JSONSerialization.jsonObject(with: Data(seen.stdout.utf8))) as? [String: Any], "\(seen)")
        #expect(answer["status"] as? Int == 200 && answer["closed"] as? Bool == true, "\(answer)")
        let goaway = try #require(answer["goaway"] as? [String: Any], "\(answer)")
        #expect(goaway["code"] as? Int == 0x0B && goaway["lastStream"] as? Int == 1, "\(goaway)")
        #expect(goaway["debug"] as? String == #"{"reason":"TooManyRequests"}"#, "\(goaway)")

        // After 5 streams: h2load, one connection, one stream at a time: 5 answered, the rest refused.
        _ = try faults(p, ["add", "--connection", "goaway", "--after-streams", "5", "--remaining", "1"])
        let payload = p.gateway.state.appendingPathComponent("h2load.json")
        try Data(#"{"aps":{"alert":"n"}}"#.utf8).write(to: payload)
        let load = try run(
            "/usr/bin/env",
            [
                "h2load", "-n", "20", "-c", "1", "-m", "1", "-d", payload.path, "-H", "authorization: bearer \(p.jwt)",
                "-H", "apns-topic: \(Provisioned.topic)", p.gateway.dev + "/3/device/" + p.token,
            ])
        #expect(load.stdout.contains("5 succeeded"), "\(load.stdout)")
        #expect(load.stdout.contains("status codes: 5 2xx"), "\(load.stdout)")

        // A drain: 503 Shutdown, then GOAWAY {"reason":"Shutdown"}.
        _ = try faults(p, ["add", "--reason", "Shutdown", "--connection", "goaway", "--remaining", "1"])
        let drain = try nghttp(p)
        #expect(drain.contains(":status: 503") && drain.contains(#"{"reason":"Shutdown"}"#), "\(drain)")
        #expect(drain.contains("recv GOAWAY frame") && drain.contains("error_code=NO_ERROR"), "\(drain)")
        #expect(try faults(p, ["list"]) == "no fault rules\n", "every rule was used up")
        #expect(p.gateway.stop() == 0)
    }

    @Test func closeLowerStreamsAndRefuseTheHandshake() throws {
        let p = try Provisioned()
        // Closed mid-stream: curl gets no answer; the next push is answered; the log says what happened.
        _ = try faults(
            p, ["add", "--connection", "close", "--remaining", "1", "--token-prefix", String(p.token.prefix(6))])
        let closed = try run(
            "/usr/bin/env",
            [
                "curl", "-sS", "--http2-prior-knowledge", "--max-time", "10", p.gateway.dev + "/3/device/" + p.token,
                "-H", "authorization: bearer \(p.jwt)", "-H", "apns-topic: \(Provisioned.topic)", "-d", "{}",
            ])
        #expect(closed.status != 0 && closed.stdout.isEmpty, "\(closed)")
        #expect(try p.push().status == 200)
        let history = try p.gateway.adminCall("GET", "/deliveries?status=rejected").body
        #expect(history.contains("closed; device dev1") && history.contains("closed by fault rule"), "\(history)")

        // SETTINGS lowering MAX_CONCURRENT_STREAMS to 1, before the answer.
        _ = try faults(p, ["add", "--connection", "lower-streams", "--remaining", "1"])
        let lowered = try nghttp(p)
        #expect(lowered.contains("[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):1]"), "\(lowered)")
        #expect(lowered.contains(":status: 200"), "\(lowered)")

        // A refused TLS handshake: curl reads the handshake_failure alert; the next connection is fine.
        _ = try faults(p, ["add", "--connection", "refuse-handshake", "--remaining", "1"])
        let ca = p.gateway.state.appendingPathComponent("ca.pem").path
        let tls = [
            "curl", "-sS", "--http2", "--max-time", "10", "--cacert", ca, p.gateway.tls + "/3/device/" + p.token,
            "-H", "authorization: bearer \(p.jwt)", "-H", "apns-topic: \(Provisioned.topic)", "-d", "{}", "-o",
            "/dev/null", "-w", "%{http_code}",
        ]
        let refused = try run("/usr/bin/env", tls)
        #expect(refused.status == 35 && refused.stderr.contains("handshake failure"), "\(refused)")
        let accepted = try run("/usr/bin/env", tls)
        #expect(accepted.status == 0 && accepted.stdout == "200", "\(accepted)")
        #expect(p.gateway.log.contains("fault rule: TLS handshake refused"))
        #expect(p.gateway.stop() == 0)
    }

    @Test func latencyProbabilityAndTheDeviceLimit() throws {
        let p = try Provisioned()
        // A fixed latency holds the answer at least that long.
        _ = try faults(p, ["add", "--latency", "fixed:400", "--remaining", "1"])
        let timed = try p.push(extra: ["-w", "\n%{time_total}"])
        let seconds = Double(timed.body.split(separator: "\n").last ?? "") ?? 0
        #expect(timed.status == 200 && seconds >= 0.4, "\(seconds)")

        // Uniform between 150 and 200 ms; log-normal with p50 120 and p99 121 (so all but certainly
        // above 115 ms): each holds the answer at least its lower bound.
        for (latency, least) in [("uniform:150-200", 0.15), ("lognormal:120,121", 0.115)] {
            _ = try faults(p, ["add", "--latency", latency, "--remaining", "1"])
            let held = try p.push(extra: ["-w", "\n%{time_total}"])
            let took = Double(held.body.split(separator: "\n").last ?? "") ?? 0
            #expect(held.status == 200 && took >= least, "\(latency): \(took)")
        }

        // Probability 0 never fires; 1 always does.
        _ = try faults(p, ["add", "--reason", "BadTopic", "--probability", "0"])
        for _ in 0..<5 { #expect(try p.push().status == 200) }
        _ = try faults(p, ["clear"])
        _ = try faults(p, ["add", "--reason", "BadTopic", "--probability", "1", "--remaining", "2"])
        #expect(try p.push().reason == "BadTopic" && p.push().reason == "BadTopic")

        // Apple's per-device limit: 3 pushes to the device in the window, the 4th is 429.
        _ = try faults(p, ["add", "--device-limit", "3", "--window", "60"])
        for _ in 0..<3 { #expect(try p.push().status == 200) }
        let limited = try p.push()
        #expect(limited.status == 429 && limited.reason == "TooManyRequests", "\(limited.status) \(limited.body)")
        let listed = try faults(p, ["list", "--json"])
        let id = try #require(
            ((try? JSONSerialization.jsonObject(with: Data(listed.utf8))) as? [[String: Any]])?.first?["id"] as? String)
        #expect(try faults(p, ["remove", id]) == "\(id) removed\n")
        #expect(try p.push().status == 200)

        // Bad rules are refused naming the option, before anything is sent.
        let bad = try run(
            try heraldExecutable().path,
            [
                "gateway", "faults", "add", "--connection", "refuse-handshake", "--topic", "x", "--state",
                p.gateway.state.path,
            ])
        #expect(bad.status != 0 && bad.stderr.contains("--topic: a refused handshake comes before"), "\(bad.stderr)")
        let badAPI = try p.gateway.adminCall("POST", "/faults", #"{"latency":{"distribution":"lognormal","p50":90}}"#)
        #expect(badAPI.status == 400 && badAPI.body.contains("latency.p99: required for lognormal"), "\(badAPI.body)")
        #expect(p.gateway.stop() == 0)
    }
}
