import Foundation
import PostgresNIO

/// The cluster's nodes and which of them holds each device's link (docs/cluster.md).
extension PostgresGatewayStore: NodeStore {
    /// Records that node `id` (re)started at `now`: its row is written, and the devices it held in
    /// an earlier life are released (their links died with it).
    public func registerNode(id: String, address: String, now: Date) async throws {
        let at = now.timeIntervalSince1970
        // Nodes that start together lock rows as nodes that stop together do (``stopNode(id:now:)``).
        try await retryingConflicts {
            try await transaction { connection in
                try await self.drain(
                    """
                    INSERT INTO node (id, address, started_at, heartbeat_at) VALUES (\(id), \(address), \(at), \(at))
                    ON CONFLICT (id) DO UPDATE SET address = excluded.address, started_at = excluded.started_at,
                        heartbeat_at = excluded.heartbeat_at, stopped_at = NULL
                    """, on: connection)
                try await self.drain("UPDATE device_node SET node_id = NULL WHERE node_id = \(id)", on: connection)
                try await self.notifyNodesChanged(on: connection)
            }
        }
    }

    /// Node `id`'s heartbeat (and its address, once its listeners are bound: the other nodes hear
    /// of a new address at once).
    public func heartbeat(node id: String, address: String, now: Date) async throws {
        try await drain(
            """
            WITH before AS (SELECT address FROM node WHERE id = \(id)),
                beat AS (UPDATE node SET heartbeat_at = \(now.timeIntervalSince1970), address = \(address)
                    WHERE id = \(id))
            SELECT pg_notify(\(ClaimChange.channel), 'nodes') FROM before WHERE before.address <> \(address)
            """)
    }

    /// Tells the other nodes that a node started, moved or stopped (``ClaimChange/nodes``).
    private func notifyNodesChanged(on connection: PostgresConnection) async throws {
        try await drain("SELECT pg_notify(\(ClaimChange.channel), 'nodes')", on: connection)
    }

    /// Node `id` stops gracefully: marked stopped, and its devices released.
    public func stopNode(id: String, now: Date) async throws {
        try await retryingConflicts {
            try await transaction { connection in
                try await self.drain(
                    "UPDATE node SET stopped_at = \(now.timeIntervalSince1970) WHERE id = \(id)", on: connection)
                try await self.drain("UPDATE device_node SET node_id = NULL WHERE node_id = \(id)", on: connection)
                try await self.notifyNodesChanged(on: connection)
            }
        }
    }

    /// Every node, with the number of links it holds.
    public func nodes() async throws -> [ClusterNode] {
        try await rows(
            """
            SELECT n.id, n.address, n.started_at, n.heartbeat_at, n.stopped_at,
                (SELECT count(*) FROM device_node d WHERE d.node_id = n.id)
            FROM node n ORDER BY n.id
            """, as: (String, String, Double, Double, Double?, Int).self
        ).map { id, address, started, heartbeat, stopped, devices in
            ClusterNode(
                id: id, address: address, startedAt: Date(timeIntervalSince1970: started),
                heartbeatAt: Date(timeIntervalSince1970: heartbeat),
                stoppedAt: stopped.map(Date.init(timeIntervalSince1970:)), devices: devices)
        }
    }

    /// Node `node` holds `device`'s link since `connectedAt`: returns the claim with its new epoch,
    /// or `nil` when a connection made later is already claimed by another node (this one is stale).
    /// The other nodes hear of the claim when it commits (``ClaimChange/claimed(device:node:epoch:)``).
    public func claimDevice(_ device: String, node: String, connectedAt: Date) async throws -> DeviceClaim? {
        try await rows(
            """
            WITH claimed AS (
                INSERT INTO device_node (device_id, node_id, epoch, connected_at)
                VALUES (\(device), \(node), 1, \(connectedAt.timeIntervalSince1970))
                ON CONFLICT (device_id) DO UPDATE SET node_id = excluded.node_id, epoch = device_node.epoch + 1,
                    connected_at = excluded.connected_at
                WHERE device_node.node_id IS NULL OR device_node.connected_at <= excluded.connected_at
                RETURNING device_id, node_id, epoch)
            SELECT node_id, epoch,
                pg_notify(\(ClaimChange.channel), concat_ws(chr(9), 'claim', device_id, node_id, epoch))::text
            FROM claimed
            """, as: (String, Int64, String).self
        ).first.map { DeviceClaim(node: $0.0, epoch: $0.1) }
    }

