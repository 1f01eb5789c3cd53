import Foundation
import HeraldCore
import HeraldTesting
import Testing

/// Waits (up to a safety deadline) until `condition` holds, checking every few milliseconds: for
/// effects inside another process (a device going offline in the gateway, a log written behind an
/// answer, a notification on the desktop's notification server, an app's state in the device
/// daemon) that a test on the outside can only observe through that process's API or tool. Every
/// caller in this target polls another process; in-process tests await instead.
func eventually(_ what: String, _ condition: () throws -> Bool) throws {
    // A safety deadline only: a condition that holds ends the wait at once. With every suite running
    // at once on two cores, a gateway's step has once taken over 10 s (a held push's log line in
    // DeliveryStatesEndToEndTests), so the deadline is 30 s.
    let deadline = Date().addingTimeInterval(30)
    while try !condition() {
        guard Date() < deadline else { throw CocoaError(.fileReadUnknown, userInfo: ["timed out": what]) }
        usleep(5000)  // polling a separate process through its admin API; nothing to await across processes
    }
}

/// Reads a child process's output line by line.
final class LineReader {
    let handle: FileHandle
    var buffer = ""
    init(_ handle: FileHandle) { self.handle = handle }

    func line() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: "\n") {
                let line = String(buffer[..<newline])
                buffer = String(buffer[buffer.index(after: newline)...])
                return line
            }
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            buffer += String(decoding: chunk, as: UTF8.self)
        }
    }

    func json() -> [String: Any]? {
        line().flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Reads until a line contains `text`; returns the lines read (the last one matches, unless the
    /// output ended first).
    func lines(through text: String) -> [String] {
        var lines: [String] = []
        while let line = line() {
            lines.append(line)
            if line.contains(text) { return lines }
        }
        return lines
    }
}

@Suite(.serialized, .ownThread) struct DeviceLinkEndToEndTests {
    @Test func aDeviceOverTLSGetsACurlPushByteForByteAndTheMetricsCountIt() async throws {
        let p = try Provisioned()
        let ca = try String(contentsOfFile: p.gateway.ca, encoding: .utf8)
        let url = p.gateway.info.linkURL
        #expect(url.hasPrefix("wss://localhost:"))
        let client = try await GatewayLinkClient.connect(
            url: url, identity: DeviceIdentity(deviceID: "phone"), caCertificatePEM: ca)
        let token = try await client.register(topic: Provisioned.topic)
        var pushes = client.events.makeAsyncIterator()

        let body = "{\"aps\":{\"alert\":{\"title\":\"Caf\u{e9}\",\"body\":\"\\u00e9 \\\"q\\\"\"}} ,  \"x\":[1,2.50]}"
        let response = try p.push(
            p.gateway.tls, token: token.hex, body: body,
            headers: ["apns-collapse-id: c1", "apns-priority: 10", "apns-id: 0F9A4B1C-2D3E-4F50-8A6B-7C8D9E0F1A2B"],
            http: "--http2", extra: ["--cacert", p.gateway.ca])
        #expect(response.status == 200)
        #expect(response.headers["apns-id"] == "0F9A4B1C-2D3E-4F50-8A6B-7C8D9E0F1A2B")
        guard case .pushes(let arrived)? = await pushes.next(), arrived.count == 1, let push = arrived.first else {
            throw CocoaError(.fileReadUnknown)
        }
        #expect(push.payload == Data(body.utf8))
        #expect(push.apnsID == "0F9A4B1C-2D3E-4F50-8A6B-7C8D9E0F1A2B")
        #expect(push.collapseID == "c1")
        #expect(push.topic == Provisioned.topic)

        // The admin API shows the device online and the log shows the acknowledgement.
        let device = try p.gateway.adminCall("GET", "/devices/phone")
        #expect(device.json?["online"] as? Bool == true)
        var lastLog = ""
        do {
            try eventually("the delivery log") {
                let log = try p.gateway.adminCall("GET", "/deliveries/0F9A4B1C-2D3E-4F50-8A6B-7C8D9E0F1A2B")
                lastLog = log.body
                let kinds = (try JSONSerialization.jsonObject(with: Data(log.body.utf8)) as? [[String: Any]])?
                    .compactMap { $0["kind"] as? String }
                return kinds == ["accepted", "delivered", "acknowledged"]
            }
        } catch {
            // What the log said last, so that a failure says what it saw.
            Issue.record("the delivery log never read accepted, delivered, acknowledged: \(lastLog)")
            throw error
        }
        let metrics = try p.gateway.adminCall("GET", "/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.body.contains(#"herald_provider_requests_total{status="200",reason=""} 1"#), "\(metrics.body)")
        #expect(metrics.body.contains(#"herald_deliveries_total{result="acknowledged"} 1"#))
        #expect(metrics.body.contains("herald_devices_online 1"))
        #expect(metrics.body.contains("herald_provider_request_duration_seconds_count 1"))

        // A bad token is counted by its reason.
        _ = try p.push(token: String(repeating: "ab", count: 32))
        #expect(
            try p.gateway.adminCall("GET", "/metrics").body.contains(
                #"herald_provider_requests_total{status="400",reason="BadDeviceToken"} 1"#))

        // Stopping the gateway closes the link (1001, going away).
        #expect(p.gateway.stop() == 0)
        var closed = false
        while let event = await pushes.next() {
            if case .closed = event { closed = true }
        }
        #expect(closed)
    }

    /// A device connected once comes back after the gateway restarts with its resumption ticket, not a
    /// signature (docs/device-link.md, "Resuming"): the restarted process accepts what the first one
    /// sealed, as the metrics say; the device's apps and pushes are as before.
    @Test func aDeviceComesBackToARestartedGatewayWithItsTicket() async throws {
        let p = try Provisioned()
        let ca = try String(contentsOfFile: p.gateway.ca, encoding: .utf8)
        let identity = DeviceIdentity(deviceID: "phone-ticket")
        let first = try await GatewayLinkClient.connect(
            url: p.gateway.info.linkURL, identity: identity, caCertificatePEM: ca)
        let token = try await first.register(topic: Provisioned.topic)
        let ticket = try #require(identity.resumption.ticket)
        #expect(ticket.expires > Int64(Date().timeIntervalSince1970) + 167 * 3600, "a week by default")
        await first.close()
        #expect(p.gateway.stop() == 0)

        let restarted = try Provisioned(state: p.gateway.state, existing: p)
        let again = try await GatewayLinkClient.connect(
            url: restarted.gateway.info.linkURL, identity: identity, caCertificatePEM: ca)
        #expect(again.registrations.map(\.token) == [token])
        #expect(identity.resumption.ticket == ticket, "a week's ticket comes back while most of it is left")
        let metrics = try restarted.gateway.adminCall("GET", "/metrics").body
        #expect(metrics.contains(#"herald_link_authentications_total{method="ticket"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"herald_link_authentications_total{method="signature"} 0"#), "\(metrics)")
        // In its upgrade request: the welcome came right behind the 101 (docs/device-link.md).
        #expect(metrics.contains("herald_link_upgrade_resumptions_total 1"), "\(metrics)")
        var events = again.events.makeAsyncIterator()
        #expect(try restarted.push(token: token.hex).status == 200)
        guard case .pushes(let arrived)? = await events.next() else { throw CocoaError(.fileReadUnknown) }
        #expect(arrived.map(\.token) == [token])
        await again.close()

        // A gateway that gives no tickets refuses it; the device signs on the same link.
        #expect(restarted.gateway.stop() == 0)
        let plain = try Provisioned(arguments: ["--link-ticket-hours", "0"], state: p.gateway.state, existing: p)
        let signed = try await GatewayLinkClient.connect(
            url: plain.gateway.info.linkURL, identity: identity, caCertificatePEM: ca)
        #expect(identity.resumption.ticket == nil)
        let counted = try plain.gateway.adminCall("GET", "/metrics").body
        #expect(counted.contains(#"herald_link_authentications_total{method="signature"} 1"#), "\(counted)")
        #expect(counted.contains("herald_link_upgrade_resumptions_total 0"), "\(counted)")
        await signed.close()
    }

    @Test func testDeviceCommandRegistersReceivesAndIsTheSameDeviceNextTime() throws {
        let p = try Provisioned()
        let identity = p.gateway.state.appendingPathComponent("test-device.json").path
        func start() throws -> (Process, LineReader) {
            let process = Process()
            process.executableURL = try heraldExecutable()
            process.arguments = [
                "test-device", "--gateway-state", p.gateway.state.path, "--identity", identity, "--topic",
                Provisioned.topic, "--json", "--count", "1",
            ]
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            return (process, LineReader(out.fileHandleForReading))
        }
        let (first, lines) = try start()
        let ready = try #require(lines.json())
        #expect(ready["event"] as? String == "ready")
        let device = try #require(ready["device"] as? String)
        let token = try #require((ready["tokens"] as? [String: String])?[Provisioned.topic])

        let body = #"{"aps":{"alert":"from curl"}}"#
        #expect(try p.push(token: token, body: body).status == 200)
        let push = try #require(lines.json())
        #expect(push["event"] as? String == "push")
        #expect(push["payload"] as? String == body)
        #expect(lines.json()?["received"] as? Int == 1)
        first.waitUntilExit()
        #expect(first.terminationStatus == 0)

        // Offline now: the push is stored, and the same device (same identity file) gets it on connect.
        try eventually("the device to go offline") {
            try p.gateway.adminCall("GET", "/devices/\(device)").json?["online"] as? Bool == false
        }
        #expect(try p.push(token: token, body: #"{"aps":{"alert":"while away"}}"#).status == 200)
        let (second, again) = try start()
        #expect(again.json()?["device"] as? String == device)
        #expect(again.json()?["payload"] as? String == #"{"aps":{"alert":"while away"}}"#)
        second.waitUntilExit()
        try eventually("the store to empty") {
            try p.gateway.adminCall("GET", "/devices/\(device)/stored").body == "[]"
        }
        #expect(p.gateway.stop() == 0)
    }

    /// `--gateway` repeated, as for a cluster's nodes: with `--reconnect`, an address that refuses
    /// the connection is left for the next one.
    @Test func testDeviceGivenSeveralAddressesMovesOnFromOneThatFails() throws {
        let p = try Provisioned()
        let live = p.gateway.info.linkDevelopmentURL
        let device = try Child(
            try heraldExecutable(),
            [
                "test-device", "--gateway", "ws://127.0.0.1:1/device/v1", "--gateway", live, "--identity",
                p.gateway.state.appendingPathComponent("several.json").path, "--topic", Provisioned.topic,
                "--json", "--count", "1", "--reconnect",
            ])
        // A safety net, not a wait: a device that never connects ends the test instead of hanging it.
        let watchdog = watchdog(device.process, after: 60)
        defer { watchdog.cancel() }
        let ready = try #require(device.reader.json())
        #expect(ready["event"] as? String == "ready")
        let token = try #require((ready["tokens"] as? [String: String])?[Provisioned.topic])
        #expect(try p.push(token: token, body: #"{"aps":{"alert":"found"}}"#).status == 200)
        #expect(device.reader.json()?["payload"] as? String == #"{"aps":{"alert":"found"}}"#)
        #expect(p.gateway.stop() == 0)
    }

    /// `--idle-devices N` holds N more devices (fresh keys) connected and idle beside the test device:
    /// the gateway counts them online until the command ends.
    @Test func testDeviceHoldsIdleDevicesBesideItself() throws {
        let p = try Provisioned()
        let process = Process()
        process.executableURL = try heraldExecutable()
        process.arguments = [
            "test-device", "--gateway-state", p.gateway.state.path, "--identity",
            p.gateway.state.appendingPathComponent("idle-test-device.json").path, "--topic", Provisioned.topic,
            "--json", "--count", "1", "--idle-devices", "5",
        ]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let lines = LineReader(out.fileHandleForReading)
        let ready = try #require(lines.json())
        #expect(ready["idleDevices"] as? Int == 5)
        #expect(try p.gateway.adminCall("GET", "/metrics").body.contains("herald_devices_online 6"))
        let token = try #require((ready["tokens"] as? [String: String])?[Provisioned.topic])
        #expect(try p.push(token: token).status == 200)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        try eventually("every device to go offline") {
            try p.gateway.adminCall("GET", "/metrics").body.contains("herald_devices_online 0")
        }
        #expect(p.gateway.stop() == 0)

        let refused = try run(try heraldExecutable().path, ["test-device", "--idle-devices=-1"])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("--idle-devices must be 0 or more"))
    }

    @Test func cleartextIsForLoopbackAndPlainHTTPIsTurnedAway() throws {
        let p = try Provisioned()
        let url = p.gateway.info.linkDevelopmentURL
        let http = url.replacingOccurrences(of: "ws://", with: "http://")
        // The link's path without the upgrade: 426; anything else: 404.
        let plain = try curl([http])
        #expect(plain.status == 426)
        #expect(plain.headers["upgrade"] == "websocket")
        #expect(try curl([http.replacingOccurrences(of: "/device/v1", with: "/other")]).status == 404)
        #expect(p.gateway.stop() == 0)
    }
}
