import Logging

extension Logger {
    /// A logger that prints nothing: the default of every library entry point that takes a logger,
    /// so that a program embedding Herald's libraries gets Herald's lines only when it passes its own
    /// (as AsyncHTTPClient's `HTTPClient.loggingDisabled`). The `herald` executable passes its own.
    public static var silent: Logger { Logger(label: "herald.silent", factory: { _ in SwiftLogNoOpLogHandler() }) }
}
