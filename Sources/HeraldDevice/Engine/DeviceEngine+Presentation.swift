import Foundation
import HeraldCore

/// The presentation policy: how a push becomes a notification, how the user's settings, the app's
/// state and the foreground app's answer decide what is shown, and what the user's response does.
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
        switch pushType {
        case .widgets, .controls:
            // Not a notification: the app's widgets or controls reload; nothing is shown or kept.
            guard payload.aps.contentChanged else {
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
                .backgroundWake(app: app, notification: notification, budget: configuration.backgroundBudget))
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
            let deadline = now.addingTimeInterval(configuration.serviceExtensionBudget)
            apps[app]?.awaitingExtension[request.identifier] = AwaitingExtension(
                notification: notification, deadline: deadline)
            changedApps.insert(app)
            extensionDeadlines.schedule(.init(app: app, id: request.identifier), at: deadline)
            return actions + [.runServiceExtension(app: app, notification: notification, deadline: deadline)]
        }
        return actions + deliver(app, notification)
    }

    // MARK: - Presentation

    /// Records a delivery and decides its presentation by app state and settings.
    mutating func deliver(_ app: String, _ notification: DeliveredNotification) -> [DeviceAction] {
        guard var record = apps[app] else { return [] }
        guard record.settings.isAllowed else { return [] }  // never presented without authorization
        // Same identifier: replaces the delivered entry and moves it to the top.
        record.delivered.removeAll { $0.identifier == notification.identifier }
        record.delivered.insert(notification, at: 0)
        apps[app] = record
        changedApps.insert(app)
        if record.runState == .foreground {
            awaitingWillPresent[.init(app: app, id: notification.identifier)] = notification
            return [.askWillPresent(app: app, notification: notification)]
        }
        return present(app, notification, allowed: .all, foreground: false)
    }

    /// The presentation `options` ∩ the user's settings allow.
    mutating func present(
        _ app: String, _ notification: DeliveredNotification, allowed options: PresentationOptions,
        foreground: Bool
    ) -> [DeviceAction] {
        guard var record = apps[app] else { return [] }
        let s = record.settings
        let content = notification.request.content
        let provisional = s.authorizationStatus == .provisional
        let alertStyle: AlertStyle =
            options.contains(.banner) && s.alertSetting == .enabled && !provisional ? s.alertStyle : .none
        let inList = options.contains(.list) && s.notificationCenterSetting == .enabled
        var sound: PresentedSound?
        if options.contains(.sound), s.soundSetting == .enabled, !provisional, let requested = content.sound {
            switch requested {
            case .default: sound = .default
            case .named(let name): sound = .named(name)
            case .critical(let name, let volume):
                sound =
                    s.criticalAlertSetting == .enabled
                    ? .critical(name: name, volume: volume) : name.map { .named($0) } ?? .default
            }
        }
        var badge: Int?
        if options.contains(.badge), s.badgeSetting == .enabled, !provisional, let requested = content.badge {
            badge = requested
            record.badge = requested
            apps[app] = record
            changedApps.insert(app)
        }
        let category = record.categories[content.categoryIdentifier]
        var localized = notification
        localized.request.content = content.localized(
            with: record.app.localization, preferredLanguages: configuration.preferredLanguages)
        let presentation = Presentation(
            app: app, notification: localized, alertStyle: alertStyle, inList: inList,
            onLockScreen: s.lockScreenSetting == .enabled && alertStyle != .none, sound: sound, badge: badge,
            actions: category?.actions(for: .default) ?? [], minimalActions: category?.actions(for: .minimal) ?? [],
            requestedByForegroundApp: foreground)
        var actions: [DeviceAction] = []
        if alertStyle != .none || inList || sound != nil || badge != nil { actions.append(.present(presentation)) }
        if let badge { actions.append(.setBadge(app: app, badge: badge)) }
        return actions
    }

    // MARK: - Responses

    mutating func respond(_ app: String, _ identifier: String, _ actionIdentifier: String, _ text: String?)
        throws(NotificationError) -> [DeviceAction]
    {
        guard var record = apps[app] else { throw unknownApp(app) }
        guard let index = record.delivered.firstIndex(where: { $0.identifier == identifier }) else {
            throw .invalid("respond.identifier", "\(app) has no delivered notification \(identifier)")
        }
        let notification = record.delivered[index]
        let category = record.categories[notification.request.content.categoryIdentifier]
        let mode: LaunchMode
        var userText: String?
        var tell = true
        switch actionIdentifier {
        case StandardAction.defaultIdentifier:
            mode = .foreground
        case StandardAction.dismissIdentifier:
            mode = .background
            tell = category?.options.contains(.customDismissAction) == true
        default:
            guard let action = category?.action(withIdentifier: actionIdentifier) else {
                let known = (category?.actions.map(\.identifier) ?? []).joined(separator: ", ")
                throw .invalid(
                    "respond.action",
                    "\(actionIdentifier) is not an action of category '\(notification.request.content.categoryIdentifier)'"
                        + (known.isEmpty ? "" : " (actions: \(known))"))
            }
            mode = action.options.contains(.foreground) ? .foreground : .background
            if action.textInput != nil { userText = text ?? "" }
        }
        // Acting on a notification takes it out of the list.
        record.delivered.remove(at: index)
        apps[app] = record
        changedApps.insert(app)
        var actions: [DeviceAction] = [.removeFromScreen(app: app, identifiers: [identifier])]
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
}
