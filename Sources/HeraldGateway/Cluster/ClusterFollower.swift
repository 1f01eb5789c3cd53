import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Keeps a node's in-memory directory as the shared PostgreSQL store has it: listens on
/// ``DirectoryChange/channel`` and re-reads each record another node (or this one) changed, so that
/// a key revoked, an app removed from a device or a device registered anywhere is seen here within
/// a moment (docs/cluster.md).
///
/// Notifications arriving together are read back in one round of queries. Each time listening
/// (re)starts, after a lost connection or a database restart, the whole directory is read again,
/// since whatever changed meanwhile was not heard.
public final class DirectoryFollower: Service, Sendable {
    let registry: Registry
    let store: PostgresGatewayStore
    let logger: Logger
    let retry: Duration
    private let pending = Mutex<Set<DirectoryChange>>([])
    private let counts = Mutex<(listens: Int, reloads: Int)>((0, 0))

    /// A follower that keeps `registry` as `store` has it; after a failure it tries again after
    /// about `retry`.
    public init(registry: Registry, store: PostgresGatewayStore, logger: Logger, retry: Duration = .seconds(1)) {
        self.registry = registry
        self.store = store
        self.logger = logger
        self.retry = retry
    }

    /// How many times listening has started, and how many reloads were applied.
    public var progress: (listens: Int, reloads: Int) { counts.withLock { $0 } }

    /// Listens and applies changes until cancelled or the graceful shutdown.
    public func run() async throws {
        let (wake, waker) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    await self.listen { change in
                        self.pending.withLock { _ = $0.insert(change) }
                        waker.yield()
                    }
                }
                group.addTask {
                    for await _ in wake {
                        if await !self.applyPending() {
                            try? await Task.sleep(for: self.retry)
                            waker.yield()
                        }
                    }
                }
                await group.next()
                group.cancelAll()
                waker.finish()
            }
        }
    }

    /// Holds one pooled connection with `LISTEN` on it for as long as it lasts; again after a pause
    /// when it ends.
    private func listen(_ note: @escaping @Sendable (DirectoryChange) -> Void) async {
        while !Task.isCancelled {
            do {
                try await store.client.withConnection { connection in
                    try await connection.listen(on: DirectoryChange.channel) { notifications in
                        counts.withLock { $0.listens += 1 }
                        note(.everything)
                        for try await notification in notifications {
                            if let change = DirectoryChange(payload: notification.payload) { note(change) }
                        }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning(
                    "not hearing the directory's changes from PostgreSQL; listening again",
                    metadata: ["error": "\(PostgresGatewayStore.describe(error))"])
            }
            // Jittered, so that the nodes do not all come back in the same instant.
            try? await Task.sleep(for: retry * Double.random(in: 0.5...1.5))
        }
    }

    /// Reads back what is pending and applies it; on failure puts it back and returns false.
    private func applyPending() async -> Bool {
        let changes = pending.withLock { pending in
            defer { pending = [] }
            return pending
        }
        if changes.isEmpty { return true }
        do {
            registry.apply(try await store.reload(changes))
            counts.withLock { $0.reloads += 1 }
            return true
        } catch {
            pending.withLock { $0.formUnion(changes) }
            if !Task.isCancelled {
                logger.warning(
                    "could not read the directory's changes back; trying again",
                    metadata: ["error": "\(PostgresGatewayStore.describe(error))"])
            }
            return false
        }
    }
}
