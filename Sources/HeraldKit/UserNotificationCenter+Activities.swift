import Foundation
import HeraldCore

/// Live Activities through the center: the untyped calls and the observations `Activity` builds on.
extension UserNotificationCenter {
    // MARK: - Live Activities, untyped (``Activity`` is the typed face)

    /// Starts a Live Activity from its raw parts; throws ``ActivityError`` as an `AppLinkFailure`
    /// (``AppLinkFailure/activityError``).
    public func requestActivity(_ request: ActivityRequest) async throws -> LiveActivity {
        guard case .activity(let activity) = try await call(.requestActivity(request: request)) else {
            throw Self.unexpected("requestActivity")
        }
        return activity
    }

    /// Updates one of the app's live activities.
    public func updateActivity(id: String, content: LiveActivityContent, alert: ActivityAlert? = nil) async throws
        -> LiveActivity
    {
        guard case .activity(let activity) = try await call(.updateActivity(id: id, content: content, alert: alert))
        else { throw Self.unexpected("updateActivity") }
        return activity
    }

    /// Ends one of the app's live activities.
    public func endActivity(
        id: String, content: LiveActivityContent? = nil, dismissal: ActivityDismissalPolicy = .default
    ) async throws -> LiveActivity {
        guard
            case .activity(let activity) = try await call(.endActivity(id: id, content: content, dismissal: dismissal))
        else { throw Self.unexpected("endActivity") }
        return activity
    }

    /// The app's activities, live or ended and still shown, oldest first.
    public func activities() async throws -> [LiveActivity] {
        guard case .activities(let all) = try await call(.activities) else { throw Self.unexpected("activities") }
        return all
    }

    /// The app's push-to-start token (hex) for an attributes type.
    public func pushToStartToken(attributesType: String) async throws -> String {
        guard case .token(let token) = try await call(.pushToStartToken(attributesType: attributesType)) else {
            throw Self.unexpected("pushToStartToken")
        }
        return token
    }

    /// Calls `handler` with every change of one activity from now on (until it is dismissed), and
    /// first, at once, with the activity as last told if that is not `since`: nothing is missed
    /// between the snapshot a caller holds and its observing.
    /// Returns what ``stopObserving(_:)`` takes.
    func observeActivity(_ id: String, since: LiveActivity, _ handler: @escaping @Sendable (LiveActivity) -> Void)
        -> Int
    {
        shared.withLock { shared in
            shared.knownActivities.insert(id)
            shared.nextObserver += 1
            if let latest = shared.latestActivities[id], latest != since { handler(latest) }
            if shared.latestActivities[id]?.state != .dismissed {
                shared.activityObservers[id, default: [:]][shared.nextObserver] = handler
            }
            return shared.nextObserver
        }
    }

    /// Ends an observation (its stream's reader went away).
    func stopObserving(_ observer: Int) {
        shared.withLock { shared in
            for id in Array(shared.activityObservers.keys) {
                shared.activityObservers[id]?[observer] = nil
                if shared.activityObservers[id]?.isEmpty == true { shared.activityObservers[id] = nil }
            }
            for type in Array(shared.newActivityObservers.keys) {
                shared.newActivityObservers[type]?[observer] = nil
                if shared.newActivityObservers[type]?.isEmpty == true { shared.newActivityObservers[type] = nil }
            }
        }
    }

    /// How many observations are live (for tests: streams whose readers left leave none behind).
    var activityObserverCount: Int {
        shared.withLock { shared in
            shared.activityObservers.values.map(\.count).reduce(0, +)
                + shared.newActivityObservers.values.map(\.count).reduce(0, +)
        }
    }

    /// The activity as the daemon last told of it.
    func latestActivity(_ id: String) -> LiveActivity? { shared.withLock { $0.latestActivities[id] } }

    /// Calls `handler` with each activity of a type the device starts from now on.
    func observeNewActivities(_ type: String, _ handler: @escaping @Sendable (LiveActivity) -> Void) -> Int {
        shared.withLock { shared in
            shared.nextObserver += 1
            shared.newActivityObservers[type, default: [:]][shared.nextObserver] = handler
            return shared.nextObserver
        }
    }

}