    public func claimDevices(_ links: [(device: String, connectedAt: Date)], node: String) async throws -> [String:
        DeviceClaim]
    {
        guard !links.isEmpty else { return [:] }
        let devices = links.map(\.device)
        let times = links.map(\.connectedAt.timeIntervalSince1970)
        // One notification for the batch (a payload holds up to 8,000 bytes: NodePresence sends at
        // most ``NodePresence/claimBatch`` devices of up to 64 characters).
        let claimed = try await retryingConflicts {
            try await rows(
                """
                WITH claimed AS (
                    INSERT INTO device_node (device_id, node_id, epoch, connected_at)
                    SELECT c.device_id, \(node), 1, c.connected_at
                    FROM unnest(\(devices)::text[], \(times)::double precision[]) AS c(device_id, connected_at)
                    ON CONFLICT (device_id) DO UPDATE SET node_id = excluded.node_id, epoch = device_node.epoch + 1,
                        connected_at = excluded.connected_at
                    WHERE device_node.node_id IS NULL OR device_node.connected_at <= excluded.connected_at
                    RETURNING device_id, epoch),
                told AS (
                    SELECT pg_notify(\(ClaimChange.channel),
                        concat_ws(chr(9), 'claims', \(node), string_agg(device_id || ' ' || epoch, chr(9))))
                    FROM claimed HAVING count(*) > 0)
                SELECT device_id, epoch, (SELECT count(*) FROM told) FROM claimed
                """, as: (String, Int64, Int64).self)
        }
        return Dictionary(claimed.map { ($0.0, DeviceClaim(node: node, epoch: $0.1)) }, uniquingKeysWith: { _, b in b })
    }

    public func releaseDevices(_ claims: [(device: String, epoch: Int64)], node: String) async throws -> Set<String> {
        guard !claims.isEmpty else { return [] }
        let devices = claims.map(\.device)
        let epochs = claims.map(\.epoch)
        // One notification for the batch, as for ``claimDevices(_:node:)``.
        let released = try await retryingConflicts {
            try await rows(
                """
                WITH released AS (
                    UPDATE device_node d SET node_id = NULL
                    FROM unnest(\(devices)::text[], \(epochs)::bigint[]) AS r(device_id, epoch)
                    WHERE d.device_id = r.device_id AND d.node_id = \(node) AND d.epoch = r.epoch
                    RETURNING d.device_id, d.epoch),
                told AS (
                    SELECT pg_notify(\(ClaimChange.channel),
                        concat_ws(chr(9), 'releases', \(node), string_agg(device_id || ' ' || epoch, chr(9))))
                    FROM released HAVING count(*) > 0)
                SELECT device_id, (SELECT count(*) FROM told) FROM released
                """, as: (String, Int64).self)
        }
        return Set(released.map(\.0))
    }

    /// The latest claim on `device`'s link as recorded, whether or not its node still runs: the
    /// node (`nil` once released) and the epoch. `nil` when no node ever held it.
    public func latestClaim(of device: String) async throws -> (node: String?, epoch: Int64)? {
        try await rows(
            "SELECT node_id, epoch FROM device_node WHERE device_id = \(device)", as: (String?, Int64).self
        ).first.map { (node: $0.0, epoch: $0.1) }
    }

    /// The node holding `device`'s link at `now`, if one does: a claim of a node that stopped, or
    /// whose heartbeat is older than ``ClusterNode/deadAfter`` (killed), does not count.
    public func deviceNode(_ device: String, now: Date) async throws -> String? {
        let fresh = now.timeIntervalSince1970 - ClusterNode.deadAfter
        return try await rows(
            """
            SELECT d.node_id FROM device_node d JOIN node n ON n.id = d.node_id
            WHERE d.device_id = \(device) AND n.stopped_at IS NULL AND n.heartbeat_at > \(fresh)
            """, as: String.self
        ).first
    }

    /// The node holding each device's link at `now`, for the devices that have one held by a live
    /// node (as ``deviceNode(_:now:)``).
    public func deviceNodes(now: Date) async throws -> [String: String] {
        let fresh = now.timeIntervalSince1970 - ClusterNode.deadAfter
        return Dictionary(
            try await rows(
                """
                SELECT d.device_id, d.node_id FROM device_node d JOIN node n ON n.id = d.node_id
                WHERE n.stopped_at IS NULL AND n.heartbeat_at > \(fresh)
                """, as: (String, String).self),
            uniquingKeysWith: { first, _ in first })
    }
}
