import HeraldRuntime
import Logging

/// Keeps a node's in-memory directory as the shared store has it: each record another node (or
/// this one) changed is read again, so that a key revoked, an app removed from a device or a device
/// registered anywhere is seen here within a moment.
public typealias DirectoryFollower = ClusterFollower<DirectoryChange>

extension ClusterFollower where Change == DirectoryChange {
    /// A follower that keeps `registry` as `store` has it; `primer`, when the registry was read after
    /// it started listening.
    public convenience init(
        registry: Registry, store: PostgresGatewayStore, logger: Logger = .silent, retry: Duration = .seconds(1),
        primer: Primer? = nil
    ) {
        self.init(store: store, logger: logger, retry: retry, primer: primer) { changes in
            registry.apply(try await store.reload(changes))
        }
    }

    /// A ``Primer`` on `store` (`nil` without one), for a node about to read the directory. When
    /// it cannot listen, says so and returns `nil`: the follower then reads the directory again once
    /// it listens, as without a primer.
    public static func primer(store: PostgresGatewayStore?, logger: Logger) async -> Primer? {
        guard let store else { return nil }
        do {
            return try await Primer.listen(store: store)
        } catch {
            logger.warning(
                "could not listen for the directory's changes before reading it; it will be read twice",
                metadata: ["error": "\(PostgresGatewayStore.describe(error))"])
            return nil
        }
    }
}
