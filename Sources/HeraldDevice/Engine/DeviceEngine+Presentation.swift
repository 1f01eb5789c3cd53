import Foundation
import HeraldCore

/// The presentation policy: how a push becomes a notification, and how the user's settings, the
/// app's state, the interruption level, the Focus on, Scheduled Summary and the foreground app's
/// answer decide what is shown and heard (docs/device-engine.md, "What is shown").
extension DeviceEngine {
    // MARK: - Remote notifications

    mutating func remote(
        _ app: String, _ payload: Payload, apnsID: String, collapseID: String?, pushType: PushType = .alert,
        now: Date
    ) throws(NotificationError) -> [DeviceAction] {
        guard let record = apps[app] else { throw unknownApp(app) }
        let content = NotificationContent(payload: payload)
        let request = NotificationRequest(identifier: collapseID ?? apnsID, content: content, trigger: nil)
        let notification = DeliveredNotification(
            request: request, date: now, isRemote: true, late: false, apnsID: apnsID)
        takenPushes.append(apnsID)
        switch pushType {
        case .widgets, .controls:
            // Not a notification: the app's widgets or controls reload; nothing is shown or kept.
            guard payload.aps.contentChanged else {
                takenPushes.removeLast()
                throw NotificationError(
                    .invalidArgument, "a \(pushType.rawValue) push needs \"content-changed\": true in aps")
            }
            return [.reloadContent(app: app, kind: pushType == .widgets ? .widgets : .controls, apnsID: apnsID)]
        case .location:
            // The app's location query handler runs (launched in the background when it is not
            // running), whatever the user's notification settings; nothing is shown.
            var actions: [DeviceAction] = []
            if record.runState == .notRunning {
                actions.append(.launchApp(app: app, mode: .background, launchOptions: notification))
            }
            return actions + [.locationQuery(app: app, notification: notification)]
        default:
            break
        }
        let visible = payload.aps.hasUserVisibleContent
        var actions: [DeviceAction] = []
        if payload.aps.contentAvailable {
            // Launch first, so that the wake waits for the launched app to connect.
            if record.runState == .notRunning {
                actions.append(.launchApp(app: app, mode: .background, launchOptions: notification))
            }
            actions.append(
                .backgroundWake(
                    app: app, notification: notification, budget: configuration.backgroundBudget.timeInterval))
            if !visible { return actions }
        }
        let settings = record.settings
        let anyTypes =
            settings.isAllowed
            && [
                settings.alertSetting, settings.soundSetting, settings.badgeSetting, settings.notificationCenterSetting,
            ]
            .contains(.enabled)
        if !anyTypes {
            // No notification types registered: the push reaches the app silently, without any UI.
            return actions + [.deliverSilently(app: app, notification: notification)]
        }
        if payload.aps.mutableContent && payload.aps.alert != nil {
            let deadline = now.addingTimeInterval(configuration.serviceExtensionBudget.timeInterval)
            apps[app]?.awaitingExtension[request.identifier] = AwaitingExtension(
                notification: notification, deadline: deadline)
            changedApps.insert(app)
            extensionDeadlines.schedule(.init(app: app, id: request.identifier), at: deadline)
            return actions + [.runServiceExtension(app: app, notification: notification, deadline: deadline)]
        }
        return actions + deliver(app, notification, now: now)
    }

    // MARK: - Presentation

    /// Delivers a notification: a foreground app is asked how to present it; otherwise the system
    /// decides from the settings, the level, the Focus and Scheduled Summary.
    mutating func deliver(_ app: String, _ notification: DeliveredNotification, now: Date) -> [DeviceAction] {
        guard let record = apps[app] else { return [] }
        guard record.settings.isAllowed else { return [] }  // never presented without authorization
        if record.runState == .foreground {
            // In the list (if the user keeps one) until the answer says otherwise, so that a restart
            // meanwhile loses nothing; it takes no one's place until then.
            if localized(record, notification.request.content).hasText,
                record.settings.notificationCenterSetting == .enabled
            {
                insertDelivered(app, notification, placement: NotificationPlacement(), trim: false)
            }
            awaitingWillPresent[.init(app: app, id: notification.identifier)] = notification
            return [.askWillPresent(app: app, notification: notification)]
        }
        return present(app, notification, allowed: .all, foreground: false, now: now)
    }

