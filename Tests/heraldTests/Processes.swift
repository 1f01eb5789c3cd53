import Foundation
import Testing

/// The path of a built example executable (built beside `herald`).
func exampleExecutable(_ name: String) throws -> URL {
    try heraldExecutable().deletingLastPathComponent().appendingPathComponent(name)
}

extension LineReader {
    /// Reads until every one of `texts` has appeared in some line, in any order (a launched app's
    /// output and the daemon's reach the same pipe in either order); returns the lines read.
    func lines(containing texts: [String]) -> [String] {
        var lines: [String] = []
        var missing = texts
        while !missing.isEmpty, let line = line() {
            lines.append(line)
            missing.removeAll { line.contains($0) }
        }
        return lines
    }
}

/// Gives a `herald gateway` or `herald device` child what `herald up` gives its own
/// (docs/operations.md, "When `herald up` ends"): its standard input is a pipe whose writing end only
/// this test process holds, named by `HERALD_PARENT_PIPE`. If the test run crashes or is killed, the
/// kernel closes that end and the child stops as SIGTERM stops it, instead of running on with its
/// ports and state. Hold the returned pipe as long as the child runs; closing it stops the child.
func watchingTheTests(_ process: Process) -> Pipe {
    let pipe = Pipe()
    // Nothing else the tests start may keep the writing end open.
    _ = fcntl(pipe.fileHandleForWriting.fileDescriptor, F_SETFD, FD_CLOEXEC)
    process.standardInput = pipe
    process.environment = (process.environment ?? ProcessInfo.processInfo.environment).merging([
        "HERALD_PARENT_PIPE": "0"
    ]) { $1 }
    return pipe
}

/// A started process whose standard output is read line by line.
final class Child {
    let process = Process()
    let output = Pipe()
    let reader: LineReader
    /// Where its standard error goes, with `keepingErrors` (removed with the child).
    let errorFile: URL?
    /// Its standard input, with `input` (otherwise it inherits the test's, or, for `herald gateway`
    /// and `herald device`, is the pipe ``watchingTheTests(_:)`` gives them).
    let input: Pipe?
    /// The pipe that stops a `herald gateway` or `herald device` child if the tests end first.
    let parentWatch: Pipe?

    /// Starts `executable`; with `keepingErrors`, what it writes to standard error is kept in a file
    /// for ``errors`` (a test's failure message), otherwise dropped; with `input`, ``send(_:)`` writes
    /// to its standard input.
    init(
        _ executable: URL, _ arguments: [String], environment: [String: String] = [:], keepingErrors: Bool = false,
        input: Bool = false
    ) throws {
        self.input = input ? Pipe() : nil
        if let pipe = self.input { process.standardInput = pipe }
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = output
        let watched =
            !input && executable.lastPathComponent == "herald" && ["gateway", "device"].contains(arguments.first)
        parentWatch = watched ? watchingTheTests(process) : nil
        if keepingErrors {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("herald-child-\(UUID()).err")
            _ = FileManager.default.createFile(atPath: file.path, contents: nil)
            process.standardError = try FileHandle(forWritingTo: file)
            errorFile = file
        } else {
            process.standardError = FileHandle.nullDevice
            errorFile = nil
        }
        reader = LineReader(output.fileHandleForReading)
        try process.run()
    }

