import Foundation
import HeraldRuntime
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Follows one channel of the cluster (docs/cluster.md): holds a pooled connection with `LISTEN` on
/// it and applies what it hears. Notifications arriving together are applied as one set; when
/// applying fails, the set is kept and tried again after about `retry`. Each time listening
/// (re)starts, after a lost connection or a database restart, ``ClusterChange/everything`` is
/// applied.
public final class ClusterFollower<Change: ClusterChange>: Service, Sendable {
    let store: PostgresGatewayStore
    let logger: Logger
    let retry: Duration
    let apply: @Sendable (Set<Change>) async throws -> Void
    let select: @Sendable ([Change]) -> [Change]
    private let pending = Mutex<Set<Change>>([])
    private let counts = Mutex<(listens: Int, applied: Int)>((0, 0))

    /// A follower of `Change`'s channel on `store`'s database that hands what it hears to `apply`.
    /// `select` picks, from each notification's changes, those worth keeping until `apply` runs (all
    /// of them unless told otherwise); ``ClusterChange/everything`` is always kept.
    public init(
        store: PostgresGatewayStore, logger: Logger = .silent, retry: Duration = .seconds(1),
        select: @escaping @Sendable ([Change]) -> [Change] = { $0 },
        apply: @escaping @Sendable (Set<Change>) async throws -> Void
    ) {
        self.store = store
        self.logger = logger
        self.retry = retry
        self.select = select
        self.apply = apply
    }

    /// How many times listening has started, and how many sets of changes were applied.
    public var progress: (listens: Int, applied: Int) { counts.withLock { $0 } }

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
    private func listen(_ note: @escaping @Sendable (Change) -> Void) async {
        while !Task.isCancelled {
            do {
                try await store.client.withConnection { connection in
                    try await connection.listen(on: Change.channel) { notifications in
                        counts.withLock { $0.listens += 1 }
                        note(.everything)
                        for try await notification in notifications {
                            for change in select(Change.changes(payload: notification.payload)) { note(change) }
                        }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning(
                    "not hearing \(Change.subject) from PostgreSQL; listening again",
                    metadata: ["error": "\(PostgresGatewayStore.describe(error))"])
            }
            // Jittered, so that the nodes do not all come back in the same instant.
            try? await Task.sleep(for: retry * Double.random(in: 0.5...1.5))
        }
    }

    /// Applies what is pending; on failure puts it back and returns false.
    private func applyPending() async -> Bool {
        let changes = pending.withLock { pending in
            defer { pending = [] }
            return pending
        }
        if changes.isEmpty { return true }
        do {
            try await apply(changes)
            counts.withLock { $0.applied += 1 }
            return true
        } catch {
            pending.withLock { $0.formUnion(changes) }
            if !Task.isCancelled {
                logger.warning(
                    "could not apply \(Change.subject); trying again",
                    metadata: ["error": "\(PostgresGatewayStore.describe(error))"])
            }
            return false
        }
    }
}
