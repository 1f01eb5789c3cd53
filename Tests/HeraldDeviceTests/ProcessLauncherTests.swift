import Foundation
import HeraldCore
import Testing

@testable import HeraldDevice

@Suite struct ProcessLauncherTests {
    /// The daemon ends a launch that does not connect in time through its launcher: the launcher
    /// kills a process it started that still runs, reports its end, and never signals a process it
    /// did not start (another process goes on, and ends as it is told to, not by the launcher).
    @Test func terminateKillsItsOwnRunningProcessAndNoOther() async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-launcher-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let executable = directory.appendingPathComponent("app")
        try "#!/bin/sh\nexec sleep 60\n".write(to: executable, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: executable.path)

        // Another process, which ends with status 3 at the end of its standard input.
        let (otherEnded, otherSink) = AsyncStream.makeStream(of: Int32.self)
        let other = Process()
        let input = Pipe()
        other.executableURL = URL(fileURLWithPath: "/bin/sh")
        other.arguments = ["-c", "read line; exit 3"]
        other.standardInput = input
        other.terminationHandler = { otherSink.yield($0.terminationStatus) }
        try other.run()

        let launcher = ProcessLauncher()
        let (ended, sink) = AsyncStream.makeStream(of: [Int32].self)
        let pid = try launcher.launch(
            InstalledApp(bundleID: "a", executable: executable.path), mode: .background, launchOptions: nil,
            appLinkPath: directory.appendingPathComponent("link").path
        ) { sink.yield([$0, $1]) }
        launcher.terminate(other.processIdentifier)
        launcher.terminate(pid)
        var endings = ended.makeAsyncIterator()
        #expect(await endings.next() == [pid, SIGKILL])

        // Still running, unsignalled: at the end of its input it ends as it says.
        try input.fileHandleForWriting.close()
        var otherEndings = otherEnded.makeAsyncIterator()
        #expect(await otherEndings.next() == 3)
    }
}
