import Foundation
import HeraldCore

/// Where broadcast channels and the messages broadcast on them are kept (docs/broadcast.md).
/// Every method is one transaction.
public protocol ChannelStore: Sendable {
    /// Creates `channel` unless its app already has `limit` channels in its environment; returns
    /// whether it was created (docs/broadcast.md).
    func createChannel(_ channel: BroadcastChannel, limit: Int) async throws -> Bool
    /// One of an app's channels in an environment.
    func channel(bundleID: String, environment: APNsEnvironment, id: String) async throws -> BroadcastChannel?
    /// Deletes one of an app's channels; returns whether it existed.
    func deleteChannel(bundleID: String, environment: APNsEnvironment, id: String) async throws -> Bool
    /// The ids of an app's channels in an environment, oldest first.
    func channelIDs(bundleID: String, environment: APNsEnvironment) async throws -> [String]
    /// Records a message broadcast on a channel, forgetting the channel's messages sent more than
    /// a minute before it (others nodes of a cluster read a message by its id after hearing of it;
    /// a late subscriber gets only the most recent). On PostgreSQL every node hears of it
    /// (``BroadcastChange``) when it commits.
    func saveBroadcast(_ message: BroadcastMessage) async throws
    /// A broadcast message by its `apns-unique-id`, while it is kept.
    func broadcast(uniqueID: String) async throws -> BroadcastMessage?
    /// A channel's most recent broadcast message, if any is kept.
    func latestBroadcast(channelID: String, environment: APNsEnvironment) async throws -> BroadcastMessage?
}
