import Foundation
import HeraldRuntime
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `scripts/release.sh` packaging the debug build (a release build takes minutes; the script builds
/// one when given no binary): the archive's tree, the Debian package's files, control, conffiles and
/// dependencies read from the binary, the units checked by `systemd-analyze`, and the checksums. And
/// the committed manual page naming every option.
@Suite(.serialized, .ownThread) struct ReleaseTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func theArchiveAndThePackageHoldWhatAnOperatorNeeds() throws {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("herald-release-\(UUID())")
        defer { try? FileManager.default.removeItem(at: out) }
        let script = Self.root.appendingPathComponent("scripts/release.sh").path
        let built = try run(
            "/bin/bash",
            [
                script, "9.8.7~rc1", "--binary", try heraldExecutable().path, "--allow-dynamic-runtime", "--out",
                out.path,
            ])
        #expect(built.status == 0, "\(built.stdout)\n\(built.stderr)")
        let name = "herald-9.8.7~rc1-linux-x86_64"
        let archive = out.appendingPathComponent("\(name).tar.gz").path
        let deb = out.appendingPathComponent("herald_9.8.7~rc1_amd64.deb").path

        // The archive: every file an operator needs, owned by root.
        let listing = try run("/bin/tar", ["-tvzf", archive])
        #expect(listing.status == 0)
        for file in [
            "bin/herald", "systemd/herald-gateway.service", "systemd/herald-gateway.socket",
            "systemd/herald-device.service", "gateway.toml",
            "LICENSE", "THIRD-PARTY-LICENSES", "README.md", "completions/herald.bash", "completions/_herald",
            "completions/herald.fish", "man/herald.1",
        ] {
            #expect(listing.stdout.contains(" \(name)/\(file)\n"), "\(file) in\n\(listing.stdout)")
        }
        #expect(!listing.stdout.split(separator: "\n").contains { !$0.contains(" 0/0 ") }, "owned by root (0/0)")
        let unpacked = out.appendingPathComponent("unpacked")
        try FileManager.default.createDirectory(at: unpacked, withIntermediateDirectories: true)
        #expect(try run("/bin/tar", ["-xzf", archive, "-C", unpacked.path]).status == 0)
        let tree = unpacked.appendingPathComponent(name)
        let readme = try String(contentsOf: tree.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.hasPrefix("# Herald 9.8.7~rc1 for Linux"))
        let licences = try String(contentsOf: tree.appendingPathComponent("THIRD-PARTY-LICENSES"), encoding: .utf8)
        #expect(licences.contains("==== swift-nio: LICENSE.txt ====") && licences.contains("==== GRDB.swift: LICENSE"))
        let bash = try String(contentsOf: tree.appendingPathComponent("completions/herald.bash"), encoding: .utf8)
        #expect(bash.contains("gateway") && bash.contains("--print-config"))
        let manual = try String(contentsOf: tree.appendingPathComponent("man/herald.1"), encoding: .utf8)
        #expect(manual.contains(".Os herald 9.8.7~rc1"))
        let stripped = try run(tree.appendingPathComponent("bin/herald").path, ["--version"])
        #expect(stripped.status == 0 && stripped.stdout.contains("(commit "), "\(stripped)")

        // The package: its fields, the libraries the binary needs as Depends, the conffile.
        let fields = try run("/usr/bin/dpkg-deb", ["-f", deb, "Package", "Version", "Architecture", "Depends"])
        #expect(fields.stdout.contains("Package: herald\nVersion: 9.8.7~rc1\nArchitecture: amd64\n"), "\(fields)")
        for library in ["libc6 (>= ", "libsqlite3-0 (>= ", "libstdc++6 (>= ", "adduser"] {
            #expect(fields.stdout.contains(library), "\(library) in \(fields.stdout)")
        }
        let contents = try run("/usr/bin/dpkg-deb", ["-c", deb]).stdout
        for file in [
            "./usr/bin/herald", "./lib/systemd/system/herald-gateway.service",
            "./lib/systemd/system/herald-gateway.socket",
            "./usr/lib/systemd/user/herald-device.service", "./etc/herald/gateway.toml",
            "./usr/share/man/man1/herald.1.gz", "./usr/share/bash-completion/completions/herald",
            "./usr/share/doc/herald/copyright", "./usr/share/doc/herald/changelog.gz",
        ] {
            #expect(contents.contains(" \(file)\n"), "\(file) in\n\(contents)")
        }
        let control = out.appendingPathComponent("control")
        #expect(try run("/usr/bin/dpkg-deb", ["-e", deb, control.path]).status == 0)
        #expect(
            try String(contentsOf: control.appendingPathComponent("conffiles"), encoding: .utf8)
                == "/etc/herald/gateway.toml\n")
        for script in ["postinst", "prerm", "postrm"] {
            #expect(try run("/bin/sh", ["-n", control.appendingPathComponent(script).path]).status == 0, "\(script)")
        }
        let postinst = try String(contentsOf: control.appendingPathComponent("postinst"), encoding: .utf8)
        #expect(postinst.contains("adduser --system --group --home /var/lib/herald"))

        // The installed configuration is what the service starts with.
        let files = out.appendingPathComponent("files")
        #expect(try run("/usr/bin/dpkg-deb", ["-x", deb, files.path]).status == 0)
        let printed = try run(
            files.appendingPathComponent("usr/bin/herald").path,
            ["gateway", "--config", files.appendingPathComponent("etc/herald/gateway.toml").path, "--print-config"])
        #expect(printed.stdout.contains(#"state = "/var/lib/herald""#), "\(printed)")
        let unit = try String(
            contentsOf: files.appendingPathComponent("lib/systemd/system/herald-gateway.service"), encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/bin/herald gateway --config /etc/herald/gateway.toml"))
        #expect(unit.contains("User=herald") && unit.contains("StateDirectory=herald"))

        // The device link's socket unit: on the link's default port, named for the link, and what
        // systemd hands over under that name is what the packaged gateway serves.
        let socketUnit = try String(
            contentsOf: files.appendingPathComponent("lib/systemd/system/herald-gateway.socket"), encoding: .utf8)
        #expect(printed.stdout.contains("link-port = 5223"), "\(printed)")
        let lines = socketUnit.split(separator: "\n")
        #expect(lines.contains("ListenStream=127.0.0.1:5223") && lines.contains("Backlog=4096"), "\(socketUnit)")
        let socketName = try #require(
            lines.first { $0.hasPrefix("FileDescriptorName=") }?.dropFirst("FileDescriptorName=".count))
        try Self.servesTheLinkOnASocketHandedOver(
            named: String(socketName), by: files.appendingPathComponent("usr/bin/herald"))

        // The checksums check.
        let sums = try run("/bin/sh", ["-c", "cd '\(out.path)' && sha256sum -c SHA256SUMS"])
        #expect(sums.status == 0 && sums.stdout.components(separatedBy: ": OK").count == 3, "\(sums)")
    }

    /// A binary that would need the toolchain's runtime is not packaged by mistake.
    @Test func aBinaryOnTheToolchainsRuntimeIsRefused() throws {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("herald-release-\(UUID())")
        defer { try? FileManager.default.removeItem(at: out) }
        let script = Self.root.appendingPathComponent("scripts/release.sh").path
        let refused = try run(
            "/bin/bash", [script, "1.0.0", "--binary", try heraldExecutable().path, "--out", out.path])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("loads Swift's runtime from the toolchain"), "\(refused.stderr)")
        let badVersion = try run("/bin/bash", [script, "v1", "--out", out.path])
        #expect(badVersion.stderr.contains("VERSION must look like 1.2.0"), "\(badVersion.stderr)")
    }

    /// `packaging/herald.1` (written by `scripts/generate-manual.sh`) documents every option of the
    /// commands an operator runs: a new option without a new page fails here.
    @Test(arguments: [["gateway"], ["up"], ["device", "run"], ["push"]])
    func theManualNamesEveryOption(command: [String]) throws {
        let manual = try String(
            contentsOf: Self.root.appendingPathComponent("packaging/herald.1"), encoding: .utf8)
        let dump = try run(try heraldExecutable().path, command + ["--experimental-dump-help"])
        let object = try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any]
        let arguments = (object?["command"] as? [String: Any])?["arguments"] as? [[String: Any]] ?? []
        #expect(arguments.count > 5)
        for argument in arguments {
            let names = (argument["names"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "long" }
            for name in names.compactMap({ $0["name"] as? String }) where name != "help" {
                #expect(manual.contains("Fl -\(name)"), "--\(name) of herald \(command.joined(separator: " "))")
            }
        }
    }

    /// `herald gateway` under systemd's own `systemd-socket-activate`, which binds a socket, hands it
    /// over named `name` (as a socket unit with `FileDescriptorName=` does) and starts the gateway when
    /// the first connection comes: the gateway serves the device link on that socket, and the
    /// connection that started it is answered.
    static func servesTheLinkOnASocketHandedOver(named name: String, by herald: URL) throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("herald-release-sa-\(UUID())")
        defer { try? FileManager.default.removeItem(at: state) }
        let port = try PrivatePostgres.freeLoopbackPort()
        let activator = try Child(
            URL(fileURLWithPath: "/usr/bin/systemd-socket-activate"),
            [
                "--listen=127.0.0.1:\(port)", "--fdname=\(name)", herald.path, "gateway", "--state", state.path,
                "--port", "0", "--dev-port", "0", "--admin-port", "0", "--link-port", "0", "--no-legacy",
                "--no-channels",
            ], keepingErrors: true)
        defer {
            activator.process.terminate()
            activator.process.waitUntilExit()
        }
        try eventually("systemd-socket-activate to listen") { activator.errors.contains("Listening on") }
        let connection = try SocketActivationEndToEndTests.connect(port: Int32(port))
        defer { close(connection) }
        let request = "GET /device/v1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        #expect(write(connection, request, request.utf8.count) == request.utf8.count)
        // The connection started the gateway (the same process: systemd-socket-activate execs it).
        let ready = activator.waitForLine(containing: "admin token:")
        try #require(ready.last?.contains("admin token:") == true, "\(ready) \(activator.errors)")
        #expect(activator.errors.contains("serving a socket handed over"), "\(activator.errors)")
        let info = try GatewayInfo.read(directory: state)
        #expect(info.linkDevelopmentURL == "ws://127.0.0.1:\(port)/device/v1")
        var answer = [UInt8](repeating: 0, count: 512)
        let read = Glibc.read(connection, &answer, answer.count)
        let head = String(decoding: answer.prefix(max(read, 0)), as: UTF8.self)
        #expect(head.hasPrefix("HTTP/1.1 4"), "a request without an upgrade is refused by the link: \(head)")
    }
}
