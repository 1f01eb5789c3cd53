#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import Foundation
import Logging

/// How the processes `herald up` starts end when it ends, however it ends (Ctrl-C, SIGKILL, a crash,
/// a closed terminal). `up` gives each child the reading end of a pipe as its standard input and
/// keeps the writing end, and names the descriptor in ``variable``. The kernel closes the writing end
/// when `up` ends for any reason, so the child reads end-of-file and stops as SIGTERM stops it
/// (gracefully, in order). A pipe rather than Linux's parent-death signal: that signal follows the
/// thread that started the child, and `up` starts children from a pool whose threads come and go.
enum ParentWatch {
    /// The environment variable that names the descriptor to watch.
    static let variable = "HERALD_PARENT_PIPE"

    /// The child's side: when ``variable`` names a descriptor, a thread of its own waits on it and
    /// sends this process SIGTERM at end-of-file. Does nothing otherwise (started by hand, by
    /// systemd or in a container, the process runs until it is told to stop).
    static func start(logger: Logger) {
        guard let text = ProcessInfo.processInfo.environment[variable], let fd = Int32(text), fd >= 0 else { return }
        // Nothing this process starts inherits it.
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        unsetenv(variable)
        let thread = Thread {
            var byte: UInt8 = 0
            while true {
                let count = read(fd, &byte, 1)
                if count > 0 || (count < 0 && errno == EINTR) { continue }
                break
            }
            logger.notice("herald up, which started this process, has ended; stopping")
            kill(getpid(), SIGTERM)
        }
        thread.name = "herald-parent-watch"
        thread.start()
    }

    /// The parent's side, for a child about to start: its standard input is a new pipe whose writing
    /// end this process keeps (returned: hold it as long as the child may run), and its environment
    /// names that input. The child gets no other `HERALD_` variable: they are `up`'s settings
    /// (docs/configuration.md), and `up` gives its children theirs as options.
    static func attach(to process: Process) -> Pipe {
        let pipe = Pipe()
        // Only this process holds the writing end: a child started later must not keep it open.
        _ = fcntl(pipe.fileHandleForWriting.fileDescriptor, F_SETFD, FD_CLOEXEC)
        process.standardInput = pipe
        var environment = (process.environment ?? ProcessInfo.processInfo.environment).filter {
            !$0.key.hasPrefix("HERALD_")
        }
        environment[variable] = "0"
        process.environment = environment
        return pipe
    }
}
