import Foundation
import HeraldCore

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
}

extension AppLauncher {
    /// A launcher that cannot tell when its processes end: `exited` is never called.
    public func launch(
        _ app: InstalledApp, mode: LaunchMode, launchOptions: DeliveredNotification?, appLinkPath: String,
        exited: @escaping @Sendable (_ pid: Int32, _ status: Int32) -> Void
    ) throws -> Int32 {
        try launch(app, mode: mode, launchOptions: launchOptions, appLinkPath: appLinkPath)
    }
}

/// Why an app could not be started.
public struct LaunchError: Error, CustomStringConvertible, Sendable {
    /// What went wrong.
    public var description: String
}

/// Starts the executable as a child process, with the app link, bundle id, launch mode and launch
/// options in its environment (`AppLink.Environment`), the bundle directory as its working
/// directory when there is one, and the daemon's standard output and error.
public struct ProcessLauncher: AppLauncher {
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
        guard let executable = app.executable else {
            throw LaunchError(description: "\(app.bundleID) has no executable installed")
        }
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw LaunchError(description: "\(executable) is not an executable file")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        var environment = ProcessInfo.processInfo.environment
        environment[AppLink.Environment.socket] = appLinkPath
        environment[AppLink.Environment.bundleID] = app.bundleID
        environment[AppLink.Environment.launchMode] = mode.rawValue
        if let launchOptions, let data = try? JSONEncoder.appLink.encode(launchOptions) {
            environment[AppLink.Environment.launchOptions] = String(decoding: data, as: UTF8.self)
        } else {
            environment[AppLink.Environment.launchOptions] = nil
        }
        process.environment = environment
        if let directory = app.bundleDirectory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        // The process is reaped by Foundation when it exits.
        process.terminationHandler = { exited($0.processIdentifier, $0.terminationStatus) }
        do {
            try process.run()
        } catch {
            throw LaunchError(description: "\(executable) could not start: \(error.localizedDescription)")
        }
        return process.processIdentifier
    }
}
