import Foundation

/// Where the nodes of a cluster record themselves and which of them holds each device's link
/// (docs/cluster.md). Only a store that several gateways share keeps it (``PostgresGatewayStore``).
public protocol NodeStore: Sendable {
    /// Records that node `id` (re)started at `now`: its row is written, and the devices it held in
    /// an earlier life are released (their links died with it).
    func registerNode(id: String, address: String, now: Date) async throws
    /// Node `id`'s heartbeat (and its address, once its listeners are bound: the other nodes hear
    /// of a new address at once).
    func heartbeat(node id: String, address: String, now: Date) async throws
    /// Node `id` stops gracefully: marked stopped, and its devices released.
    func stopNode(id: String, now: Date) async throws
    /// Every node, with the number of links it holds.
    func nodes() async throws -> [ClusterNode]
    /// Node `node` holds `device`'s link since `connectedAt`: returns the claim with its new epoch,
    /// or `nil` when a connection made later is already claimed by another node (this one is stale).
    func claimDevice(_ device: String, node: String, connectedAt: Date) async throws -> DeviceClaim?
    /// ``claimDevice(_:node:connectedAt:)`` for many links in one statement (each device once):
    /// the claims made, by device; a device left out was already claimed by a later connection.
    /// The other nodes hear of them in one notification.
    func claimDevices(_ links: [(device: String, connectedAt: Date)], node: String) async throws -> [String:
        DeviceClaim]
    /// Releases claims node `node` made, each device once with the epoch its claim was made with, in
    /// one statement: a device whose current claim is a later one (another epoch, or another node's)
    /// is left alone. Returns the devices released; the other nodes hear of them in one notification.
    func releaseDevices(_ claims: [(device: String, epoch: Int64)], node: String) async throws -> Set<String>
    /// The latest claim on `device`'s link as recorded, whether or not its node still runs: the
    /// node (`nil` once released) and the epoch. `nil` when no node ever held it.
    func latestClaim(of device: String) async throws -> (node: String?, epoch: Int64)?
    /// The node holding `device`'s link at `now`, if one does: a claim of a node that stopped, or
    /// whose heartbeat is older than ``ClusterNode/deadAfter`` (killed), does not count.
    func deviceNode(_ device: String, now: Date) async throws -> String?
    /// The node holding each device's link at `now`, for the devices that have one held by a live
    /// node (as ``deviceNode(_:now:)``).
    func deviceNodes(now: Date) async throws -> [String: String]
}
