import Foundation
import HeraldCore

/// What the provider API answers.
public struct ProviderResponse: Sendable, Equatable {
    /// The HTTP status.
    public var status: Int
    /// `apns-id`: echoed or generated.
    public var apnsID: String
    /// `apns-unique-id`: development environment, successful pushes only.
    public var uniqueID: String?
    /// The reason, for errors.
    public var reason: APNsReason?
    /// For 410: milliseconds since 1970 at which the token stopped being valid for the topic.
    public var timestamp: Int64?
    /// Why the request was refused, in more words than the reason, for the gateway's log; never
    /// sent to the client.
    public var note: String?
    /// Answers of the channel management and broadcast APIs name their identifier
    /// `apns-request-id` (its value is ``apnsID``) instead of `apns-id`.
    public var identifiesRequest = false
    /// `apns-channel-id`: on a channel created.
    public var channelID: String?
    /// A reason of the broadcast and channel management APIs, for their errors.
    public var broadcastReason: BroadcastReason?
    /// A JSON body other than a reason's (a channel's settings, a list of channels).
    public var json: String?
    /// What Apple would do quietly with the push (``PushWarning``): sent as the `herald-warnings`
    /// header on its answer, counted in `/metrics`.
    public var warnings = PushWarnings()
    /// Under `--strict`: the warning the push was refused for (400, this as its `reason`).
    public var warningReason: PushWarning?
    /// Set by a fault rule: the answer is the rule's, not the push's own.
    public var injected = false
    /// Set by a fault rule: what the transport also does to the connection (or does instead of
    /// answering, for ``ConnectionFaultAction/close``).
    public var connectionFault: ConnectionFaultAction?
    /// For a push to a device refused by the provider API: what the delivery log's `rejected` line
    /// says of it (``ProviderAPI/handle(_:connection:now:)`` sets it); never sent.
    public var subject: RefusedPush?

    /// The reason's name, whichever API's (or, under `--strict`, Herald's) it is.
    public var reasonText: String? { reason?.rawValue ?? broadcastReason?.rawValue ?? warningReason?.rawValue }

    /// An answer of the channel management or broadcast API.
    public static func request(
        _ status: Int, requestID: String, channelID: String? = nil, uniqueID: String? = nil, json: String? = nil
    ) -> ProviderResponse {
        var response = ProviderResponse(
            status: status, apnsID: requestID, uniqueID: uniqueID, reason: nil, timestamp: nil)
        response.identifiesRequest = true
        response.channelID = channelID
        response.json = json
        return response
    }

    /// An error of the channel management or broadcast API with one of their own reasons.
    public static func requestError(_ reason: BroadcastReason, requestID: String, note: String? = nil)
        -> ProviderResponse
    {
        var response = ProviderResponse(
            status: reason.status, apnsID: requestID, uniqueID: nil, reason: nil, timestamp: nil, note: note)
        response.identifiesRequest = true
        response.broadcastReason = reason
        return response
    }

    /// An error of the channel management or broadcast API with a reason they share with the
    /// provider API.
    public static func requestError(_ reason: APNsReason, requestID: String, note: String? = nil) -> ProviderResponse {
        var response = ProviderResponse.error(reason, apnsID: requestID, note: note)
        response.identifiesRequest = true
        return response
    }

    /// A 200.
    public static func ok(apnsID: String, uniqueID: String?) -> ProviderResponse {
        ProviderResponse(status: 200, apnsID: apnsID, uniqueID: uniqueID, reason: nil, timestamp: nil)
    }

    /// Under `--strict`: a push refused for what Apple would do quietly with it, 400 with the first
    /// warning as its reason and all of them in `herald-warnings`.
    public static func refused(for warnings: PushWarnings, apnsID: String) -> ProviderResponse {
        var response = ProviderResponse(status: 400, apnsID: apnsID, uniqueID: nil, reason: nil, timestamp: nil)
        response.warnings = warnings
        response.warningReason = warnings.first
        response.note = warnings.map(\.detail).joined(separator: "; ")
        return response
    }

    /// An error answer.
    public static func error(_ reason: APNsReason, apnsID: String, timestamp: Int64? = nil, note: String? = nil)
        -> ProviderResponse
    {
        ProviderResponse(
            status: reason.status, apnsID: apnsID, uniqueID: nil, reason: reason,
            timestamp: reason.status == 410 ? timestamp : nil, note: note)
    }

    /// The JSON body: empty for 200, `{"reason":"…"}` (plus `"timestamp"` for 410) otherwise; a
    /// channel's settings or a list of channels for those answers.
    public var body: String? {
        if let json { return json }
        if let warningReason { return #"{"reason":"\#(warningReason.rawValue)"}"# }
        if let broadcastReason { return #"{"reason":"\#(broadcastReason.rawValue)"}"# }
        guard let reason else { return nil }
        if let timestamp { return #"{"reason":"\#(reason.rawValue)","timestamp":\#(timestamp)}"# }
        return #"{"reason":"\#(reason.rawValue)"}"#
    }
}

/// A push the provider API refused, as the delivery log records it (docs/admin-api.md).
public struct RefusedPush: Sendable, Equatable {
    /// `apns-topic` as sent (or the certificate's), when there was one.
    public var topic: String?
    /// The device token's hex, when the path had a well-formed one.
    public var token: String?
    /// The device the token belongs to, when it is one of this gateway's.
    public var device: String?
    /// When the request arrived.
    public var at: Date

    /// Creates a record.
    public init(topic: String?, token: String?, device: String?, at: Date) {
        self.topic = topic
        self.token = token
        self.device = device
        self.at = at
    }
}
