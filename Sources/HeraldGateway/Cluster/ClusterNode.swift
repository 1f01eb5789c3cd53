import Foundation

/// One gateway of a cluster as the shared database records it (`node` table): its id (kept in its
/// state directory's `node-id`), where it is reached, and its heartbeat.
public struct ClusterNode: Sendable, Codable, Equatable {
    /// The node's id, `node-` and 8 hex digits.
    public var id: String
    /// Where the node is reached (its admin API's URL until nodes talk to each other directly).
    public var address: String
    /// When the node last started.
    public var startedAt: Date
    /// Its latest heartbeat.
    public var heartbeatAt: Date
    /// When it stopped gracefully; `nil` while it runs (or if it died).
    public var stoppedAt: Date?
    /// How many device links it holds.
    public var devices: Int

    /// A node that has not written its heartbeat for this long is taken for dead.
    public static let deadAfter: TimeInterval = 15

    /// Whether the node runs, as far as its heartbeat says at `now`.
    public func isAlive(at now: Date) -> Bool {
        stoppedAt == nil && now.timeIntervalSince(heartbeatAt) < Self.deadAfter
    }
}

/// A device link a node claimed in the shared database (`device_node`): the connection `epoch`
/// grows with every claim, so a node releases only the connection it claimed.
public struct DeviceClaim: Sendable, Equatable {
    /// The node that holds the link.
    public var node: String
    /// The connection's epoch.
    public var epoch: Int64
}
