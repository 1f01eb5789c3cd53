#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation

/// A PostgreSQL server of our own: a cluster made by `initdb` in a directory of ours, started by
/// `pg_ctl` on a loopback port, with no system service and no password (trust on loopback and on
/// its private socket directory only). The tests run theirs in a temporary directory; `herald up
/// --nodes N` runs one in its state directory.
///
/// PostgreSQL refuses to run as root. Run as root (a CI container), the cluster belongs to the
/// `postgres` account that Debian's package creates, and the programs run under it.
public struct PrivatePostgres: Sendable {
    /// The cluster's directory (`initdb`'s data directory).
    public let dataDirectory: URL
    /// The loopback port it listens on.
    public let port: Int
    /// The directory that holds `initdb`, `pg_ctl` and `createdb`.
    public let binaries: URL
    /// The account the server runs as when we are root (`nil`: as ourselves).
    public let account: String?
    /// The database made for Herald.
    public static let database = "herald"
    /// The role that owns it (the cluster's superuser).
    public static let user = "herald"

    /// `postgres://herald@127.0.0.1:<port>/herald`.
    public var url: String { "postgres://\(Self.user)@127.0.0.1:\(port)/\(Self.database)" }

    /// Something went wrong starting or stopping the server.
    public struct Failure: Error, CustomStringConvertible {
        /// One line a person can act on, with what the program printed.
        public var description: String
        /// What the server logged while it failed to start (empty for the other programs).
        var serverLog = ""

        /// The server could not listen on its port: another socket holds it.
        var portWasTaken: Bool {
            serverLog.contains("Address already in use") || serverLog.contains("could not create any TCP/IP sockets")
        }
    }

