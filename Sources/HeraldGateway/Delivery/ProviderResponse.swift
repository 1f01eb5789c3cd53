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

    /// The reason's name, whichever API's it is.
    public var reasonText: String? { reason?.rawValue ?? broadcastReason?.rawValue }

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
        if let broadcastReason { return #"{"reason":"\#(broadcastReason.rawValue)"}"# }
        guard let reason else { return nil }
        if let timestamp { return #"{"reason":"\#(reason.rawValue)","timestamp":\#(timestamp)}"# }
        return #"{"reason":"\#(reason.rawValue)"}"#
    }
}
