import Foundation
import HeraldCore

/// Carrying out what the engine decided: presenting (through the presenters), handing events to the
/// apps (launching them when they are not running), and timing the work an app was given time for.
extension DeviceService {

    func perform(_ actions: [DeviceAction]) {
        for action in actions {
            switch action {
            case .authorizationResult:
                break
            case .present(let presentation):
                // The sound that would really play: the app's file, or the default and why.
                var summary = PresentationSummary(presentation, playing: engine.resolvedSound(for: presentation))
                summary.icon = Self.icon(of: engine.apps[presentation.app]?.app)
                note(
                    .presented, app: presentation.app, presentation.notification.identifier, summary.line,
                    presentation: summary)
            case .askWillPresent(let app, let notification):
                note(.willPresent, app: app, notification.identifier, "asking the foreground app how to present it")
                deliverEvent(app, .willPresent(notification: notification))
            case .deliverSilently(let app, let notification):
                note(.silent, app: app, notification.identifier, "delivered to the app without UI")
                deliverEvent(app, .remoteNotification(notification: notification))
            case .backgroundWake(let app, let notification, let budget):
                note(
                    .backgroundWake, app: app, notification.identifier,
                    "woken in the background for \(Int(budget)) s")
                if deliverEvent(app, .backgroundWake(notification: notification, budget: budget)) {
                    track(app, notification.identifier, kind: "background fetch", budget: budget)
                }
            case .runServiceExtension(let app, let notification, let deadline):
                note(.serviceExtension, app: app, notification.identifier, "given to the app's service extension")
                deliverEvent(app, .serviceExtension(notification: notification, deadline: deadline))
            case .launchApp(let app, let mode, let launchOptions):
                launch(app, mode: mode, launchOptions: launchOptions)
            case .bringToForeground(let app):
                note(.broughtForward, app: app, "brought to the foreground")
                _ = try? engine.handle(.appStateChanged(app: app, state: .foreground), now: clock.now())
                deliverEvent(app, .stateChanged(state: .foreground))
            case .tellApp(let app, let response):
                let id = response.notification.identifier
                note(
                    .response, app: app, id,
                    "response \(Self.actionName(response.actionIdentifier))"
                        + (response.userText.map { " with text \"\($0)\"" } ?? ""))
                if deliverEvent(app, .didReceive(response: response)) {
                    track(app, id, kind: "response", budget: configuration.engine.backgroundBudget)
                }
            case .setBadge(let app, let badge):
                note(.badge, app: app, "badge \(badge)")
            case .reloadContent(let app, let kind, let apnsID):
                // Delivered to the app when it runs; widgets and controls reload either way.
                let reached = deliverEvent(app, .contentChanged(kind: kind))
                note(
                    .contentChanged, app: app, apnsID,
                    "\(kind.rawValue) asked to reload" + (reached ? "" : " (the app is not running)"))
            case .locationQuery(let app, let notification):
                note(.locationQuery, app: app, notification.identifier, "given to the app's location query handler")
                if deliverEvent(app, .locationPush(notification: notification)) {
                    track(
                        app, notification.identifier, kind: "location query",
                        budget: configuration.engine.backgroundBudget)
                }
            case .pendingDropped(let app, let identifiers):
                note(
                    .dropped, app: app,
                    "pending limit: dropped \(identifiers.joined(separator: ", "))")
            case .removeFromScreen(let app, let identifiers):
                note(
                    .removed, app: app, identifiers.count == 1 ? identifiers[0] : nil,
                    "removed from the screen: \(identifiers.joined(separator: ", "))", identifiers: identifiers)
            }
        }
    }

    /// `AppIcon.png` in the app's bundle directory, if it is there.
    static func icon(of app: InstalledApp?) -> String? {
        guard let directory = app?.bundleDirectory else { return nil }
        let path = (directory as NSString).appendingPathComponent("AppIcon.png")
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    static func actionName(_ identifier: String) -> String {
        switch identifier {
        case StandardAction.defaultIdentifier: "default"
        case StandardAction.dismissIdentifier: "dismiss"
        default: identifier
        }
    }

    /// Sends an event to the app's process; while the app is being launched it waits for the app to
    /// connect. Returns whether the event will reach the app.
    @discardableResult
    func deliverEvent(_ app: String, _ event: AppLinkEvent) -> Bool {
        if let session = sessions[app] {
            session.send(.event(event: event))
        } else if waiting[app] != nil {
            waiting[app]!.append(event)
        } else {
            logger.debug("app not running; event not delivered", metadata: ["app": "\(app)"])
            return false
        }
        return true
    }

    func launch(_ app: String, mode: LaunchMode, launchOptions: DeliveredNotification?) {
        guard let record = engine.apps[app] else { return }
        if sessions[app] != nil || waiting[app] != nil { return }
        do {
            let pid = try launcher.launch(
                record.app, mode: mode, launchOptions: launchOptions, appLinkPath: configuration.appLinkPath)
            waiting[app] = []
            note(
                .launched, app: app, launchOptions?.identifier,
                "launched in the \(mode.rawValue) (pid \(pid))"
                    + (launchOptions.map { " with launch options for \($0.identifier)" } ?? ""))
        } catch {
            note(.launchFailed, app: app, launchOptions?.identifier, "could not launch: \(error)")
        }
    }

    func track(_ app: String, _ identifier: String, kind: String, budget: TimeInterval) {
        let key = "\(app)\n\(identifier)\n\(kind)"
        outstanding[key]?.timer.cancel()
        let clock = self.clock
        let started = clock.now()
        let deadline = started.addingTimeInterval(budget)
        let timer = Task { [weak self] in
            do { try await clock.sleep(until: deadline) } catch { return }
            await self?.expire(key, app: app, identifier: identifier, kind: kind, budget: budget)
        }
        outstanding[key] = Outstanding(started: started, timer: timer)
    }

    func expire(_ key: String, app: String, identifier: String, kind: String, budget: TimeInterval) {
        guard outstanding.removeValue(forKey: key) != nil else { return }
        note(.budgetExceeded, app: app, identifier, "\(kind) did not finish within \(Int(budget)) s")
    }

    func finish(_ app: String, _ identifier: String, kind: String, detail: String) -> Bool {
        let key = "\(app)\n\(identifier)\n\(kind)"
        guard let work = outstanding.removeValue(forKey: key) else { return false }
        work.timer.cancel()
        let seconds = clock.now().timeIntervalSince(work.started)
        note(
            .finished, app: app, identifier, "\(kind) finished after \(String(format: "%.1f", seconds)) s\(detail)")
        return true
    }

    func note(_ kind: DeviceLogEntry.Kind, app: String, _ text: String) {
        note(kind, app: app, nil, text)
    }

    func note(
        _ kind: DeviceLogEntry.Kind, app: String, _ identifier: String?, _ text: String,
        presentation: PresentationSummary? = nil, identifiers: [String]? = nil
    ) {
        let entry = DeviceLogEntry(
            date: clock.now(), app: app, kind: kind, identifier: identifier, text: text, presentation: presentation,
            identifiers: identifiers)
        entries.append(entry)
        if entries.count > configuration.logLimit { entries.removeFirst(entries.count - configuration.logLimit) }
        logger.info(
            "\(kind.rawValue)", metadata: ["app": "\(app)", "id": "\(identifier ?? "-")", "text": "\(text)"])
        for presenter in presenters { presenter.show(entry) }
        feed.show(entry)
    }
}
