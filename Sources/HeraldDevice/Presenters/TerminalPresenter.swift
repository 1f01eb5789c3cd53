import Foundation

/// Writes one clear line per presentation (and per other happening but an app's run state) to
/// standard output.
public struct TerminalPresenter: Presenter {
    let write: @Sendable (String) -> Void

    /// Writes to standard output, or to `write` (tests).
    public init(write: (@Sendable (String) -> Void)? = nil) {
        self.write = write ?? { line in FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
    }

    /// `[app] title — body (sound …, badge …, actions: …)`; other entries start with `·`.
    public func show(_ entry: DeviceLogEntry) {
        if entry.kind == .appState { return }
        if let presentation = entry.presentation {
            write("[\(entry.app)] \(presentation.line)")
        } else {
            write("· [\(entry.app)] \(entry.text)")
        }
    }
}