    /// The content with its keys resolved in the user's languages.
    func localized(_ record: AppRecord, _ content: NotificationContent) -> NotificationContent {
        content.localized(with: record.app.localization, preferredLanguages: configuration.preferredLanguages)
    }

    /// The level a notification is delivered at: time-sensitive needs the app's Time Sensitive
    /// setting and critical the critical-alert setting; without them it is active.
    static func effectiveLevel(_ content: NotificationContent, _ s: NotificationSettings) -> InterruptionLevel {
        var level = content.interruptionLevel
        // A critical sound without a level asks for the critical level (a push's content already says so).
        if level == .active, case .critical = content.sound { level = .critical }
        switch level {
        case .timeSensitive: return s.timeSensitiveSetting == .enabled ? .timeSensitive : .active
        case .critical: return s.criticalAlertSetting == .enabled ? .critical : .active
        default: return level
        }
    }

    /// What `options` (everything for a background app, the answer of a foreground one) ∩ the user's
    /// settings ∩ the level, the Focus and Scheduled Summary allow, in the order of
    /// docs/device-engine.md: nothing to show; provisional; Scheduled Summary holds; a Focus
    /// silences; passive; active and time-sensitive; critical.
    mutating func present(
        _ app: String, _ notification: DeliveredNotification, allowed options: PresentationOptions,
        foreground: Bool, now: Date
    ) -> [DeviceAction] {
        guard let record = apps[app] else { return [] }
        let s = record.settings
        let content = notification.request.content
        let text = localized(record, content)
        let hasText = text.hasText
        let provisional = s.authorizationStatus == .provisional
        let level = Self.effectiveLevel(content, s)
        let zone = ZoneRules.of(configuration.timeZone)
        let silencedBy = device.focus.silences(device.focus.active(at: now, in: zone), app: app, level: level)
        let held =
            hasText && !foreground && device.summary.holds(app) && level != .timeSensitive && level != .critical

        var alertStyle: AlertStyle =
            options.contains(.banner) && s.alertSetting == .enabled && !provisional ? s.alertStyle : .none
        var inList = options.contains(.list) && s.notificationCenterSetting == .enabled
        var lockScreen = options.contains(.list) && s.lockScreenSetting == .enabled && !provisional
        var sound =
            options.contains(.sound)
            ? content.sound.flatMap { Self.presentedSound($0, level: level, s, provisional: provisional) } : nil
        var badge: Int?
        if options.contains(.badge), s.badgeSetting == .enabled, !provisional, let requested = content.badge {
            badge = requested
        }
        if !hasText {
            // Nothing to show: no banner, no entry anywhere; the badge and the sound still apply.
            alertStyle = .none
            inList = false
            lockScreen = false
        }
        if held || silencedBy != nil || level == .passive {
            // Held for the summary, silenced by a Focus, or passive: no banner and no sound.
            alertStyle = .none
            if sound.map({ if case .critical = $0 { false } else { true } }) ?? false { sound = nil }
        }
        if held || silencedBy != nil {
            lockScreen = false  // Notification Center only (a held one, at its summary)
        }
        if let badge { updateBadge(app, badge) }
        var placed = notification
        placed.placement = NotificationPlacement(
            lockScreen: lockScreen, silencedBy: silencedBy, quiet: provisional,
            timeSensitive: level == .timeSensitive, critical: level == .critical)
        if held { return holdForSummary(app, placed, badge: badge) }
        if hasText && (inList || lockScreen) {
            insertDelivered(app, placed, placement: placed.placement!)
            placed.placement = apps[app]?.delivered.first?.placement
        } else if foreground {
            removeDelivered(app, [notification.identifier])  // the foreground app asked for no list
        }
        var shown = placed
        shown.request.content = text
        // Passive never lights the screen; a silenced or held one has no banner, sound or lock-screen
        // entry left to light it.
        let wakes = level != .passive && (hasText && (alertStyle != .none || lockScreen) || sound != nil)
        let category = record.categories[content.categoryIdentifier]
        var actions: [DeviceAction] = []
        let presentation = Presentation(
            app: app, notification: shown, alertStyle: alertStyle, inList: inList && hasText,
            onLockScreen: lockScreen && hasText, level: level, silencedBy: hasText ? silencedBy : nil,
            wakesScreen: wakes, hasText: hasText, sound: sound, badge: badge,
            actions: category?.actions(for: .default) ?? [], minimalActions: category?.actions(for: .minimal) ?? [],
            requestedByForegroundApp: foreground)
        if hasText && (alertStyle != .none || inList || lockScreen) || sound != nil || badge != nil {
            actions.append(.present(presentation))
        } else if !foreground {
            // (A foreground app that answered with nothing has chosen silence: nothing to say.)
            actions.append(.nothingToShow(app: app, notification: shown))
        }
        if let badge { actions.append(.setBadge(app: app, badge: badge)) }
        return actions
    }

