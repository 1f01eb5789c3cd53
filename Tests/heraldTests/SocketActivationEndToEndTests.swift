import Foundation
import HeraldRuntime
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A gateway that serves a socket handed over, as systemd's socket activation hands it
/// (Tests/Clients/socket_holder.py holds the socket as a socket unit would and starts the real
/// `herald gateway` on it): the socket outlives the gateway, so a connection made while no gateway
/// runs waits for the next one instead of being refused, and a real `herald test-device` comes back
/// to the restarted gateway.
@Suite(.serialized, .ownThread) struct SocketActivationEndToEndTests {
    @Test func aConnectionMadeWhileNoGatewayRunsWaitsForTheNextOne() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("herald-sa-\(UUID())")
        defer { try? FileManager.default.removeItem(at: state) }
        let holder = try Child(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", ConnectionFaultsEndToEndTests.client("socket_holder.py"), "127.0.0.1:0", "link",
                "127.0.0.1:0", "link", "--", try heraldExecutable().path, "gateway", "--state", state.path, "--port",
                "0", "--dev-port", "0", "--admin-port", "0", "--link-port", "0", "--no-legacy", "--no-channels",
                "--drain-window", "0.2",
            ], keepingErrors: true, input: true)
        let watchdog = watchdog(holder.process, after: 120)
        defer { watchdog.cancel() }
        // Two sockets for the device link, as a socket unit with two ListenStream= lines hands them.
        var ports: [Int32] = []
        for _ in 0..<2 {
            let listening = try #require(holder.reader.line(), "the holder's standard error: \(holder.errors)")
            ports.append(try #require(Int32(listening.split(separator: ":").last ?? ""), "\(listening)"))
        }
        let (port, other) = (ports[0], ports[1])

        let first = try Self.start(holder)
        let info = try GatewayInfo.read(directory: state)
        #expect(
            info.linkDevelopmentURL == "ws://127.0.0.1:\(port)/device/v1", "the link serves the sockets handed over")
        #expect(holder.errors.contains("serving a socket handed over"), "\(holder.errors)")
        let team = try curl([
            "-X", "POST", info.adminURL + "/teams", "-H", "authorization: Bearer \(info.adminToken)", "-d",
            #"{"id":"\#(Provisioned.team)","name":"Storm"}"#,
        ])
        #expect(team.status == 201, "\(team.body)")
        let app = try curl([
            "-X", "POST", info.adminURL + "/apps", "-H", "authorization: Bearer \(info.adminToken)", "-d",
            #"{"bundleID":"\#(Provisioned.topic)","teamID":"\#(Provisioned.team)"}"#,
        ])
        #expect(app.status == 201, "\(app.body)")
        let linked = try LinkedTestDevice([
            "--gateway", info.linkDevelopmentURL, "--identity", state.appendingPathComponent("device.json").path,
            "--reconnect",
        ])
        defer { linked.watchdog.cancel() }

        kill(first, SIGTERM)
        holder.send("wait")
        #expect(holder.reader.line() == "exited 0", "SIGTERM stops the gateway gracefully")
        #expect(linked.child.reader.json()?["event"] as? String == "goaway")
        #expect(linked.child.reader.json()?["event"] as? String == "disconnected")

        // No gateway runs now. The kernel still completes a connection on the second socket and queues it.
        let waiting = try Self.connect(port: other)
        defer { close(waiting) }
        let request = "GET /device/v1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        #expect(write(waiting, request, request.utf8.count) == request.utf8.count)

        let second = try Self.start(holder)
        var answer = [UInt8](repeating: 0, count: 512)
        let read = Glibc.read(waiting, &answer, answer.count)
        let head = String(decoding: answer.prefix(max(read, 0)), as: UTF8.self)
        #expect(head.hasPrefix("HTTP/1.1 4"), "the request made while no gateway ran is answered by the next: \(head)")
        #expect(
            linked.child.reader.json()?["event"] as? String == "reconnected",
            "the device comes back to the restarted gateway")
        let again = try GatewayInfo.read(directory: state)
        #expect(again.linkDevelopmentURL == info.linkDevelopmentURL)
        try eventually("the restarted gateway to hold the device") {
            let device = try curl([
                again.adminURL + "/devices/\(linked.id)", "-H", "authorization: Bearer \(again.adminToken)",
            ])
            return device.json?["online"] as? Bool == true
        }

        kill(second, SIGTERM)
        holder.send("wait")
        #expect(holder.reader.line() == "exited 0")
    }

    @Test func aSocketNamedForNoListenerStopsTheGatewayWithItsName() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("herald-sa-\(UUID())")
        defer { try? FileManager.default.removeItem(at: state) }
        let holder = try Child(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", ConnectionFaultsEndToEndTests.client("socket_holder.py"), "127.0.0.1:0", "admin", "--",
                try heraldExecutable().path, "gateway", "--state", state.path, "--port", "0", "--dev-port", "0",
                "--admin-port", "0", "--link-port", "0", "--no-legacy", "--no-channels",
            ], keepingErrors: true, input: true)
        #expect(holder.reader.line()?.hasPrefix("listening 127.0.0.1:") == true)
        holder.send("start")
        #expect(holder.reader.line()?.hasPrefix("started ") == true)
        holder.send("wait")
        #expect(holder.reader.line() == "exited 1")
        #expect(
            holder.errors.contains(
                "the socket handed over as \"admin\" (descriptor 3) names no listener; a name is one of: provider, "
                    + "development, link, binary, feedback, channels, channels-development"), "\(holder.errors)")
    }

    /// Starts the gateway on the held socket and reads its output through its ready line; returns its
    /// process id.
    static func start(_ holder: Child) throws -> pid_t {
        holder.send("start")
        let started = try #require(holder.reader.line(), "the holder's standard error: \(holder.errors)")
        let pid = try #require(pid_t(started.split(separator: " ").last ?? ""), "\(started)")
        // The ready banner ends with the admin token's path.
        let lines = holder.waitForLine(containing: "admin token:")
        try #require(lines.first?.contains("herald gateway ready") == true, "\(lines) \(holder.errors)")
        try #require(lines.last?.contains("admin token:") == true, "\(lines) \(holder.errors)")
        return pid
    }

    /// A blocking TCP connection to 127.0.0.1:`port`.
    static func connect(port: Int32) throws -> CInt {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(connected == 0, "connecting while no gateway runs: errno \(errno) (refused is 111)")
        return descriptor
    }
}
