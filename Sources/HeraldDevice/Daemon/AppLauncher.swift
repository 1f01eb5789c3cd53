import Foundation
import HeraldCore
import Synchronization

/// Starts app processes.
public protocol AppLauncher: Sendable {
    /// Starts `app`'s executable in `mode`, with the notification that launched it, telling it where the
    /// app link is. Returns the process id.
    func launch(
        _ app: InstalledApp, mode: LaunchMode, launchOptions: DeliveredNotification?, appLinkPath: String
    ) throws -> Int32

    /// As ``launch(_:mode:launchOptions:appLinkPath:)``, and calls `exited` with the process's id and
    /// status once it ends: the daemon then stops waiting for an app that ended before it connected.
    func launch(
        _ app: InstalledApp, mode: LaunchMode, launchOptions: DeliveredNotification?, appLinkPath: String,
        exited: @escaping @Sendable (_ pid: Int32, _ status: Int32) -> Void
    ) throws -> Int32

    /// Ends a process this launcher started that is still running, at once (as iOS's watchdog ends
    /// an app that does not finish launching); a process that has ended already is left alone.
    /// Returns whether the launcher could end it.
    @discardableResult
    func terminate(_ pid: Int32) -> Bool
}

extension AppLauncher {
    /// A launcher that cannot tell when its processes end: `exited` is never called.
    public func launch(
        _ app: InstalledApp, mode: LaunchMode, launchOptions: DeliveredNotification?, appLinkPath: String,
        exited: @escaping @Sendable (_ pid: Int32, _ status: Int32) -> Void
    ) throws -> Int32 {
        try launch(app, mode: mode, launchOptions: launchOptions, appLinkPath: appLinkPath)
    }

    /// A launcher that cannot end its processes: nothing happens, and it says so (`false`).
    @discardableResult
    public func terminate(_ pid: Int32) -> Bool { false }
}

/// Why an app could not be started.
public struct LaunchError: Error, CustomStringConvertible, Sendable {
    /// What went wrong.
    public var description: String
}

/// Starts the executable as a child process, with the app link, bundle id, launch mode and launch
/// options in its environment (`AppLink.Environment`), the bundle directory as its working
/// directory when there is one, the daemon's standard input, output and error and none of its
/// other descriptors, every signal at its default disposition and none blocked, in a process group
/// of its own (``ChildProcess``).
public struct ProcessLauncher: AppLauncher {
    /// The processes started here that have not ended, by id: only these are ever signalled.
    private let running = RunningProcesses()

    /// Creates the launcher.
    public init() {}

    public func launch(
        _ app: InstalledApp, mode: LaunchMode, launchOptions: DeliveredNotification?, appLinkPath: String
    ) throws -> Int32 {
        try launch(app, mode: mode, launchOptions: launchOptions, appLinkPath: appLinkPath, exited: { _, _ in })
    }

    public func launch(
        _ app: InstalledApp, mode: LaunchMode, launchOptions: DeliveredNotification?, appLinkPath: String,
        exited: @escaping @Sendable (_ pid: Int32, _ status: Int32) -> Void
    ) throws -> Int32 {
        guard let installed = app.executable else {
            throw LaunchError(description: "\(app.bundleID) has no executable installed")
        }
        // Absolute: the child looks it up after moving to its bundle directory.
        let executable = URL(fileURLWithPath: installed).standardizedFileURL.path
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw LaunchError(description: "\(executable) is not an executable file")
        }
        var isDirectory: ObjCBool = false
        if let directory = app.bundleDirectory,
            !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) || !isDirectory.boolValue
        {
            throw LaunchError(description: "\(app.bundleID)'s bundle directory \(directory) is not a directory")
        }
        var environment = ProcessInfo.processInfo.environment
        environment[AppLink.Environment.socket] = appLinkPath
        environment[AppLink.Environment.bundleID] = app.bundleID
        environment[AppLink.Environment.launchMode] = mode.rawValue
        if let launchOptions, let data = try? JSONEncoder.appLink.encode(launchOptions) {
            environment[AppLink.Environment.launchOptions] = String(decoding: data, as: UTF8.self)
        } else {
            environment[AppLink.Environment.launchOptions] = nil
        }
        let running = self.running
        // Under the lock until the id is in the set: a process that ends at once is forgotten only
        // after it was added.
        return try running.ids.withLock { ids in
            let pid: Int32
            do {
                pid = try ChildProcess.spawn(
                    path: executable, environment: environment, directory: app.bundleDirectory,
                    beforeReaping: { pid in _ = running.ids.withLock { $0.remove(pid) } }, ended: exited)
            } catch {
                throw LaunchError(description: "\(executable) could not start: \(error)")
            }
            ids.insert(pid)
            return pid
        }
    }

    /// Sends `SIGKILL` to the process, if it is one of this launcher's and has not ended, and to
    /// its process group when it leads one (each child starts in a group of its own), so that what
    /// a wrapper script started ends with it. A process that ended already is left alone: its id
    /// leaves the set before it is reaped, while no other process can have it.
    @discardableResult
    public func terminate(_ pid: Int32) -> Bool {
        running.ids.withLock { ids in
            guard ids.contains(pid) else { return true }
            return kill(getpgid(pid) == pid ? -pid : pid, SIGKILL) == 0
        }
    }
}

/// The ids of a ``ProcessLauncher``'s processes that run, shared by its copies and its processes'
/// termination handlers.
private final class RunningProcesses: Sendable {
    let ids = Mutex<Set<Int32>>([])
}
