import Foundation
import HeraldCore

/// What happens to an app's Live Activities (docs/live-activities.md), as input to the engine.
public enum ActivityEvent: Sendable {
    /// The app starts an activity (`Activity.request`); `id` is the new activity's.
    case request(app: String, id: String, request: ActivityRequest)
    /// The app updates one of its activities (`activity.update`).
    case update(app: String, id: String, content: LiveActivityContent, alert: ActivityAlert?)
    /// The app ends one of its activities (`activity.end`).
    case end(app: String, id: String, content: LiveActivityContent?, dismissal: ActivityDismissalPolicy)
    /// The push service gave an activity its token (hex).
    case tokenIssued(app: String, id: String, token: String)
    /// The push service gave the app its push-to-start token (hex) for an attributes type.
    case pushToStartTokenIssued(app: String, attributesType: String, token: String)
    /// A `liveactivity` push to `token` (hex): an activity's token or a push-to-start token.
    case push(app: String, payload: Payload, apnsID: String, priority: PushPriority, token: String)
    /// A broadcast on a channel the app's activities subscribe to.
    case broadcast(app: String, channelID: String, payload: Payload, uniqueID: String, priority: PushPriority)
    /// The user allows or forbids the app's Live Activities (Settings); forbidding ends them.
    case setAllowed(app: String, allowed: Bool)
}

/// An update over its activity's hourly budget, held until the budget has room again.
public struct HeldActivityUpdate: Sendable, Hashable, Codable {
    /// What the push said.
    public var event: LiveActivityEvent
    /// Its `timestamp`.
    public var timestamp: Date
    /// Its content, when it had `content-state`.
    public var content: LiveActivityContent?
    /// Its alert.
    public var alert: ActivityAlert?
    /// Its `dismissal-date`.
    public var dismissalDate: Date?
    /// The push's `apns-id` (or a broadcast's unique id).
    public var apnsID: String
    /// When it may be applied.
    public var release: Date
}

/// What the engine keeps per app about its Live Activities. Optional in ``AppRecord`` so that
/// records saved before activities existed still load.
public struct AppActivities: Sendable, Hashable, Codable {
    /// The app's activities, live or ended and not yet dismissed, by id.
    public var activities: [String: LiveActivity] = [:]
    /// Push-to-start tokens (hex) by attributes type.
    public var pushToStartTokens: [String: String] = [:]
    /// `false` when the user turned the app's Live Activities off.
    public var allowed = true
    /// Per activity, when each priority-10 update of the last hour was applied.
    public var budgetUse: [String: [Date]] = [:]
    /// Per activity, the newest update waiting for budget.
    public var held: [String: HeldActivityUpdate] = [:]

    /// Nothing yet.
    public init() {}
}
