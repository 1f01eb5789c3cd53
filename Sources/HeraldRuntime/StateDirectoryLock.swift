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
        let key = directory.standardizedFileURL.path
        guard Self.heldHere.withLock({ $0.insert(key).inserted }) else {
            let holder = Self.readHolder(fd)
            close(fd)
            throw Locked(directory: directory.path, holder: holder ?? "this process")
        }
        // A lock this process released can stay held for a moment by a child it is starting: the
        // child has a copy of every descriptor until its exec closes them (O_CLOEXEC), and flock
        // belongs to the open file, not the process. This process no longer holds the directory
        // (the set above says so), so a holder naming it is such a child: wait for its exec.
        var waitedFor: Int = 0
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let holder = Self.readHolder(fd)
            guard holder?.contains("pid \(getpid()),") == true, waitedFor < 2000 else {
                close(fd)
                Self.heldHere.withLock { _ = $0.remove(key) }
                throw Locked(directory: directory.path, holder: holder ?? "another process")
            }
            usleep(1000)
            waitedFor += 1
        }
        let text = "\(role), pid \(getpid()), since \(ISO8601DateFormatter().string(from: Date()))\n"
        _ = ftruncate(fd, 0)
        _ = text.withCString { pwrite(fd, $0, strlen($0), 0) }
        self.directory = directory
        self.descriptor = Mutex(fd)
        self.key = key
    }

    /// The directories this process holds.
    private static let heldHere = Mutex<Set<String>>([])
    private let key: String

    /// Releases the lock now (it is released on deinit otherwise); the directory may then be
    /// locked again, by this process or another.
    public func unlock() {
        let released = descriptor.withLock { fd -> Bool in
            guard let held = fd else { return false }
            close(held)
            fd = nil
            return true
        }
        if released { Self.heldHere.withLock { _ = $0.remove(key) } }
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
