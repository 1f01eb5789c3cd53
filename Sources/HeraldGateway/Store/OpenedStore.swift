import Foundation
import Logging

/// The store a gateway opens from its configuration: PostgreSQL when a database is given (the
/// state directory then joins its cluster), else SQLite in the state directory.
struct OpenedStore: Sendable {
    /// The store.
    var store: any GatewayStore
    /// The same store when it is the shared PostgreSQL one (a cluster's nodes, fault rules, followers).
    var shared: PostgresGatewayStore?
    /// Closes the store's connections (PostgreSQL's pool); nothing for SQLite.
    var close: @Sendable () -> Void

    /// Opens PostgreSQL at `url` when there is one (and has `state` join its cluster), else the SQLite
    /// database in `state` with `durability`.
    static func open(
        database url: String?, state: GatewayStateDirectory, durability: SQLiteGatewayStore.Durability,
        logger: Logger
    ) async throws -> OpenedStore {
        let store: any GatewayStore
        var close: @Sendable () -> Void = {}
        var postgres: PostgresGatewayStore?
        if let url {
            let fresh = !FileManager.default.fileExists(atPath: state.caCertificatePath)
            let shared = try await PostgresGatewayStore.open(url: url, logger: logger)
            close = { shared.close() }
            do {
                try await joinCluster(state: state, fresh: fresh, store: shared, url: url)
            } catch {
                close()
                throw error
            }
            logger.info("store: PostgreSQL", metadata: ["database": "\(PostgresURL.redacted(url))"])
            store = shared
            postgres = shared
        } else {
            store = try SQLiteGatewayStore(path: state.databasePath, durability: durability)
        }
        return OpenedStore(store: store, shared: postgres, close: close)
    }

    /// The state directory takes the cluster's shared secrets from the database (the first node's
    /// become the cluster's). A directory created by this start adopts them; one that already had
    /// different ones belongs to another push service and is refused.
    private static func joinCluster(
        state: GatewayStateDirectory, fresh: Bool, store: PostgresGatewayStore, url: String
    ) async throws {
        let local = try state.sharedSecrets()
        let shared = try GatewayStateDirectory.SharedSecrets(
            fields: try await store.clusterSecrets(proposing: local.fields))
        guard shared != local else { return }
        guard fresh else {
            throw ClusterMismatch(
                description: "the state directory \(state.url.path) has a CA and secrets of its own, not the "
                    + "cluster's in \(PostgresURL.redacted(url)): give this node a new --state directory")
        }
        try state.adopt(shared)
    }

}

/// A state directory that belongs to another push service than the database's cluster.
public struct ClusterMismatch: Error, CustomStringConvertible {
    /// What is wrong and what to do.
    public var description: String
}