    /// The sound `requested` is heard with at `level`: a critical one even with sounds off or a Focus
    /// on, at the volume it names; any other only with the app's sounds on and not provisional.
    static func presentedSound(
        _ requested: NotificationSound, level: InterruptionLevel, _ s: NotificationSettings, provisional: Bool
    ) -> PresentedSound? {
        if level == .critical {
            switch requested {
            case .critical(let name, let volume): return .critical(name: name, volume: volume)
            case .named(let name): return .critical(name: name, volume: 1)
            case .default: return .critical(name: nil, volume: 1)
            }
        }
        guard s.soundSetting == .enabled, !provisional else { return nil }
        switch requested {
        case .default: return .default
        case .named(let name): return .named(name)
        case .critical(let name, _): return name.map { .named($0) } ?? .default
        }
    }

    /// Records the app's new badge (when it changed), to be saved.
    mutating func updateBadge(_ app: String, _ badge: Int) {
        guard apps[app]?.badge != badge else { return }
        apps[app]?.badge = badge
        changedApps.insert(app)
    }

    /// Holds a placed notification for the next Scheduled Summary: kept for Notification Center
    /// and the lock screen at the summary, taken off the screen if it replaced one shown there.
    mutating func holdForSummary(_ app: String, _ placed: DeliveredNotification, badge: Int?) -> [DeviceAction] {
        var placed = placed
        placed.placement?.lockScreen = true
        var actions: [DeviceAction] = []
        if hold(app, placed) {
            actions.append(.removeFromScreen(app: app, identifiers: [placed.identifier]))
        }
        actions.append(.held(app: app, notification: placed, until: summaryWake))
        if let badge { actions.append(.setBadge(app: app, badge: badge)) }
        return actions
    }

    // MARK: - Responses

    /// Whether answering with `actionIdentifier` needs the user's authentication on a locked device:
    /// opening the app (the default action, a foreground action) and actions that require it
    /// (the old guide: "foreground actions always require authentication").
    static func needsAuthentication(_ actionIdentifier: String, category: NotificationCategory?) -> Bool {
        switch actionIdentifier {
        case StandardAction.defaultIdentifier: true
        case StandardAction.dismissIdentifier: false
        default:
            category?.action(withIdentifier: actionIdentifier)?.effectiveOptions.contains(.authenticationRequired)
                ?? false
        }
    }

