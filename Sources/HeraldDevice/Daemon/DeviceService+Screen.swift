import Foundation
import HeraldCore

/// What the device's user does on its screen (the web device): open an app from its icon, go back
/// to the home screen, and answer the system's permission dialog.
extension DeviceService {
    /// An app's authorization request waiting for the user's answer (`--permission interactive`).
    public struct PermissionPrompt: Sendable, Hashable, Codable {
        public var app: String
        /// What the app asked for.
        public var options: AuthorizationOptions
        /// When it asked.
        public var date: Date
    }

    /// The app the screen shows in front and what it was told last.
    public struct FrontApp: Sendable, Hashable, Codable {
        /// The app's bundle id.
        public var app: String
        /// What the app was told when it came to the front (`didReceive default for …`), if anything.
        public var told: String?
    }

    /// The app in the foreground, if any: the one the user opened (from its icon or a notification)
    /// until they go home, else one that put itself in the foreground.
    public var foregroundApp: String? {
        if let front, engine.apps[front.app] != nil { return front.app }
        return engine.apps.values.first { $0.runState == .foreground }?.app.bundleID
    }

    /// What the app in front was told when it came there.
    public var foregroundTold: String? { front?.told }

    /// Tapping the app's icon: the app comes to the foreground, launched if it is not running; the
    /// app that was in front goes to the background.
    public func open(_ app: String) async throws {
        let record = try need(app)
        front = FrontApp(app: app, told: "opened from the home screen")
        for other in engine.apps.values where other.runState == .foreground && other.app.bundleID != app {
            try await moveToBackground(other.app.bundleID)
        }
        switch record.runState {
        case .foreground:
            break
        case .background:
            perform([.bringToForeground(app: app)])
        case .notRunning:
            launch(app, mode: .foreground, launchOptions: nil)
        }
    }

    /// The home button: the app in front goes to the background.
    public func goHome() async throws {
        let running = engine.apps.values.first { $0.runState == .foreground }?.app.bundleID
        front = nil
        if let app = running { try await moveToBackground(app) }
    }

    private func moveToBackground(_ app: String) async throws {
        try await setRunState(app, .background)
        deliverEvent(app, .stateChanged(state: .background))
    }

    /// Records that `app` runs in `state` (or has stopped), in the engine and the log.
    func setRunState(_ app: String, _ state: AppRunState) async throws {
        let previous = engine.apps[app]?.runState
        try await apply(.appStateChanged(app: app, state: state))
        guard previous != state else { return }
        let text =
            switch state {
            case .foreground: "running in the foreground"
            case .background: "running in the background"
            case .notRunning: "not running"
            }
        note(.appState, app: app, text)
    }

    // MARK: - The permission dialog

    /// The requests waiting for the user, oldest first.
    public var permissionPrompts: [PermissionPrompt] {
        prompts.values.map(\.prompt).sorted { ($0.date, $0.app) < ($1.date, $1.app) }
    }

    /// The system's dialog for `app`'s request: shown until the user answers (``answerPrompt(app:allow:)``);
    /// a second request from the app while it shows waits for the same answer.
    func askUser(_ app: String, options: AuthorizationOptions) async throws {
        if prompts[app] == nil {
            prompts[app] = (PermissionPrompt(app: app, options: options, date: clock.now()), [])
            note(
                .system, app: app,
                "asks to send notifications (\(Self.optionNames(options))): waiting for the user's answer")
        }
        try await withCheckedThrowingContinuation { prompts[app]!.waiters.append($0) }
    }

    /// The user's answer to the dialog for `app`: recorded by the engine as the user's decision and
    /// handed to every request that waited for it.
    public func answerPrompt(app: String, allow: Bool) async throws {
        guard let (prompt, waiters) = prompts.removeValue(forKey: app) else {
            throw NotificationError.invalid("prompt", "\(app) is not asking for permission")
        }
        do {
            try await apply(.authorizationAnswered(app: app, options: prompt.options, granted: allow))
        } catch {
            for waiter in waiters { waiter.resume(throwing: error) }
            throw error
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Ends every request still waiting for the user (the daemon is stopping).
    func abandonPrompts() {
        for (prompt, waiters) in prompts.values {
            for waiter in waiters {
                waiter.resume(
                    throwing: AppLinkFailure(.deviceFailed, "the device stopped before the user answered"))
            }
            logger.notice("permission prompt abandoned", metadata: ["app": "\(prompt.app)"])
        }
        prompts = [:]
    }

    static func optionNames(_ options: AuthorizationOptions) -> String {
        let chosen = AuthorizationOptions.names.filter { options.contains($0.1) }.map(\.0)
        return chosen.isEmpty ? "nothing" : chosen.joined(separator: ", ")
    }
}
