import Foundation
import HeraldRuntime
import Synchronization

/// The tests' PostgreSQL: one private server per test process (``PrivatePostgres`` in a temporary
/// directory on a free port, `fsync` off: it is thrown away), started by the first test that asks
/// and stopped when the process exits. Each test takes a database of its own.
public enum TestPostgres {
    private static let state = Mutex<Result<PrivatePostgres, any Error>?>(nil)
    private static let serial = DispatchQueue(label: "herald.test-postgres")

    /// The server, started on first use. Throws (the test fails, it does not skip) when
    /// PostgreSQL cannot start.
    public static func server() async throws -> PrivatePostgres {
        try await offThread { try serial.sync { try startOnce() } }
    }

    private static func startOnce() throws -> PrivatePostgres {
        if let started = state.withLock({ $0 }) { return try started.get() }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-test-pg-\(getpid())-\(UUID().uuidString.prefix(8))")
        let result = Result {
            try PrivatePostgres.start(
                dataDirectory: directory.appendingPathComponent("data"),
                settings: ["fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"])
        }
        state.withLock { $0 = result }
        if case .success(let server) = result {
            stopAtExit.withLock { $0 = server }
            atexit {
                TestPostgres.stopAtExit.withLock { server in
                    server?.destroy()
                    server = nil
                }
            }
        }
        return try result.get()
    }

    private static let stopAtExit = Mutex<PrivatePostgres?>(nil)

    /// ``server()`` for a synchronous test: blocks the calling thread while the server starts.
    public static func blockingServer() throws -> PrivatePostgres {
        try serial.sync { try startOnce() }
    }

    /// A new, empty database on the server; returns its URL.
    public static func database() async throws -> String {
        try await offThread { try blockingDatabase() }
    }

    /// ``database()`` for a synchronous test (one that drives processes and waits on them):
    /// blocks the calling thread while the server starts and the database is created.
    public static func blockingDatabase() throws -> String {
        let server = try serial.sync { try startOnce() }
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        return try server.createDatabase(name)
    }
}

/// Runs `body` (work that blocks: a process, a file lock) on a Dispatch thread and waits for it
/// without holding one of Swift concurrency's few threads.
public func offThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
    }
}
