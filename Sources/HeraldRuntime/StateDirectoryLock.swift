#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation
import Synchronization

/// The advisory lock a process takes on its state directory before it touches anything in it
/// (`<state>/lock`, `flock`): one gateway, one device daemon, one `herald up` per directory. The
/// holder writes who it is into the file, so that a second process can say whom it found. The lock
/// goes with the process (the kernel drops it even on SIGKILL); the file stays.
public final class StateDirectoryLock: Sendable {
    /// The locked directory.
    public let directory: URL
    /// The lock file's descriptor while held.
    private let descriptor: Mutex<Int32?>

    /// The lock file's name inside a state directory.
    public static let fileName = "lock"

    /// Another process holds the directory.
    public struct Locked: Error, CustomStringConvertible, Equatable {
        /// The state directory.
        public var directory: String
        /// What the holder wrote about itself (`herald device, pid 1234, since …`), or "another process".
        public var holder: String
        /// One line a person can act on.
        public var description: String {
            "the state directory \(directory) is in use by \(holder); stop that process first or choose another --state"
        }
    }

    /// Creates `directory` if needed and locks it for `role` (`herald gateway`, …). Throws ``Locked``
    /// without changing anything when another process holds it, or the system error when the lock
    /// file cannot be opened.
    public init(directory: URL, role: String) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent(Self.fileName).path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path, "errno": errno])
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = Self.readHolder(fd)
            close(fd)
            throw Locked(directory: directory.path, holder: holder ?? "another process")
        }
        let text = "\(role), pid \(getpid()), since \(ISO8601DateFormatter().string(from: Date()))\n"
        _ = ftruncate(fd, 0)
        _ = text.withCString { pwrite(fd, $0, strlen($0), 0) }
        self.directory = directory
        self.descriptor = Mutex(fd)
    }

    /// Releases the lock now (it is released on deinit otherwise); the directory may then be
    /// locked again, by this process or another.
    public func unlock() {
        descriptor.withLock { fd in
            if let held = fd { close(held) }
            fd = nil
        }
    }

    private static func readHolder(_ fd: Int32) -> String? {
        var bytes = [UInt8](repeating: 0, count: 512)
        let n = pread(fd, &bytes, bytes.count, 0)
        guard n > 0 else { return nil }
        let text = String(decoding: bytes[0..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    deinit {
        // Closing the descriptor releases the lock.
        unlock()
    }
}
