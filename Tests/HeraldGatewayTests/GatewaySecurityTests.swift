import Foundation
import HeraldCore
import HeraldTesting
import Logging
import Testing

@testable import HeraldGateway

/// Runs curl on a thread of its own (see ConsoleTests.curl); returns the HTTP status, 0 for none.
func curlStatus(_ arguments: [String]) async throws -> Int {
    try await offThread {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return Int(text) ?? 0
    }
}

/// Who may do what: the admin API's token on every route; a device acts on its own apps only.
@Suite(.timeLimit(.minutes(3))) struct GatewaySecurityTests {
    @Test func everyAdminRouteRefusesAMissingOrWrongToken() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("security-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let gateway = try await Gateway.open(.testing(directory: directory), logger: .testGateway)
        let (ready, readyContinuation) = AsyncStream.makeStream(of: [String: String].self)
        let run = Task { try await gateway.run { readyContinuation.yield($0) } }
        var failure: (any Error)?
        do {
            var started: [String: String]?
            for await i in ready {
                started = i
                break
            }
            let admin = try #require(started?["adminURL"])
            // Every route the admin API has, the console's included, read from its own router: a route
            // added later is covered too. Only the probes, the console's page, its files and its sign-in
            // are open.
            let console = Console(
                session: ConsoleSession(adminToken: gateway.adminToken),
                sender: ConsoleSender(
                    targets: .init(host: "127.0.0.1", tlsPort: 1, developmentPort: nil), ca: gateway.ca,
                    group: gateway.group),
                directory: gateway.directory, router: gateway.router, clock: gateway.clock, secure: false,
                caCertificatePath: gateway.state.caCertificatePath, logRetention: 86400)
            let routes = AdminAPI(
                directory: gateway.directory, router: gateway.router, faults: gateway.faults, ca: gateway.ca,
                token: gateway.adminToken, clock: gateway.clock, console: console, readiness: gateway.readiness,
                testAPI: true
            ).router().routes
            #expect(routes.count >= 33, "\(routes)")
            #expect(routes.contains { $0.description == "GET /healthz" })
            #expect(routes.contains { $0.description == "GET /metrics" })
            #expect(routes.contains { $0.description == "POST /console/send" })
            #expect(routes.contains { $0.description == "GET /readyz" })
            let open: Set = [
                "GET /console", "GET /console/files/{file}", "POST /console/session", "GET /healthz", "GET /readyz",
            ]
            #expect(routes.filter { open.contains($0.description) }.count == open.count)
            for route in routes where !open.contains(route.description) {
                let path = "\(route.path)".replacing(/\{[^}]*\}/, with: "x")
                let url = admin + path
                let method = route.method.rawValue
                for header in [
                    nil, "authorization: Bearer wrong-token", "authorization: Bearer \(gateway.adminToken)x",
                    "authorization: Basic \(gateway.adminToken)", "authorization: \(gateway.adminToken)",
                ] {
                    let status = try await curlStatus(["-X", method, url] + (header.map { ["-H", $0] } ?? []))
                    // A gateway that does not answer fails the test once, not once per route after 20 s each.
                    try #require(status != 0, "\(method) \(path): no answer")
                    #expect(status == 401, "\(method) \(path) with \(header ?? "no authorization"): \(status)")
                }
                // And the right token gets past the check (the live stream never ends: ConsoleTests reads it).
                if route.description == "GET /console/events" { continue }
                let allowed = try await curlStatus(
                    ["-X", method, url, "-H", "authorization: Bearer \(gateway.adminToken)"])
                #expect(allowed != 401 && allowed != 0, "\(method) \(path) with the token: \(allowed)")
            }
        } catch {
            failure = error
        }
        run.cancel()
        _ = await run.result
        if let failure { throw failure }
    }

    @Test func aDeviceActsOnItsOwnAppsOnly() async throws {
        let h = try await LinkBench()
        let phone = try await h.connect(DeviceIdentity(deviceID: "phone-a"))
        let phoneToken = try await phone.register(topic: Fixture.bundle)

        let other = try await h.connect(DeviceIdentity(deviceID: "phone-b"))
        // It sees none of the first device's registrations, and cannot remove them.
        #expect(other.registrations.isEmpty)
        await #expect(throws: GatewayLinkFailure.self) { try await other.unregister(topic: Fixture.bundle) }
        #expect(h.reason(of: phoneToken) == nil)
        // Registering the same app gives it a token of its own, which reaches it and not the first.
        let otherToken = try await other.register(topic: Fixture.bundle)
        #expect(otherToken != phoneToken)
        async let answer = h.push(to: otherToken, headers: [("apns-id", "44444444-4444-4444-4444-444444444444")])
        #expect(try await other.pushes(1).map(\.apnsID) == ["44444444-4444-4444-4444-444444444444"])
        #expect(await answer.status == 200)
        #expect(try await phone.written().isEmpty)
        // Resetting itself voids its own tokens only.
        _ = try await other.reset()
        #expect(h.reason(of: otherToken) == .unregistered)
        #expect(h.reason(of: phoneToken) == nil)
        // Nor can it claim the first device's id without the first device's key.
        await #expect(
            throws: GatewayLinkFailure(
                code: "DeviceKeyMismatch", message: "device phone-a is registered with another key")
        ) {
            _ = try await h.connect(DeviceIdentity(deviceID: "phone-a"))
        }
    }
}
