import Foundation

/// The processes `herald up` started.
final class Children: @unchecked Sendable {
    private let lock = NSLock()
    private var processes: [(String, Process)] = []
    /// The writing ends of the children's watch pipes (``ParentWatch``): closed by the kernel when
    /// this process ends, however it ends, which tells each child to stop.
    private var watches: [Pipe] = []
    private var stopping = false
    private var finally: [@Sendable () -> Void] = []

    /// Runs `work` once every child has stopped (a private database server's stop).
    func atStop(_ work: @escaping @Sendable () -> Void) { lock.withLock { finally.append(work) } }

    func start(
        _ name: String, executable: String, arguments: [String], log: URL, stdout: Bool,
        events: AsyncStream<String>.Continuation
    ) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !FileManager.default.fileExists(atPath: log.path) {
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        }
        let handle = try FileHandle(forWritingTo: log)
        handle.seekToEndOfFile()
        process.standardError = handle
        process.standardOutput = stdout ? FileHandle.standardOutput : FileHandle.nullDevice
        process.terminationHandler = { [weak self] process in
            guard let self, !self.isStopping else { return }
            events.yield("the \(name) stopped (exit \(process.terminationStatus))")
        }
        let watch = ParentWatch.attach(to: process)
        try process.run()
        lock.withLock {
            processes.append((name, process))
            watches.append(watch)
        }
        return process
    }

    var isStopping: Bool { lock.withLock { stopping } }

    /// SIGTERM to each child, newest first, waiting for each to end; then what ``atStop(_:)`` asked.
    func stopAll() async {
        let (list, work) = lock.withLock { () -> ([(String, Process)], [@Sendable () -> Void]) in
            stopping = true
            defer { finally = [] }
            return (processes.reversed(), finally.reversed())
        }
        for (_, process) in list where process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            await Task.detached { process.waitUntilExit() }.value
        }
        for item in work { await Task.detached { item() }.value }
    }
}
