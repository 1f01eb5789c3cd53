#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import Foundation
import Synchronization

/// Starts an app's process as a launched program expects to start, which Foundation's `Process`
/// does not do on Linux: every signal's disposition back to its default and no signal blocked (the
/// daemon ignores `SIGPIPE`, as SwiftNIO sets for the whole process, and a child would inherit
/// that, so that a write to a closed pipe no longer ends it), no descriptor of the daemon's but the
/// standard three, in a process group of its own (so that ending it ends what it started), in its
/// bundle directory. Then a thread of its own waits for its end.
enum ChildProcess {
    /// Why a spawn failed.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The end of a child, as Foundation's `Process` reports it: the exit status, or the number of
    /// the signal that ended it.
    static func terminationStatus(_ status: Int32) -> Int32 {
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : signal
    }

    /// Starts `path` with `environment`, in `directory` when given; returns its process id.
    /// `ended` runs once it has ended and been reaped, on the thread that waited for it, with its
    /// id and ``terminationStatus(_:)`` (-1 if another reaped it first). `beforeReaping` runs
    /// first, while the ended process is still a zombie, so its id cannot belong to another process
    /// yet: the caller forgets it there, and never signals a process it did not start.
    static func spawn(
        path: String, environment: [String: String], directory: String?,
        beforeReaping: @escaping @Sendable (Int32) -> Void,
        ended: @escaping @Sendable (_ pid: Int32, _ status: Int32) -> Void
    ) throws(Failure) -> Int32 {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var every = sigset_t()
        sigfillset(&every)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &every)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        guard let closeFrom = GNUSpawn.addCloseFrom, closeFrom(&actions, 3) == 0 else {
            throw Failure(description: "this C library cannot close the daemon's descriptors in a child")
        }
        if let directory {
            guard let addChdir = GNUSpawn.addChdir else {
                throw Failure(description: "this C library cannot start a child in another directory")
            }
            let result = directory.withCString { addChdir(&actions, $0) }
            guard result == 0 else { throw Failure(description: "\(directory): \(String(cString: strerror(result)))") }
        }

        let arguments = [path]
        let variables = environment.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let result = withCStrings(arguments) { argv in
            withCStrings(variables) { envp in posix_spawn(&pid, path, &actions, &attributes, argv, envp) }
        }
        guard result == 0 else { throw Failure(description: String(cString: strerror(result))) }
        let child = pid
        Thread.detachNewThread {
            // Waits without reaping, so that the id is still this child's while the caller forgets it.
            var info = siginfo_t()
            while waitid(P_PID, id_t(child), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
            beforeReaping(child)
            var status: Int32 = 0
            var reaped: pid_t
            repeat { reaped = waitpid(child, &status, 0) } while reaped < 0 && errno == EINTR
            // Reaped by someone else (SIGCHLD ignored): its end is not known.
            ended(child, reaped == child ? terminationStatus(status) : -1)
        }
        return child
    }

    /// `strings` as a null-terminated array of C strings, for the time of `body`.
    private static func withCStrings<T>(
        _ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> T
    ) -> T {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}

/// The GNU C library's additions to `posix_spawn`'s file actions (glibc 2.29 and 2.34), which
/// Swift's module of the C library does not declare: looked up by name once. (musl has the first
/// only; there every launch fails, with a message that says why.)
private enum GNUSpawn {
    typealias AddChdir =
        @convention(c) (
            UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>
        ) -> Int32
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    static let addChdir: AddChdir? = symbol("posix_spawn_file_actions_addchdir_np")
    static let addCloseFrom: AddCloseFrom? = symbol("posix_spawn_file_actions_addclosefrom_np")

    private static func symbol<T>(_ name: String) -> T? {
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(address, to: T.self)
    }
}
