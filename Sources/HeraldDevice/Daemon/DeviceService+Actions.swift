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
                if mode == .foreground { front = FrontApp(app: app, told: nil) }
                launch(app, mode: mode, launchOptions: launchOptions)
            case .bringToForeground(let app):
                front = FrontApp(app: app, told: nil)
                note(.broughtForward, app: app, "brought to the foreground")
                _ = try? engine.handle(.appStateChanged(app: app, state: .foreground), now: clock.now())
                deliverEvent(app, .stateChanged(state: .foreground))
            case .tellApp(let app, let response):
                let id = response.notification.identifier
                if front?.app == app {
                    front?.told =
                        "didReceive \(Self.actionName(response.actionIdentifier)) for \(id)"
                        + (response.userText.map { " with text \"\($0)\"" } ?? "")
                }
                note(
                    .response, app: app, id,
                    "response \(Self.actionName(response.actionIdentifier))"
                        + (response.userText.map { " with text \"\($0)\"" } ?? ""))
                if deliverEvent(app, .didReceive(response: response)) {
                    track(app, id, kind: "response", budget: configuration.engine.backgroundBudget.timeInterval)
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
                        budget: configuration.engine.backgroundBudget.timeInterval)
                }
            case .activityChanged(let activity):
                note(.activity, app: activity.app, activity.id, Self.line(activity), activity: activity)
                // The app hears of it when it runs (the activity's widget shows it either way).
                if sessions[activity.app] != nil || waiting[activity.app] != nil {
                    deliverEvent(activity.app, .activityChanged(activity: activity))
                }
            case .activityAlert(let app, let id, let alert, let sound):
                let heard = sound.map { " (sound \($0 == .default ? "default" : "\($0)"))" } ?? " (silent)"
                // The entry carries the activity with the alert as shown: its sound only when it plays.
                var shown = engine.apps[app]?.liveActivities.activities[id]
                shown?.alert = ActivityAlert(
                    title: alert.title, body: alert.body, sound: sound == nil ? nil : alert.sound ?? "default")
                note(
                    .activityAlert, app: app, id,
                    "activity \(id) alert: \([alert.title, alert.body].compactMap { $0 }.joined(separator: " — "))"
                        + heard, activity: shown)
            case .activityNote(let app, let id, let text):
                note(.activity, app: app, id, "activity \(id): \(text)")
            case .requestActivityToken(let app, let id):
                requestActivityToken(app, id)
            case .releaseActivityToken(let app, let id):
                let environment = engine.apps[app]?.app.apsEnvironment
                Task { await gateway.releaseActivityToken(app, environment: environment, activityID: id) }
            case .subscribeChannel(let app, let channel):
                let environment = engine.apps[app]?.app.apsEnvironment ?? .development
                Task { await gateway.subscribe(app, environment: environment, channels: [channel]) }
            case .unsubscribeChannel(let app, let channel):
                let environment = engine.apps[app]?.app.apsEnvironment ?? .development
                Task { await gateway.unsubscribe(app, environment: environment, channels: [channel]) }
            case .pendingDropped(let app, let identifiers):
                note(
                    .dropped, app: app,
                    "pending limit: dropped \(identifiers.joined(separator: ", "))")
            case .removeFromScreen(let app, let identifiers):
                note(
                    .removed, app: app, identifiers.count == 1 ? identifiers[0] : nil,
                    "removed from the screen: \(identifiers.joined(separator: ", "))", identifiers: identifiers)
            case .held(let app, let notification, let until):
                let content = engine.apps[app].map { engine.localized($0, notification.request.content) }
                let text = [content?.title, content?.body].compactMap { $0 }.filter { !$0.isEmpty }
                    .joined(separator: " — ")
                note(
                    .held, app: app, notification.identifier,
                    "held for the Scheduled Summary"
                        + (until.map { " at \(Self.localTime($0, engine.configuration.timeZone))" } ?? "")
                        + (text.isEmpty ? "" : ": \(text)"))
            case .nothingToShow(let app, let notification):
                note(.notShown, app: app, notification.identifier, "nothing to show, play or count")
            case .summaryDelivered(let summary, let notifications):
                let entry = SummaryEntry(
                    id: summary.id, title: summary.title,
                    items: notifications.map {
                        let content = $0.notification.request.content
                        return SummaryEntry.Item(
                            app: $0.app, identifier: $0.notification.identifier,
                            title: [content.title, content.subtitle].filter { !$0.isEmpty }.joined(separator: " / "),
                            body: content.body, relevanceScore: content.relevanceScore)
                    })
                note(.summary, app: "device", summary.id, entry.line, summary: entry)
            case .focusChanged(let focus):
                let zone = engine.configuration.timeZone
                let text =
                    focus.map {
                        "Focus \($0.name) on" + ($0.scheduled ? " (scheduled)" : "")
                            + ($0.until.map { " until \(Self.localTime($0, zone))" } ?? "")
                    } ?? "Focus off"
                note(.focus, app: "device", focus?.identifier, text, focus: focus)
                for (app, session) in sessions where engine.apps[app]?.focusStatusAuthorized == true {
                    session.send(.event(event: .focusStatusChanged(status: FocusStatus(isFocused: focus != nil))))
                }
            case .lockChanged(let locked):
                note(.lock, app: "device", nil, locked ? "locked" : "unlocked", locked: locked)
            case .settingsChanged(let app, let settings):
                note(.system, app: app, "settings changed: \(Self.settingsText(settings))")
            }
        }
    }

    /// `2026-11-26 08:00` in the device's zone (integer arithmetic on the zone's rules: no formatter,
    /// nothing shared between threads).
    static func localTime(_ date: Date, _ zone: TimeZone) -> String {
        let local = ZoneRules.of(zone).local(Int64(date.timeIntervalSince1970.rounded(.down)))
        let day = Civil.floorDiv(local, Civil.secondsPerDay)
        let (y, m, d) = Civil.date(day)
        let minutes = Int((local - day * Civil.secondsPerDay) / 60)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(y)-\(two(m))-\(two(d)) \(two(minutes / 60)):\(two(minutes % 60))"
    }

    /// What the user allows the app now, in words: `authorized (banners, sounds, badges)`.
    static func settingsText(_ s: NotificationSettings) -> String {
        var allowed: [String] = []
        if s.alertSetting == .enabled, s.alertStyle != .none {
            allowed.append(s.alertStyle == .alert ? "alerts" : "banners")
        }
        if s.soundSetting == .enabled { allowed.append("sounds") }
        if s.badgeSetting == .enabled { allowed.append("badges") }
        if s.lockScreenSetting == .enabled { allowed.append("lock screen") }
        if s.notificationCenterSetting == .enabled { allowed.append("Notification Center") }
        return "\(s.authorizationStatus.rawValue)" + (allowed.isEmpty ? "" : " (\(allowed.joined(separator: ", ")))")
    }

    /// One line for an activity: `activity <id> <type> <attributes> <state>: <content state> (relevance …, …)`.
    static func line(_ activity: LiveActivity) -> String {
        var extras: [String] = []
        if activity.content.relevanceScore != 0 { extras.append("relevance \(activity.content.relevanceScore)") }
        if let stale = activity.content.staleDate { extras.append("stale at \(AppLinkDates.format(stale))") }
        if let dismiss = activity.dismissAt, activity.state == .ended {
            extras.append("dismissed at \(AppLinkDates.format(dismiss))")
        }
        if let token = activity.pushToken, activity.isLive { extras.append("token \(token)") }
        if let channel = activity.channelID { extras.append("channel \(channel)") }
        let state = String(decoding: activity.content.state.jsonData(), as: UTF8.self)
        let attributes = String(decoding: activity.attributes.jsonData(), as: UTF8.self)
        return "activity \(activity.id) \(activity.attributesType) \(attributes) \(activity.state.rawValue): \(state)"
            + (extras.isEmpty ? "" : " (\(extras.joined(separator: ", ")))")
    }

    /// Asks the push service for an activity's token and hands it to the engine; without a link the
    /// request waits for the next connection (``activityNeeds()``).
    func requestActivityToken(_ app: String, _ id: String) {
        guard let environment = engine.apps[app]?.app.apsEnvironment else { return }
        Task {
            guard let token = await gateway.activityToken(app, environment: environment, activityID: id) else { return }
            _ = try? await applyActivity(.tokenIssued(app: app, id: id, token: token))
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

    /// A launched app's process ended. If it never connected, what waited for it is dropped and the
    /// next event that needs it launches it again; one that connected and went is already done with.
    func exited(_ app: String, pid: Int32, status: Int32) {
        // Only the launch being waited for: an earlier process of the app may end after a new one started.
        guard launchedPIDs[app] == pid else { return }
        launchedPIDs[app] = nil
        launchDeadlines.removeValue(forKey: app)?.cancel()
        guard sessions[app] == nil, let dropped = dropWaiting(app) else { return }
        note(
            .launchFailed, app: app, nil,
            "exited (status \(status)) before it connected"
                + (dropped.isEmpty ? "" : "; \(dropped.count) event\(dropped.count == 1 ? "" : "s") for it dropped"))
    }

    /// A launched app did not connect in time (``Configuration/launchWait``): its process is ended,
    /// what waited for it is dropped, and the next event that needs it launches it again.
    func launchTimedOut(_ app: String, pid: Int32) {
        guard launchedPIDs[app] == pid, sessions[app] == nil, let dropped = dropWaiting(app) else { return }
        launchedPIDs[app] = nil
        launchDeadlines[app] = nil
        let ended = launcher.terminate(pid)
        let wait = configuration.launchWait.timeInterval
        let seconds = wait == wait.rounded() ? "\(Int(wait))" : "\(wait)"
        note(
            .launchFailed, app: app, nil,
            "did not connect within \(seconds) s of its launch; "
                + (ended ? "ended (pid \(pid))" : "left running (pid \(pid)): its launcher cannot end it")
                + (dropped.isEmpty ? "" : "; \(dropped.count) event\(dropped.count == 1 ? "" : "s") for it dropped"))
    }

    /// Drops what waited for a launched app that will not connect now: its events, and the budgets
    /// they started (a budget for an event no app got would otherwise run out, and its expiry reach
    /// the app's next process). `nil` when nothing waited for it.
    private func dropWaiting(_ app: String) -> [AppLinkEvent]? {
        guard let dropped = waiting.removeValue(forKey: app) else { return nil }
        for key in outstanding.keys where key.hasPrefix(app + "\n") {
            outstanding.removeValue(forKey: key)?.timer.cancel()
        }
        return dropped
    }

    func launch(_ app: String, mode: LaunchMode, launchOptions: DeliveredNotification?) {
        guard let record = engine.apps[app] else { return }
        if sessions[app] != nil || waiting[app] != nil { return }
        do {
            let pid = try launcher.launch(
                record.app, mode: mode, launchOptions: launchOptions, appLinkPath: configuration.appLinkPath
            ) { [weak self] pid, status in
                guard let self else { return }
                Task { await self.exited(app, pid: pid, status: status) }
            }
            waiting[app] = []
            launchedPIDs[app] = pid
            let clock = self.clock
            let deadline = clock.now().addingTimeInterval(configuration.launchWait.timeInterval)
            launchDeadlines[app] = Task { [weak self] in
                do { try await clock.sleep(until: deadline) } catch { return }
                await self?.launchTimedOut(app, pid: pid)
            }
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

    /// The app's time for background work ran out: as iOS suspends such an app, the daemon tells it
    /// (``AppLinkEvent/backgroundTimeExpired(identifier:kind:)``) and, unless it is in the foreground,
    /// takes it out of the running apps (its link is closed: the app counts as not running).
    func expire(_ key: String, app: String, identifier: String, kind: String, budget: TimeInterval) async {
        guard outstanding.removeValue(forKey: key) != nil else { return }
        note(.budgetExceeded, app: app, identifier, "\(kind) did not finish within \(Int(budget)) s")
        guard let session = sessions[app] else { return }
        session.send(.event(event: .backgroundTimeExpired(identifier: identifier, kind: kind)))
        guard engine.apps[app]?.runState != .foreground else { return }
        sessions[app] = nil
        session.send(.event(event: .stateChanged(state: .notRunning)))
        session.close()
        for other in outstanding.keys where other.hasPrefix(app + "\n") {
            outstanding.removeValue(forKey: other)?.timer.cancel()
        }
        try? await setRunState(app, .notRunning)
        note(.suspended, app: app, identifier, "suspended: its \(kind) ran past \(Int(budget)) s")
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
        presentation: PresentationSummary? = nil, identifiers: [String]? = nil, activity: LiveActivity? = nil,
        summary: SummaryEntry? = nil, focus: ActiveFocus? = nil, locked: Bool? = nil
    ) {
        let entry = DeviceLogEntry(
            date: clock.now(), app: app, kind: kind, identifier: identifier, text: text, presentation: presentation,
            identifiers: identifiers, activity: activity, summary: summary, focus: focus, locked: locked)
        entries.append(entry)
        while entries.count > configuration.logLimit { entries.removeFirst() }
        logger.info(
            "\(kind.rawValue)", metadata: ["app": "\(app)", "id": "\(identifier ?? "-")", "text": "\(text)"])
        for presenter in presenters { presenter.show(entry) }
        feed.show(entry)
    }
}
