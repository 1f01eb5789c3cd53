import Foundation
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldDevice

@Suite struct ProcessLauncherTests {
    /// A new directory of the test's own, for the executables it launches.
    static func scratchDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-launcher-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// `read()`'s first answer, asked every 5 ms for at most 10 s. It polls because what it waits for
    /// is another process's (a file it writes, its state in /proc): there is nothing to await.
    static func polled<T>(_ read: () -> T?) async throws -> T? {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let value = read() { return value }
            try await Task.sleep(for: .milliseconds(5))
        }
        return read()
    }

    /// Launches `executable` with a launcher of its own; the stream says `[pid, status]` when it ends.
    static func launch(_ executable: URL, in directory: URL) throws -> (
        launcher: ProcessLauncher, pid: Int32, endings: AsyncStream<[Int32]>.Iterator
    ) {
        let launcher = ProcessLauncher()
        let (ended, sink) = AsyncStream.makeStream(of: [Int32].self)
        let pid = try launcher.launch(
            InstalledApp(bundleID: "a", executable: executable.path), mode: .background, launchOptions: nil,
            appLinkPath: directory.appendingPathComponent("link").path
        ) { sink.yield([$0, $1]) }
        return (launcher, pid, ended.makeAsyncIterator())
    }

    /// The daemon ends a launch that does not connect in time through its launcher: the launcher
    /// kills a process it started that still runs, reports its end, and never signals a process it
    /// did not start (another process goes on, and ends as it is told to, not by the launcher).
    @Test func terminateKillsItsOwnRunningProcessAndNoOther() async throws {
        let directory = try Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let executable = directory.appendingPathComponent("app")
        try writeExecutableScript("#!/bin/sh\nexec sleep 60\n", to: executable)

        // Another process, which ends with status 3 at the end of its standard input.
        let (otherEnded, otherSink) = AsyncStream.makeStream(of: Int32.self)
        let other = Process()
        let input = Pipe()
        other.executableURL = URL(fileURLWithPath: "/bin/sh")
        other.arguments = ["-c", "read line; exit 3"]
        other.standardInput = input
        other.terminationHandler = { otherSink.yield($0.terminationStatus) }
        try other.run()

        let (launcher, pid, iterator) = try Self.launch(executable, in: directory)
        var endings = iterator
        launcher.terminate(other.processIdentifier)
        launcher.terminate(pid)
        #expect(await endings.next() == [pid, SIGKILL])

        // Still running, unsignalled: at the end of its input it ends as it says.
        try input.fileHandleForWriting.close()
        var otherEndings = otherEnded.makeAsyncIterator()
        #expect(await otherEndings.next() == 3)
    }

    /// A launched app starts as a program expects: no signal ignored (the daemon ignores `SIGPIPE`,
    /// as NIO sets, and Foundation's `Process` let children inherit that) and none blocked, none of
    /// the daemon's descriptors but the standard three, in its bundle directory, in a process group
    /// of its own; its exit status is reported.
    @Test func anAppStartsWithDefaultSignalsNoInheritedDescriptorsAndItsDirectory() async throws {
        let directory = try Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let report = directory.appendingPathComponent("report")
        let executable = directory.appendingPathComponent("app")
        try writeExecutableScript(
            """
            #!/bin/sh
            {
              grep -E '^(SigIgn|SigBlk):' /proc/self/status
              echo "cwd $(pwd)"
              echo "group $(cut -d ' ' -f 5 /proc/$$/stat) self $$"
              ls /proc/self/fd | sort -n | tr '\\n' ' '
            } > "\(report.path).tmp"
            mv "\(report.path).tmp" "\(report.path)"
            exit 7

            """, to: executable)
        // The daemon's state: SIGPIPE ignored (NIO's doing in the daemon, and in this test process:
        // it is not set back, as NIO would not set it again), a descriptor open.
        signal(SIGPIPE, SIG_IGN)
        let held = open(executable.path, O_RDONLY)
        defer { close(held) }
        #expect(held > 2)

        let launcher = ProcessLauncher()
        let (ended, sink) = AsyncStream.makeStream(of: [Int32].self)
        let pid = try launcher.launch(
            InstalledApp(bundleID: "a", bundleDirectory: directory.path, executable: executable.path),
            mode: .background, launchOptions: nil, appLinkPath: directory.appendingPathComponent("link").path
        ) { sink.yield([$0, $1]) }
        var endings = ended.makeAsyncIterator()
        #expect(await endings.next() == [pid, 7])
        let lines = try String(contentsOf: report, encoding: .utf8).split(separator: "\n").map(String.init)
        // Masks of signals 1 to 64, bit n-1 for signal n. Of the standard signals (1 to 31) none
        // is ignored or blocked. (The C library keeps 32 and 33 to itself: posix_spawn cannot set
        // them, and a child inherits whatever started the test.)
        func mask(_ name: String) -> UInt64? {
            lines.first { $0.hasPrefix(name + ":") }.flatMap {
                UInt64($0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces), radix: 16)
            }
        }
        let standard: UInt64 = (1 << 31) - 1
        #expect(mask("SigIgn").map { $0 & standard } == 0, "\(lines)")
        #expect(mask("SigBlk").map { $0 & standard } == 0, "\(lines)")
        #expect(lines.contains("cwd \(directory.resolvingSymlinksInPath().path)"), "\(lines)")
        #expect(lines.contains("group \(pid) self \(pid)"), "\(lines)")
        // 0, 1 and 2, and the one ls opens to list them.
        let descriptors = lines.last?.split(separator: " ").compactMap { Int($0) } ?? []
        #expect(descriptors.count == 4 && descriptors.prefix(3) == [0, 1, 2], "\(descriptors)")
    }

    /// An app whose bundle directory is gone is refused with a message that names the directory,
    /// not the executable, which is there.
    @Test func aMissingBundleDirectoryIsNamed() throws {
        let directory = try Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let executable = directory.appendingPathComponent("app")
        try writeExecutableScript("#!/bin/sh\nexit 0\n", to: executable)
        let gone = directory.appendingPathComponent("gone").path
        #expect {
            try ProcessLauncher().launch(
                InstalledApp(bundleID: "a", bundleDirectory: gone, executable: executable.path), mode: .background,
                launchOptions: nil, appLinkPath: directory.appendingPathComponent("link").path)
        } throws: { error in
            "\(error)" == "a's bundle directory \(gone) is not a directory"
        }
    }

    /// An app installed as a wrapper script that starts the real program without `exec` ends with
    /// it: the launcher kills the process group its child leads, so nothing it started runs on.
    @Test func terminateEndsWhatAWrapperStarted() async throws {
        let directory = try Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let executable = directory.appendingPathComponent("wrapper")
        let childFile = directory.appendingPathComponent("child")
        let script = """
            #!/bin/sh
            sleep 60 &
            echo $! > "\(childFile.path).tmp"
            mv "\(childFile.path).tmp" "\(childFile.path)"
            wait

            """
        try writeExecutableScript(script, to: executable)

        let (launcher, pid, iterator) = try Self.launch(executable, in: directory)
        var endings = iterator
        // Once the wrapper has started its program (it says so in a file), end it.
        let program = try #require(
            await Self.polled {
                (try? String(contentsOf: childFile, encoding: .utf8))
                    .flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            })
        #expect(launcher.terminate(pid))
        #expect(await endings.next() == [pid, SIGKILL])
        // The program is gone too (or a zombie, if no one reaps orphans here).
        let gone =
            try await Self.polled { () -> Bool? in
                let state = (try? String(contentsOfFile: "/proc/\(program)/stat", encoding: .utf8))?
                    .split(separator: ")").last?.split(separator: " ").first
                return state == nil || state == "Z" ? true : nil
            } ?? false
        #expect(gone, "the wrapper's program \(program) still runs")
        if !gone { kill(program, SIGKILL) }
    }
}
