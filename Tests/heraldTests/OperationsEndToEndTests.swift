import Foundation
import HeraldRuntime
import Testing

/// What an operator runs the gateway with: the admin listener's probes as an orchestrator or a load
/// balancer uses them (no token, curl, a real `herald gateway` whose PostgreSQL server goes away and
/// comes back), and its log as a collector reads it.
@Suite(.serialized, .ownThread) struct OperationsEndToEndTests {
    @Test func probesAnswerWithoutTheTokenAndSayWhyTheGatewayIsNotReady() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-probes-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        // A server of this test's own: it is stopped under the gateway, which no other test may see.
        let server = try PrivatePostgres.start(
            dataDirectory: directory.appendingPathComponent("postgres"), settings: ["fsync": "off"])
        defer { server.destroy() }
        let gateway = try GatewayProcess(arguments: ["--database", server.url])

        let health = try curl([gateway.admin + "/healthz"])
        #expect(health.status == 200)
        #expect(health.body == #"{"status":"ok"}"#)
        let ready = try curl([gateway.admin + "/readyz"])
        #expect(ready.status == 200)
        #expect(ready.body == #"{"status":"ready"}"#)
        #expect(ready.headers["cache-control"] == "no-store")
        // The rest of the admin API still wants the token.
        #expect(try curl([gateway.admin + "/metrics"]).status == 401)

        try server.stop()
        let down = try curl([gateway.admin + "/readyz"])
        #expect(down.status == 503)
        let fields = try JSONSerialization.jsonObject(with: Data(down.body.utf8)) as? [String: String]
        #expect(fields?["status"] == "unavailable", "\(down.body)")
        #expect(fields?["reason"]?.hasPrefix("the store does not answer: ") == true, "\(down.body)")
        // Alive, though not ready.
        #expect(try curl([gateway.admin + "/healthz"]).status == 200)

        try server.restart()
        try eventually("ready again once the database is back") {
            try curl([gateway.admin + "/readyz"]).status == 200
        }
        #expect(gateway.stop() == 0, "\(gateway.log)")
    }

    /// `--log-format json`: every line the gateway logs is one JSON object, its metadata as fields.
    @Test func theLogIsOneJSONObjectALine() throws {
        let gateway = try GatewayProcess(arguments: ["--log-format", "json", "--log-level", "debug"])
        #expect(gateway.stop() == 0)
        let lines = gateway.log.split(separator: "\n")
        #expect(lines.count >= 3, "\(gateway.log)")
        var messages: [String] = []
        for line in lines {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            try #require(object != nil, "not a JSON object: \(line)")
            for field in ["time", "level", "label", "message"] {
                #expect(object?[field] is String, "\(field) in \(line)")
            }
            #expect((object?["time"] as? String)?.hasSuffix("Z") == true)
            let message = object?["message"] as? String ?? ""
            messages.append(message)
            if message == "gateway ready" {
                #expect(object?["label"] as? String == "herald.gateway")
                #expect(object?["providerURL"] as? String == gateway.info.providerURL, "\(line)")
                #expect(object?["adminToken"] == nil, "the token is never logged")
            }
        }
        #expect(messages.contains("gateway ready"), "\(messages)")
    }
}
