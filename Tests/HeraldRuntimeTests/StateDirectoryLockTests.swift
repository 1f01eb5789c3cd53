import Foundation
import HeraldRuntime
import Synchronization
import Testing

@Suite struct StateDirectoryLockTests {
    static func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("herald-lock-\(UUID())")
    }

    /// One holder per directory, in this process too: the second is refused at once and told who
    /// holds it; after an unlock the directory can be taken again.
    @Test func aSecondLockIsRefusedUntilTheFirstIsReleased() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try StateDirectoryLock(directory: directory, role: "herald gateway")
        let refused = #expect(throws: StateDirectoryLock.Locked.self) {
            try StateDirectoryLock(directory: directory, role: "herald gateway")
        }
        #expect(
            refused?.holder.hasPrefix("herald gateway, pid \(getpid()), since ") == true,
            "\(String(describing: refused))")
        first.unlock()
        let again = try StateDirectoryLock(directory: directory, role: "herald device")
        again.unlock()
    }

    /// A released lock can be taken again at once while this process starts children: each child
    /// holds a copy of every descriptor (the lock's included) until its exec, and used to keep a
    /// restart in the same process from taking the directory (a quarter of the attempts failed
    /// while two threads started processes).
    @Test func aReleasedLockIsFreeEvenWhileChildrenAreStarting() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stop = Atomic<Bool>(false)
        let spawners = DispatchGroup()
        for _ in 0..<2 {
            DispatchQueue.global().async(group: spawners) {
                while !stop.load(ordering: .relaxed) {
                    let process = Process()
                    process.executableURL = URL(fileURLWithPath: "/bin/true")
                    try? process.run()
                    process.waitUntilExit()
                }
            }
        }
        defer {
            stop.store(true, ordering: .relaxed)
            spawners.wait()
        }
        for attempt in 0..<500 {
            let lock = try #require(
                try? StateDirectoryLock(directory: directory, role: "herald device"), "attempt \(attempt)")
            lock.unlock()
        }
    }
}
