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

    /// The gateway and a device as an unprivileged user (`nobody`, through `setpriv` when the tests run
    /// as root), as the packaged service and the container run them. The listeners once asked for
    /// SO_DEBUG (TCP_NODELAY's number at the socket level), which only root may set: every connection
    /// of an unprivileged gateway was closed as it was accepted.
    @Test func aGatewayAndADeviceRunAsAnUnprivilegedUser() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("herald-nobody-\(UUID())")
        defer { try? FileManager.default.removeItem(at: state) }
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        let unprivileged = geteuid() == 0
        if unprivileged { #expect(chown(state.path, 65534, 65534) == 0) }
        func command(_ arguments: [String]) throws -> (URL, [String]) {
            let herald = try heraldExecutable()
            guard unprivileged else { return (herald, arguments) }
            return (
                URL(fileURLWithPath: "/usr/bin/setpriv"),
                ["--reuid=65534", "--regid=65534", "--clear-groups", "--", herald.path] + arguments
            )
        }
        let gatewayState = state.appendingPathComponent("gateway")
        let (executable, arguments) = try command([
            "gateway", "--state", gatewayState.path, "--port", "0", "--dev-port", "0", "--admin-port", "0",
            "--link-port", "0", "--binary-port", "0", "--feedback-port", "0", "--channels-port", "0",
            "--channels-dev-port", "0",
        ])
        let gateway = try Child(executable, arguments)
        defer { kill(gateway.process.processIdentifier, SIGTERM) }
        #expect(gateway.waitForLine(containing: "herald gateway ready").last?.contains("ready") == true)
        let info = try GatewayInfo.read(directory: gatewayState)
        // The provider API answers as APNs does (400 with a reason), over h2c and over TLS.
        let development = try curl([
            "--http2-prior-knowledge", "-d", "{}", try #require(info.developmentURL) + "/3/device/ab",
        ])
        #expect(development.status == 400 && development.body.contains(#""reason":"#), "\(development)")
        let tls = try curl(["--cacert", info.caCertificate, "-d", "{}", info.providerURL + "/3/device/ab"])
        #expect(tls.status == 400 && tls.body.contains(#""reason":"#), "\(tls)")
        // A device links (its client socket is unprivileged too) and gets its token.
        let (deviceExecutable, deviceArguments) = try command([
            "test-device", "--gateway", info.linkDevelopmentURL, "--identity",
            state.appendingPathComponent("identity.json").path, "--json",
        ])
        let device = try Child(deviceExecutable, deviceArguments)
        let ready = device.reader.json()
        #expect(ready?["device"] is String, "the device linked: \(String(describing: ready))")
        kill(device.process.processIdentifier, SIGTERM)
    }
}
