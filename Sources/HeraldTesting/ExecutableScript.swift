#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import Foundation

/// Writes `text` to a new file at `url` that its owner may execute (mode 0755), as an app or a
/// wrapper for a test to install and launch.
///
/// The file is written through a descriptor that is closed on `exec`. Foundation's `write(to:)`,
/// atomic or not, opens its file without `O_CLOEXEC` (as `strace` shows): a process another thread
/// of the test starts meanwhile inherits the descriptor and holds the file open for writing for as
/// long as it runs, and executing the file then fails with `ETXTBSY` ("could not start").
public func writeExecutableScript(_ text: String, to url: URL) throws {
    let descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
    guard descriptor >= 0 else {
        throw TestingError("could not create \(url.path): \(String(cString: strerror(errno)))")
    }
    defer { close(descriptor) }
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written < 0 && errno == EINTR { continue }
        guard written > 0 else {
            throw TestingError("could not write \(url.path): \(String(cString: strerror(errno)))")
        }
        bytes = bytes.dropFirst(written)
    }
    // The mode given to open is masked by the umask; the script must be executable whatever it is.
    guard fchmod(descriptor, 0o755) == 0 else {
        throw TestingError("could not make \(url.path) executable: \(String(cString: strerror(errno)))")
    }
}
