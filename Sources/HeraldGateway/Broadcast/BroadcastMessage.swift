import Foundation
import HeraldCore

/// One update a provider broadcast on a channel (docs/broadcast.md): what every subscribed device
/// gets, and, on a channel with storage policy 1, what one that subscribes or connects later gets
/// while it is kept.
public struct BroadcastMessage: Sendable, Equatable {
    /// `apns-unique-id`, made by the gateway: the message's identity everywhere.
    public var uniqueID: String
    /// `apns-request-id`, the provider's or made by the gateway.
    public var requestID: String
    /// `apns-channel-id`.
    public var channelID: String
    /// The app's bundle id.
    public var bundleID: String
    /// The channel's environment.
    public var environment: APNsEnvironment
    /// The channel's storage policy when it was sent.
    public var storagePolicy: ChannelStoragePolicy
    /// `apns-priority`.
    public var priority: PushPriority
    /// `apns-expiration` (UNIX seconds; 0 = now only); `nil` when none was given.
    public var expiration: Int64?
    /// The payload, byte for byte.
    public var payload: Data
    /// When the gateway accepted it.
    public var sentAt: Date

    /// How long a storage-policy-1 channel keeps its most recent message (UNVERIFIED in Apple's
    /// documentation, which says "up to 8 hours": Herald keeps it exactly that long).
    public static let retention: TimeInterval = 8 * 3600

    /// Creates a message.
    public init(
        uniqueID: String, requestID: String, channelID: String, bundleID: String, environment: APNsEnvironment,
        storagePolicy: ChannelStoragePolicy, priority: PushPriority, expiration: Int64?, payload: Data, sentAt: Date
    ) {
        self.uniqueID = uniqueID
        self.requestID = requestID
        self.channelID = channelID
        self.bundleID = bundleID
        self.environment = environment
        self.storagePolicy = storagePolicy
        self.priority = priority
        self.expiration = expiration
        self.payload = payload
        self.sentAt = sentAt
    }

    /// Until when a device that subscribes or connects later still gets it: never on a policy-0
    /// channel or with expiration 0; else 8 hours after it was sent, or its expiration if sooner.
    public var keptUntil: Date? {
        guard storagePolicy == .mostRecentMessage, expiration != 0 else { return nil }
        let retained = sentAt.addingTimeInterval(Self.retention)
        guard let expiration else { return retained }
        return min(retained, Date(timeIntervalSince1970: TimeInterval(expiration)))
    }

    /// Whether a device that subscribes or connects at `now` gets it.
    public func isKept(at now: Date) -> Bool {
        guard let keptUntil else { return false }
        return now < keptUntil
    }

    /// The message as it goes down the device link.
    public var linkBroadcast: LinkBroadcast {
        LinkBroadcast(
            uniqueID: uniqueID, channelID: channelID, topic: bundleID + PushType.liveactivity.topicSuffix!,
            environment: environment, priority: priority, expiration: expiration, payload: payload)
    }
}