    mutating func respond(
        _ app: String, _ identifier: String, _ actionIdentifier: String, _ text: String?, authenticated: Bool,
        now: Date
    ) throws(NotificationError) -> [DeviceAction] {
        guard let record = apps[app] else { throw unknownApp(app) }
        guard let notification = record.delivered.first(where: { $0.identifier == identifier }) else {
            throw .invalid("respond.identifier", "\(app) has no delivered notification \(identifier)")
        }
        let content = notification.request.content
        let category = record.categories[content.categoryIdentifier]
        let mode: LaunchMode
        var userText: String?
        var tell = true
        switch actionIdentifier {
        case StandardAction.defaultIdentifier:
            guard content.opensApp else {
                throw .invalid(
                    "respond.action", "\(identifier) has no action (hasAction false): it can only be dismissed (OK)")
            }
            mode = .foreground
        case StandardAction.dismissIdentifier:
            mode = .background
            tell = category?.options.contains(.customDismissAction) == true
        default:
            guard let action = category?.action(withIdentifier: actionIdentifier) else {
                let known = (category?.actions.map(\.identifier) ?? []).joined(separator: ", ")
                throw .invalid(
                    "respond.action",
                    "\(actionIdentifier) is not an action of category '\(content.categoryIdentifier)'"
                        + (known.isEmpty ? "" : " (actions: \(known))"))
            }
            mode = action.options.contains(.foreground) ? .foreground : .background
            if action.textInput != nil { userText = text ?? "" }
        }
        var actions: [DeviceAction] = []
        if locked, Self.needsAuthentication(actionIdentifier, category: category) {
            guard authenticated else {
                let what =
                    actionIdentifier == StandardAction.defaultIdentifier
                    ? "opening \(InstalledApp.displayName(of: app))"
                    : "\(category?.action(withIdentifier: actionIdentifier)?.title ?? actionIdentifier)"
                throw NotificationError(
                    .passcodeRequired, "the device is locked: \(what) needs the passcode")
            }
            if mode == .foreground {
                // The app comes to the front: the device unlocks. A background action that needed the
                // passcode runs with the device still locked (it "does not unlock the device").
                locked = false
                actions.append(.lockChanged(locked: false))
            }
        }
        // Acting on a notification takes it out of the list.
        removeDelivered(app, [identifier])
        actions.append(.removeFromScreen(app: app, identifiers: [identifier]))
        guard tell else { return actions }
        switch (record.runState, mode) {
        case (.notRunning, _):
            actions.append(.launchApp(app: app, mode: mode, launchOptions: notification))
        case (.background, .foreground):
            actions.append(.bringToForeground(app: app))
        default:
            break
        }
        actions.append(
            .tellApp(
                app: app,
                response: NotificationResponse(
                    notification: notification, actionIdentifier: actionIdentifier, userText: userText)))
        return actions
    }

    /// Keep (Deliver Prominently, Deliver Quietly) or Turn Off on a provisional notification: the app
    /// is decided, as the user chose; its quiet notifications stay in the list.
    mutating func provisionalChoice(_ app: String, _ choice: ProvisionalChoice) throws(NotificationError)
        -> [DeviceAction]
    {
        guard let record = apps[app] else { throw unknownApp(app) }
        guard record.settings.authorizationStatus == .provisional else {
            throw .invalid(
                "provisional",
                "\(app) is \(record.settings.authorizationStatus.rawValue), not provisional: Keep and Turn Off "
                    + "are on provisional notifications only")
        }
        var asked = record.requestedOptions.subtracting(.provisional)
        var settings: NotificationSettings
        switch choice {
        case .deliverProminently:
            asked.formUnion(.alert)
            settings = .after(decision: true, options: asked)
        case .deliverQuietly:
            settings = .after(decision: true, options: asked.union(.alert))
            settings.alertSetting = .disabled
            settings.alertStyle = .none
            settings.soundSetting = .disabled
            settings.badgeSetting = .disabled
            settings.lockScreenSetting = .disabled
            settings.notificationCenterSetting = .enabled
        case .turnOff:
            settings = .after(decision: false, options: asked)
        }
        settings.groupingSetting = record.settings.groupingSetting
        settings.criticalAlertSetting = record.settings.criticalAlertSetting
        try modify(app) { $0.settings = settings }
        // Its notifications are no longer provisional ones: Keep and Turn Off leave them.
        for var notification in record.delivered where notification.placement?.quiet == true {
            notification.placement?.quiet = false
            replaceDelivered(app, notification)
        }
        if var held = apps[app]?.held, held.contains(where: { $0.placement?.quiet == true }) {
            for k in held.indices where held[k].placement?.quiet == true {
                held[k].placement?.quiet = false
                mark(app, held[k].identifier, held: true)
            }
            apps[app]?.held = held
        }
        return [.settingsChanged(app: app, settings: settings)]
    }
}
