import Foundation
import HeraldRuntime
import Testing

/// The container image (`scripts/container.sh`, `packaging/container/Containerfile`) run with podman
/// as on this machine: its health check, a push with curl to the provider API inside it delivered to
/// a `herald test-device` outside it, the admin API over TLS driven by the `herald` CLI, and a restart
/// on the same volume that keeps the state. The image packages the debug build (the release build
/// takes minutes; the script makes one when given no binary).
@Suite(.serialized, .ownThread) struct ContainerEndToEndTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// `podman` with this machine's runtime settings (runc, cgroupfs), started through Python with
    /// every other descriptor closed, its output through files. The container's monitor (conmon)
    /// that `podman run -d` leaves behind keeps every descriptor it inherited open: a pipe would never
    /// end, and neither would the socket Foundation's `Process` watches for its child's exit.
    static func podman(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments =
            [
                "-c", "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:], close_fds=True))",
                "/usr/bin/podman", "--runtime", "runc", "--cgroup-manager=cgroupfs",
            ] + arguments
        let files = ["out", "err"].map {
            FileManager.default.temporaryDirectory.appendingPathComponent("podman-\(UUID()).\($0)")
        }
        defer { for file in files { try? FileManager.default.removeItem(at: file) } }
        for file in files { _ = FileManager.default.createFile(atPath: file.path, contents: nil) }
        process.standardOutput = try FileHandle(forWritingTo: files[0])
        process.standardError = try FileHandle(forWritingTo: files[1])
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        let (out, err) = (
            try String(contentsOf: files[0], encoding: .utf8), try String(contentsOf: files[1], encoding: .utf8)
        )
        return (process.terminationStatus, out, err)
    }

    @Test func aPushThroughTheContainerReachesADeviceOutsideItAndTheStateSurvivesARestart() throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let tag = "herald:test-\(suffix)"
        let name = "herald-test-\(suffix)"
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("herald-container-\(suffix)")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        defer {
            _ = try? Self.podman(["rm", "-f", "-t", "0", name])
            _ = try? Self.podman(["rmi", "-f", tag])
            try? FileManager.default.removeItem(at: state)
        }
        let built = try run(
            "/bin/bash",
            [
                Self.root.appendingPathComponent("scripts/container.sh").path, "--binary", try heraldExecutable().path,
                "--tag", tag,
            ])
        try #require(built.status == 0, "\(built.stderr)")
        #expect(built.stdout.hasSuffix("\(tag)\n"))
        // The image runs as herald (uid 10001), whose volume this directory is.
        #expect(chown(state.path, 10001, 10001) == 0)

        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        let files = min(Int(limit.rlim_max), 65536)
        // Every port chosen by the kernel: the gateway writes them to gateway.json on the volume.
        var arguments = [
            "run", "-d", "--name", name, "--network", "host", "--ulimit", "nofile=\(files):\(files)",
            "--ulimit", "nproc=4096:4096", "-v", "\(state.path):/var/lib/herald",
        ]
        for port in [
            "PORT", "DEV_PORT", "ADMIN_PORT", "LINK_PORT", "BINARY_PORT", "FEEDBACK_PORT", "CHANNELS_PORT",
            "CHANNELS_DEV_PORT",
        ] {
            arguments += ["-e", "HERALD_\(port)=0"]
        }
        let started = try Self.podman(arguments + [tag])
        try #require(started.status == 0, "\(started.stderr)")
        let info = try waitForGateway(in: state, container: name)
        #expect(info.adminURL.hasPrefix("https://"), "off loopback the admin API is served over TLS")
        let health = try Self.podman(["healthcheck", "run", name])
        #expect(health.status == 0, "the image's health check (herald probe): \(health.stdout)\(health.stderr)")
        let logs = try Self.podman(["logs", name])
        #expect(logs.stderr.contains(#""message":"gateway ready""#), "the log is JSON lines: \(logs.stderr)")

        // The admin API over TLS, from the CLI on the host, with the CA from the volume.
        let p8 = state.appendingPathComponent("AuthKey.p8").path
        let key = try run(
            try heraldExecutable().path,
            [
                "keys", "new", "--state", state.path, "--team", Provisioned.team, "--key-id", Provisioned.key, "--out",
                p8,
            ])
        try #require(key.status == 0, "\(key.stderr)")
        let token = try String(contentsOf: state.appendingPathComponent("admin-token"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let ca = state.appendingPathComponent("ca.pem").path
        let app = try curl([
            "--cacert", ca, "-H", "authorization: Bearer \(token)", "-H", "content-type: application/json",
            "-d", #"{"bundleID":"\#(Provisioned.topic)","teamID":"\#(Provisioned.team)"}"#, info.adminURL + "/apps",
        ])
        #expect(app.status == 201, "\(app.body)")
        let jwt = try run(
            try heraldExecutable().path,
            ["keys", "token", "--p8", p8, "--key-id", Provisioned.key, "--team", Provisioned.team]
        ).stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        // A device outside the container, on its device link.
        let identity = state.deletingLastPathComponent().appendingPathComponent("herald-container-\(suffix).json")
        defer { try? FileManager.default.removeItem(at: identity) }
        func push(_ alert: String, to token: String, through info: GatewayInfo) throws -> CurlResponse {
            try curl([
                "--http2", "--cacert", ca, info.providerURL + "/3/device/" + token,
                "-H", "authorization: bearer \(jwt)", "-H", "apns-topic: \(Provisioned.topic)",
                "-d", #"{"aps":{"alert":"\#(alert)"}}"#,
            ])
        }
        do {
            let device = try LinkedTestDevice(["--gateway-state", state.path, "--identity", identity.path])
            defer { device.watchdog.cancel() }
            let answer = try push("through the container", to: device.token, through: info)
            #expect(answer.status == 200, "\(answer.body)")
            #expect(answer.version == "HTTP/2", "HTTP/2 over TLS")
            #expect(device.child.reader.json()?["payload"] as? String == #"{"aps":{"alert":"through the container"}}"#)
        }

        // SIGTERM (podman stop), then the same volume: the same CA, token, key and device.
        let stopped = try Self.podman(["stop", "-t", "30", name])
        #expect(stopped.status == 0, "\(stopped.stderr)")
        let exit = try Self.podman(["inspect", name, "--format", "{{.State.ExitCode}}"])
        #expect(exit.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "a graceful stop")
        try FileManager.default.removeItem(at: state.appendingPathComponent(GatewayInfo.fileName))
        #expect(try Self.podman(["start", name]).status == 0)
        let again = try waitForGateway(in: state, container: name)
        #expect(
            try String(contentsOf: state.appendingPathComponent("admin-token"), encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines) == token)
        let device = try LinkedTestDevice(["--gateway-state", state.path, "--identity", identity.path])
        defer { device.watchdog.cancel() }
        let answer = try push("after the restart", to: device.token, through: again)
        #expect(answer.status == 200, "the key and the app were kept: \(answer.body)")
        #expect(device.child.reader.json()?["payload"] as? String == #"{"aps":{"alert":"after the restart"}}"#)
    }

    /// Reads the gateway.json the gateway in the container writes once it listens; fails with the
    /// container's log if that does not happen within a minute.
    func waitForGateway(in state: URL, container: String) throws -> GatewayInfo {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if let info = try? GatewayInfo.read(directory: state) { return info }
            let running = try Self.podman(["inspect", container, "--format", "{{.State.Running}}"])
            if running.stdout.hasPrefix("false") { break }
            usleep(50_000)  // polling a file the container's gateway writes when ready: it has no other signal
        }
        let logs = try Self.podman(["logs", container])
        throw CocoaError(.fileReadUnknown, userInfo: ["gateway.json never came": logs.stdout + logs.stderr])
    }
}
