#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Runs a program to its end with `posix_spawn` and `waitpid`, for programs that leave a daemon
/// behind (`pg_ctl start`).
///
/// Foundation's `Process` learns that its child ended when a descriptor it shares with the child
/// closes; a daemon the child starts inherits that descriptor, so `waitUntilExit` would wait for the
/// daemon instead. Here the child gets standard input from `/dev/null`, standard output and error
/// in one file, and no other descriptor of ours.
public enum ChildProcess {
    /// The error when the program cannot be started.
    public struct SpawnError: Error, CustomStringConvertible {
        /// What failed, with the program's path and the system's reason.
        public let description: String
    }

    /// Runs `arguments[0]` (an absolute path) with `arguments`, the given environment, working
    /// directory `/`, output and errors written to `output` (created or emptied), and waits for it.
    /// Returns its exit status, or 128 plus the signal that ended it.
    public static func run(_ arguments: [String], environment: [String: String], output: String) throws -> Int32 {
        precondition(!arguments.isEmpty, "a program to run")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // glibc has both since 2.34, but Swift's Glibc module does not declare them.
        if let closeFrom = glibc("posix_spawn_file_actions_addclosefrom_np", as: CloseFrom.self) {
            _ = closeFrom(&actions, 3)
        }
        if let changeDirectory = glibc("posix_spawn_file_actions_addchdir_np", as: ChangeDirectory.self) {
            _ = changeDirectory(&actions, "/")
        }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        guard spawned == 0 else {
            throw SpawnError(description: "cannot start \(arguments[0]): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else {
                throw SpawnError(description: "waitpid \(arguments[0]): \(String(cString: strerror(errno)))")
            }
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private typealias ChangeDirectory =
        @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    private static func glibc<F>(_ name: String, as type: F.Type) -> F? {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(symbol, to: type)
    }
}
