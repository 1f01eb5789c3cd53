import Foundation
import HeraldCore

/// The app link, the daemon's side: app processes connect, say who they are, and call; each call
/// is answered here.
extension DeviceService {
    /// An app process connected (`hello`): it is running, in `state`; events held for it go out now.
    func connect(
        _ bundleID: String, state: AppRunState, send: @escaping @Sendable (AppLinkFrame) -> Void,
        close: @escaping @Sendable () -> Void = {}
    ) async throws -> Int {
        guard engine.apps[bundleID] != nil else {
            throw AppLinkFailure.protocolError("\(bundleID) is not installed on this device")
        }
        guard state != .notRunning else {
            throw AppLinkFailure.protocolError("state: an app that connects is running (foreground or background)")
        }
        if let previous = sessions[bundleID] {
            previous.send(.event(event: .stateChanged(state: .notRunning)))
            // The process before is not running any more: what it was asked and did not answer is
            // presented by the system, as when an app leaves.
            try await apply(.appStateChanged(app: bundleID, state: .notRunning))
        }
        nextSession += 1
        let session = nextSession
        sessions[bundleID] = Session(id: session, send: send, close: close)
        do {
            try await setRunState(bundleID, state)
        } catch {
            // Not connected after all: the app is told its hello failed (it may say it again), and
            // a launch waited for runs on to its deadline.
            if sessions[bundleID]?.id == session { sessions[bundleID] = nil }
            throw error
        }
        launchDeadlines.removeValue(forKey: bundleID)?.cancel()
        for event in waiting.removeValue(forKey: bundleID) ?? [] { send(.event(event: event)) }
        return session
    }

    /// The app's connection closed: it is not running any more.
    func disconnect(_ bundleID: String, session: Int) async {
        guard sessions[bundleID]?.id == session else { return }
        sessions[bundleID] = nil
        if engine.apps[bundleID] != nil {
            try? await setRunState(bundleID, .notRunning)
        }
    }

    /// Carries out one call of a connected app.
    func call(_ bundleID: String, _ call: AppLinkCall) async throws -> AppLinkResult {
        do {
            return try await answer(bundleID, call)
        } catch let error as NotificationError {
            throw AppLinkFailure(error)
        } catch let error as ActivityError {
            throw AppLinkFailure(error)
        } catch let error as AppLinkFailure {
            throw error
        } catch {
            throw AppLinkFailure(.deviceFailed, "the device failed: \(error)")
        }
    }

    func answer(_ app: String, _ call: AppLinkCall) async throws -> AppLinkResult {
        switch call {
        case .hello:
            throw AppLinkFailure.protocolError("hello: the app has already said who it is")
        case .setState(let state):
            guard state != .notRunning else {
                throw AppLinkFailure.protocolError("state: close the connection to stop running")
            }
            try await setRunState(app, state)
            return .done
        case .requestAuthorization(let options):
            // Interactive: the dialog records the user's answer; the request then gets it.
            if configuration.asksUser, engine.asksUser(app, for: options) { try await askUser(app, options: options) }
            let actions = try await apply(.requestAuthorization(app: app, options: options))
            for case .authorizationResult(_, let granted, let settings) in actions {
                note(.system, app: app, "authorization \(granted ? "granted" : "denied")")
                return .authorization(granted: granted, settings: settings)
            }
            throw AppLinkFailure.protocolError("requestAuthorization: the engine gave no answer")
        case .notificationSettings:
            return .settings(settings: try need(app).settings)
        case .setCategories(let categories):
            try await apply(.setCategories(app: app, categories: categories))
            return .done
        case .categories:
            return .categories(categories: try need(app).categories.values.sorted { $0.identifier < $1.identifier })
        case .add(let request):
            try await apply(.add(app: app, request: request))
            return .done
        case .pending:
            let pending = try need(app).pending.values.sorted {
                ($0.nextFireDate ?? .distantFuture, $0.request.identifier)
                    < ($1.nextFireDate ?? .distantFuture, $1.request.identifier)
            }
            return .pending(requests: pending)
        case .removePending(let identifiers):
            try await apply(.removePending(app: app, identifiers: identifiers))
            return .done
        case .delivered:
            return .delivered(notifications: try need(app).delivered)
        case .requestLocationAuthorization:
            if try need(app).locationDecided != true {
                try await apply(.setLocationAuthorization(app: app, allowed: configuration.userAllows))
                note(.system, app: app, "location \(configuration.userAllows ? "allowed" : "denied")")
            }
            return .locationAuthorization(granted: try need(app).locationAuthorized)
        case .removeDelivered(let identifiers):
            try await apply(.removeDelivered(app: app, identifiers: identifiers))
            return .done
        case .setBadge(let badge):
            try await apply(.setBadge(app: app, badge: badge))
            return .done
        case .registerForRemoteNotifications:
            return .token(token: try await register(app))
        case .unregisterForRemoteNotifications:
            try await gateway.unregister(app, environment: try need(app).app.apsEnvironment)
            return .done
        case .willPresentAnswer(let identifier, let options):
            try await apply(.willPresentAnswered(app: app, identifier: identifier, options: options))
            return .done
        case .responseHandled(let identifier):
            guard finish(app, identifier, kind: "response", detail: "") else {
                throw AppLinkFailure.protocolError("responseHandled: no response \(identifier) is waiting")
            }
            return .done
        case .backgroundFinished(let identifier, let result):
            // A background fetch, or a location query (both answered this way).
            guard
                finish(app, identifier, kind: "background fetch", detail: " (\(result.rawValue))")
                    || finish(app, identifier, kind: "location query", detail: "")
            else {
                throw AppLinkFailure.protocolError("backgroundFinished: no background work \(identifier) is waiting")
            }
            return .done
        case .serviceExtensionFinished(let identifier, let content):
            try await apply(.serviceExtensionFinished(app: app, identifier: identifier, content: content))
            return .done
        case .requestActivity(let request):
            let id = UUID().uuidString.lowercased()
            return .activity(activity: try await activityAfter(.request(app: app, id: id, request: request), id))
        case .updateActivity(let id, let content, let alert):
            return .activity(
                activity: try await activityAfter(.update(app: app, id: id, content: content, alert: alert), id))
        case .endActivity(let id, let content, let dismissal):
            return .activity(
                activity: try await activityAfter(.end(app: app, id: id, content: content, dismissal: dismissal), id))
        case .activities:
            let all = try need(app).liveActivities.activities.values.sorted { $0.startedAt < $1.startedAt }
            return .activities(activities: all)
        case .pushToStartToken(let type):
            return .token(token: try await pushToStartToken(app, attributesType: type))
        case .badge:
            return .badge(badge: try need(app).badge)
        case .addLegacy(let notification):
            try await apply(.addLegacy(app: app, notification: notification))
            return .done
        case .cancelLegacy(let identifiers):
            try await apply(.cancelLegacy(app: app, identifiers: identifiers))
            return .done
        case .requestFocusStatusAuthorization:
            if try need(app).focusStatusAuthorized == nil {
                try await apply(.setFocusStatusAuthorization(app: app, allowed: configuration.userAllows))
                note(.system, app: app, "Focus status \(configuration.userAllows ? "shared" : "not shared")")
            }
            return .focusAuthorization(granted: try need(app).focusStatusAuthorized == true)
        case .focusStatus:
            let shared = try need(app).focusStatusAuthorized == true
            return .focusStatus(
                status: FocusStatus(isFocused: shared ? engine.activeFocus(at: clock.now()) != nil : nil))
        }
    }