    /// The directory of PostgreSQL's server programs: `initdb` on the `PATH`, or else the newest of
    /// Debian's `/usr/lib/postgresql/<version>/bin`. `nil` when there is none.
    public static func findBinaries() -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for directory in path.split(separator: ":") where !directory.isEmpty {
            if FileManager.default.isExecutableFile(atPath: "\(directory)/initdb") {
                return URL(fileURLWithPath: String(directory), isDirectory: true)
            }
        }
        let debian = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: debian)) ?? [])
            .compactMap(Int.init).sorted(by: >)
        for version in versions where FileManager.default.isExecutableFile(atPath: "\(debian)/\(version)/bin/initdb") {
            return URL(fileURLWithPath: "\(debian)/\(version)/bin", isDirectory: true)
        }
        return nil
    }

    /// Creates the cluster in `dataDirectory` if it has none, starts it on `port` (a free one when
    /// `nil`) and makes the `herald` database. `settings` are extra server settings
    /// (`fsync=off` for a test's throwaway cluster, say). Blocks while the programs run (a few
    /// seconds for a new cluster); call it off the concurrency pool.
    public static func start(
        dataDirectory: URL, port: Int? = nil, settings: [String: String] = [:]
    ) throws -> PrivatePostgres {
        try start(dataDirectory: dataDirectory, port: port, settings: settings, choosePort: freeLoopbackPort)
    }

    /// ``start(dataDirectory:port:settings:)`` with the choice of a free port given (the tests
    /// hand it a port that is taken).
    static func start(
        dataDirectory: URL, port: Int?, settings: [String: String], choosePort: () throws -> Int
    ) throws -> PrivatePostgres {
        guard let binaries = findBinaries() else {
            throw Failure(
                description:
                    "PostgreSQL's server programs were not found: put initdb on the PATH or install Debian's postgresql package"
            )
        }
        let account = geteuid() == 0 ? "postgres" : nil
        if let account, getpwnam(account) == nil {
            throw Failure(description: "running as root, and there is no \(account) account to run PostgreSQL as")
        }
        let fm = FileManager.default
        try fm.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        var server = PrivatePostgres(
            dataDirectory: dataDirectory, port: try port ?? choosePort(), binaries: binaries, account: account)
        try server.handOver(dataDirectory)
        if !fm.fileExists(atPath: dataDirectory.appendingPathComponent("PG_VERSION").path) {
            try server.run(
                "initdb", ["-D", dataDirectory.path, "-U", user, "-A", "trust", "-E", "UTF8", "--no-instructions"])
        }
        // A server left running on this directory (its owner was killed) is stopped first: it may
        // be on another port, and pg_ctl would refuse to start a second one.
        if fm.fileExists(atPath: dataDirectory.appendingPathComponent("postmaster.pid").path) {
            _ = try? server.stop()
        }
        // A port the kernel called free may be taken before the server binds it: it is in the
        // ephemeral range, and any process's outgoing connection can get it. A port we chose is
        // tried again with another one; a port the caller named is not.
        var attempt = 1
        while true {
            do {
                try server.startServer(settings: settings)
                break
            } catch let failure as Failure where port == nil && attempt < startAttempts && failure.portWasTaken {
                attempt += 1
                server = PrivatePostgres(
                    dataDirectory: dataDirectory, port: try choosePort(), binaries: binaries, account: account)
            }
        }
        try server.createDatabase(Self.database)
        return server
    }

    /// How many free ports ``start(dataDirectory:port:settings:)`` tries when each was taken in turn.
    static let startAttempts = 5

    /// The server's settings file additions, the socket and log in the data directory.
    private func startServer(settings: [String: String]) throws {
        var options = [
            "-p \(port)", "-c listen_addresses=127.0.0.1", "-k \(dataDirectory.path)",
            // Many nodes each keep a pool: more than the default 100.
            "-c max_connections=300",
        ]
        for (name, value) in settings.sorted(by: { $0.key < $1.key }) { options.append("-c \(name)=\(value)") }
        let log = dataDirectory.appendingPathComponent("server.log")
        let logged = (try? FileManager.default.attributesOfItem(atPath: log.path)[.size] as? Int) ?? 0
        do {
            try run(
                "pg_ctl",
                [
                    "-D", dataDirectory.path, "-l", log.path, "-w", "-t", "60", "-o", options.joined(separator: " "),
                    "start",
                ])
        } catch var failure as Failure {
            // pg_ctl only says "Examine the log output": the reason is in what the server logged.
            let said = Self.tail(of: log, from: logged)
            if !said.isEmpty { failure.description += "\nThe server logged:\n" + said }
            failure.serverLog = said
            throw failure
        }
    }

    /// What `file` holds after its first `offset` bytes: its last 4 KiB at most, trimmed.
    private static func tail(of file: URL, from offset: Int) -> String {
        guard let handle = try? FileHandle(forReadingFrom: file) else { return "" }
        defer { try? handle.close() }
        guard let end = try? handle.seekToEnd() else { return "" }
        let start = max(UInt64(offset), end > 4096 ? end - 4096 : 0)
        guard (try? handle.seek(toOffset: start)) != nil, let data = try? handle.readToEnd() else { return "" }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Makes the database `name` (letters, digits and `_`) unless it exists, and returns its URL.
    @discardableResult
    public func createDatabase(_ name: String) throws -> String {
        let exists = try sql("SELECT 1 FROM pg_database WHERE datname = '\(name)'", database: "postgres")
        if exists.trimmingCharacters(in: .whitespacesAndNewlines) != "1" {
            try run("createdb", ["-h", "127.0.0.1", "-p", String(port), "-U", Self.user, name])
        }
        return "postgres://\(Self.user)@127.0.0.1:\(port)/\(name)"
    }

    /// Runs SQL with `psql` and returns its unaligned, tuples-only output.
    @discardableResult
    public func sql(_ statement: String, database: String = PrivatePostgres.database) throws -> String {
        try run("psql", ["-h", "127.0.0.1", "-p", String(port), "-U", Self.user, "-d", database, "-tAc", statement])
    }

    /// Stops the server: `fast` ends the sessions and shuts down cleanly; `immediate` is a crash
    /// (recovery from the WAL at the next start).
    public func stop(immediate: Bool = false) throws {
        try run("pg_ctl", ["-D", dataDirectory.path, "-w", "-m", immediate ? "immediate" : "fast", "stop"])
    }

    /// Starts the server again after ``stop(immediate:)``, on the same port.
    public func restart(settings: [String: String] = [:]) throws {
        try startServer(settings: settings)
    }

    /// Stops the server if it runs, and deletes its directory.
    public func destroy() {
        _ = try? stop(immediate: true)
        try? FileManager.default.removeItem(at: dataDirectory)
    }

    /// Gives `directory` (and the directories above it that are ours and closed to others) to the
    /// account the server runs as.
    private func handOver(_ directory: URL) throws {
        guard let account, let entry = getpwnam(account) else { return }
        let uid = entry.pointee.pw_uid
        let gid = entry.pointee.pw_gid
        guard chown(directory.path, uid, gid) == 0 else {
            throw Failure(
                description: "could not give \(directory.path) to \(account): \(String(cString: strerror(errno)))")
        }
        chmod(directory.path, 0o700)
        // The account must be able to reach the directory: open the way through our private parents.
        var parent = directory.deletingLastPathComponent()
        while parent.path != "/" {
            var info = stat()
            if stat(parent.path, &info) == 0, info.st_uid == geteuid(), info.st_mode & 0o001 == 0 {
                chmod(parent.path, mode_t(info.st_mode & 0o7777) | 0o711)
            }
            parent = parent.deletingLastPathComponent()
        }
    }

    /// Runs one of the server's programs (as ``account`` when set) and returns what it printed;
    /// throws with its output when it fails.
    @discardableResult
    private func run(_ program: String, _ arguments: [String]) throws -> String {
        let executable = binaries.appendingPathComponent(program).path
        let programPath =
            FileManager.default.isExecutableFile(atPath: executable) ? executable : "/usr/bin/\(program)"
        let argv =
            account.map { ["/usr/bin/setpriv", "--reuid=\($0)", "--regid=\($0)", "--init-groups", programPath] }
            ?? [programPath]
        // The programs must not read our own PG* settings, and a locale they lack makes initdb fail.
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") }
        environment["LC_ALL"] = "C"
        environment["LANG"] = "C"
        // Output to a file, not a pipe: the server that `pg_ctl start` leaves running would hold a
        // pipe open, and reading it to the end would never finish.
        let outputURL = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-pg-\(program)-\(UUID().uuidString.prefix(8)).out")
        defer { try? FileManager.default.removeItem(at: outputURL) }
        let status = try ChildProcess.run(
            argv + arguments, environment: environment, output: outputURL.path)
        let text = (try? String(contentsOf: outputURL, encoding: .utf8)) ?? ""
        guard status == 0 else {
            throw Failure(
                description: "\(program) \(arguments.joined(separator: " ")) failed (\(status)): "
                    + text.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return text
    }

    /// A loopback port nobody listens on now (the kernel's choice for port 0).
    public static func freeLoopbackPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw Failure(description: "bind: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
