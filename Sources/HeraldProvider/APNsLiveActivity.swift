import Foundation
import HeraldCore

/// A Live Activity push's payload (docs/live-activities.md): what starts, updates or
/// ends an activity, sent to a per-activity token, a push-to-start token, or broadcast on a channel.
/// ``payload()`` writes the `aps` dictionary ActivityKit reads.
public struct APNsLiveActivity: Sendable, Equatable {
    /// `aps.event`.
    public enum Event: String, Sendable, CaseIterable {
        /// Starts an activity (to a push-to-start token; never broadcast).
        case start
        /// Updates an activity's content.
        case update
        /// Ends an activity.
        case end
    }

    /// An alert shown with the update, under the user's settings (title, body, sound).
    public typealias Alert = ActivityAlert

    /// What the push does.
    public var event: Event
    /// `aps.timestamp`: when the content was made; an update older than the last applied is ignored.
    public var timestamp: Date
    /// `aps.content-state`: the app's state, a JSON object.
    public var contentState: JSONValue
    /// `aps.stale-date`: after it the activity shows as out of date.
    public var staleDate: Date?
    /// `aps.dismissal-date`: when an ended activity leaves the screen (in the past: at once).
    public var dismissalDate: Date?
    /// `aps.relevance-score`: which of an app's activities is shown first.
    public var relevanceScore: Double?
    /// `aps.alert` (and `sound`).
    public var alert: Alert?
    /// `aps.attributes-type`: on a start, the attributes' type name.
    public var attributesType: String?
    /// `aps.attributes`: on a start, the activity's fixed attributes, a JSON object.
    public var attributes: JSONValue?
    /// `aps.input-push-token: 1`: on a start, ask for the new activity's own push token.
    public var inputPushToken: Bool
    /// `aps.input-push-channel`: on a start, subscribe the new activity to this channel.
    public var inputPushChannel: String?

    /// Creates a payload.
    public init(
        event: Event, timestamp: Date = Date(), contentState: JSONValue = .object([:]), staleDate: Date? = nil,
        dismissalDate: Date? = nil, relevanceScore: Double? = nil, alert: Alert? = nil, attributesType: String? = nil,
        attributes: JSONValue? = nil, inputPushToken: Bool = false, inputPushChannel: String? = nil
    ) {
        self.event = event
        self.timestamp = timestamp
        self.contentState = contentState
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore
        self.alert = alert
        self.attributesType = attributesType
        self.attributes = attributes
        self.inputPushToken = inputPushToken
        self.inputPushChannel = inputPushChannel
    }

    /// The JSON payload, keys sorted; dates as whole UNIX seconds.
    public func payload() -> Data {
        func seconds(_ date: Date) -> JSONValue { .int(Int64(date.timeIntervalSince1970.rounded(.down))) }
        var aps: [String: JSONValue] = [
            "event": .string(event.rawValue), "timestamp": seconds(timestamp), "content-state": contentState,
        ]
        if let staleDate { aps["stale-date"] = seconds(staleDate) }
        if let dismissalDate { aps["dismissal-date"] = seconds(dismissalDate) }
        if let relevanceScore {
            aps["relevance-score"] =
                relevanceScore == relevanceScore.rounded() && abs(relevanceScore) < 1e15
                ? .int(Int64(relevanceScore)) : .double(relevanceScore)
        }
        if let alert {
            var object: [String: JSONValue] = [:]
            if let title = alert.title { object["title"] = .string(title) }
            if let body = alert.body { object["body"] = .string(body) }
            if !object.isEmpty { aps["alert"] = .object(object) }
            if let sound = alert.sound { aps["sound"] = .string(sound) }
        }
        if let attributesType { aps["attributes-type"] = .string(attributesType) }
        if let attributes { aps["attributes"] = attributes }
        if inputPushToken { aps["input-push-token"] = .int(1) }
        if let inputPushChannel { aps["input-push-channel"] = .string(inputPushChannel) }
        return JSONValue.object(["aps": .object(aps)]).jsonData()
    }
}

extension APNsNotification {
    /// A Live Activity push to an activity's token or a push-to-start token: topic
    /// `<bundle id>.push-type.liveactivity`, push type `liveactivity`.
    public static func liveActivity(
        _ activity: APNsLiveActivity, bundleID: String, priority: PushPriority? = nil, expiration: Int64? = nil,
        apnsID: String? = nil
    ) -> APNsNotification {
        APNsNotification(
            payload: activity.payload(), topic: bundleID + (PushType.liveactivity.topicSuffix ?? ""),
            pushType: .liveactivity, priority: priority, expiration: expiration, apnsID: apnsID)
    }
}