    /// Applies an app's activity call and returns the activity as it is after it.
    func activityAfter(_ event: ActivityEvent, _ id: String) async throws -> LiveActivity {
        let actions = try await applyActivity(event)
        guard
            let activity = actions.compactMap({ action -> LiveActivity? in
                if case .activityChanged(let a) = action, a.id == id { return a }
                return nil
            }).last
        else { throw AppLinkFailure(.deviceFailed, "the activity \(id) did not change") }
        return activity
    }

    /// `Activity.pushToStartToken`: the app's push-to-start token for an attributes type.
    func pushToStartToken(_ app: String, attributesType: String) async throws -> String {
        guard let environment = try need(app).app.apsEnvironment else {
            throw AppLinkFailure(
                ActivityError(.unentitled, "\(app) has no aps-environment, so it cannot have push tokens"))
        }
        do {
            let token = try await gateway.pushToStartToken(
                app, environment: environment, attributesType: attributesType,
                wait: configuration.registrationWait.timeInterval)
            try await applyActivity(.pushToStartTokenIssued(app: app, attributesType: attributesType, token: token))
            return token
        } catch GatewaySession.RegistrationError.noPushService {
            throw AppLinkFailure(
                .remoteNotificationsNotSupported, "this device has no push service (--gateway): no push tokens")
        } catch GatewaySession.RegistrationError.unreachable, GatewaySession.RegistrationError.linkClosed {
            throw AppLinkFailure(
                ActivityError(.pushServiceUnreachable, "the push service is not reachable; ask again once connected"))
        }
    }

    func need(_ app: String) throws -> AppRecord {
        guard let record = engine.apps[app] else { throw NotificationError.invalid("app", "\(app) is not installed") }
        return record
    }

    /// `registerForRemoteNotifications`: the app's token from the push service.
    func register(_ app: String) async throws -> String {
        let record = try need(app)
        guard let environment = record.app.apsEnvironment else {
            throw AppLinkFailure(
                .noAPSEnvironment, "no valid \"aps-environment\" entitlement string found for application \(app)")
        }
        do {
            return try await gateway.register(
                app, environment: environment, wait: configuration.registrationWait.timeInterval)
        } catch GatewaySession.RegistrationError.noPushService {
            throw AppLinkFailure(
                .remoteNotificationsNotSupported,
                "remote notifications are not supported: this device has no push service (--gateway)")
        } catch GatewaySession.RegistrationError.unreachable {
            throw AppLinkFailure(
                .remoteNotificationsNotSupported,
                "remote notifications are not available: the push service could not be reached within "
                    + "\(Int(configuration.registrationWait.timeInterval)) s; registering again once "
                    + "connected gives the token")
        } catch GatewaySession.RegistrationError.linkClosed {
            throw AppLinkFailure.protocolError("the push service link closed")
        }
    }
}