    /// Writes `line` and a line end to its standard input (with `input`).
    func send(_ line: String) {
        input?.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// What it wrote to standard error so far (with `keepingErrors`).
    var errors: String {
        guard let errorFile, let data = FileManager.default.contents(atPath: errorFile.path) else { return "" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Reads until a line contains `text`; returns the lines read (the last one matches, unless the
    /// output ended first).
    func waitForLine(containing text: String) -> [String] { reader.lines(through: text) }

    /// Waits for the process to end; returns its remaining output.
    func finish() -> (status: Int32, lines: [String]) {
        var lines: [String] = []
        while let line = reader.line() { lines.append(line) }
        process.waitUntilExit()
        return (process.terminationStatus, lines)
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        if let errorFile { try? FileManager.default.removeItem(at: errorFile) }
    }
}

/// `error`, from a call to a child process's listener, with what the child's side says: whether it
/// still runs or how it ended, and the end of its log. A refused connection then says whether the
/// process was gone, and why.
func explained(_ error: any Error, calling name: String, _ process: Process, log: String) -> any Error {
    let state =
        process.isRunning
        ? "running"
        : process.terminationReason == .uncaughtSignal
            ? "ended by signal \(process.terminationStatus)" : "exited with status \(process.terminationStatus)"
    let tail = log.split(separator: "\n").suffix(20).joined(separator: "\n")
    return CocoaError(.fileReadUnknown, userInfo: ["error": "\(error)", name: state, "log (its end)": tail])
}

/// A safety net, not a wait: sends `signal` to `process` after `seconds` unless cancelled first, and
/// only while the process still runs. Process ids wrap around within a run of the suite (this
/// machine's pid_max is 32768), so a watchdog that outlived its process and killed a bare id could
/// end another test's process.
func watchdog(_ process: Process, after seconds: Double, signal: Int32 = SIGKILL) -> DispatchWorkItem {
    let pid = process.processIdentifier
    let item = DispatchWorkItem { if process.isRunning { kill(pid, signal) } }
    DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: item)
    return item
}

/// A real `herald device`. With `start`, its clock is manual: tests move its time with `herald device
/// clock`, as a user testing their schedules would.
final class DeviceProcess {
    let state: URL
    let daemon: Child
    let apiURL: String
    /// What the daemon printed up to its ready banner (what it fired on starting comes before it).
    let startup: [String]
    let watchdog: DispatchWorkItem
    let ownsState: Bool

    init(start: String? = nil, timeZone: String = "Europe/Paris", state: URL? = nil, extra: [String] = []) throws {
        // Unix socket paths are short: keep the directory near the root.
        ownsState = state == nil
        let state = state ?? URL(fileURLWithPath: "/tmp/hx-\(UUID().uuidString.prefix(8))")
        self.state = state
        // Its log is kept (at info: the link's reconnections too) for a failing test's message.
        daemon = try Child(
            try heraldExecutable(),
            ["device", "--state", state.path, "--api-port", "0", "--time-zone", timeZone, "--log-level", "info"]
                + (start.map { ["--manual-clock", "--start-time", $0] } ?? []) + extra, keepingErrors: true)
        startup = daemon.waitForLine(containing: "apiURL:")
        apiURL = String(startup.last?.split(separator: " ").last ?? "")
        // A safety net, not a wait: a test that hangs reading the daemon's output ends with it.
        watchdog = heraldTests.watchdog(daemon.process, after: 180)
    }

    var location: [String] { ["--device-state", state.path] }
    var appLink: [String: String] { ["HERALD_APP_LINK": state.appendingPathComponent("app.sock").path] }

    /// Runs a `herald` command against this device and expects it to succeed.
    @discardableResult
    func herald(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let result = try run(try heraldExecutable().path, arguments + location)
        #expect(result.status == 0, "herald \(arguments): \(result.stderr)", sourceLocation: sourceLocation)
        return result.stdout
    }

    /// Installs an example as `bundleID`, with the example as the executable the device launches.
    func install(_ bundleID: String, example: String) throws {
        try herald(["device", "install", bundleID, "--executable", try exampleExecutable(example).path])
    }

    /// Runs an example as the user would (it connects over the app link) and returns its output lines.
    func example(_ name: String, _ arguments: [String], status expected: Int32 = 0) throws -> [String] {
        let (status, lines) = try Child(try exampleExecutable(name), arguments, environment: appLink).finish()
        #expect(status == expected, "\(name) \(arguments) exited with \(status): \(lines)")
        return lines
    }

    /// Starts an example that keeps running (in the foreground).
    func start(_ name: String, _ arguments: [String]) throws -> Child {
        try Child(try exampleExecutable(name), arguments, environment: appLink)
    }

    func get(_ path: String) throws -> Any? {
        let response: CurlResponse
        do {
            response = try curl([apiURL + path])
        } catch {
            throw explained(error, calling: "herald device", daemon.process, log: daemon.errors)
        }
        return try JSONSerialization.jsonObject(with: Data(response.body.utf8))
    }

    func pending(_ app: String) throws -> [(id: String, next: String?)] {
        (try get("/apps/\(app)/pending") as? [[String: Any]] ?? []).map {
            ($0["identifier"] as? String ?? "", $0["nextFireDate"] as? String)
        }
    }

    func delivered(_ app: String) throws -> [[String: Any]] {
        try get("/apps/\(app)/delivered") as? [[String: Any]] ?? []
    }

    func app(_ app: String) throws -> [String: Any] { try get("/apps/\(app)") as? [String: Any] ?? [:] }

    /// Waits until the app counts as running in `state` (it has connected).
    func waitUntil(_ app: String, is state: String) throws {
        try eventually("\(app) \(state)") { try self.app(app)["state"] as? String == state }
    }

    /// Stops the daemon (SIGTERM) and returns its exit status; the state directory stays.
    func stop() -> Int32 {
        watchdog.cancel()
        // Only while it runs: once reaped, its id may be another process's.
        if daemon.process.isRunning { kill(daemon.process.processIdentifier, SIGTERM) }
        daemon.process.waitUntilExit()
        return daemon.process.terminationStatus
    }

    deinit {
        watchdog.cancel()
        if daemon.process.isRunning { _ = stop() }
        if ownsState { try? FileManager.default.removeItem(at: state) }
    }
}

/// A free loopback port below the kernel's ephemeral range (`net.ipv4.ip_local_port_range`), for a
/// test that stops a server and starts it again on the same port: a port the kernel hands out as
/// the source port of outgoing connections could be taken by any of them meanwhile, and one below
/// the range is only ever taken by a server that asks for it.
func portOutsideTheEphemeralRange() throws -> Int {
    let range =
        (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? "32768 60999"
    let low = Int(range.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first ?? "") ?? 32768
    for _ in 0..<200 {
        let port = Int.random(in: 10_000..<max(10_001, low))
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        if withLoopbackAddress(port: port, { bind(fd, $0, $1) }) == 0 { return port }
    }
    throw CocoaError(.fileWriteUnknown, userInfo: ["port": "no free port below \(low)"])
}

/// Calls `body` with the IPv4 socket address 127.0.0.1:`port` and its length.
func withLoopbackAddress<T>(port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
}
