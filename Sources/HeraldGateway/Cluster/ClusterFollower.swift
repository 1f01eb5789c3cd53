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
/// applied, except on a ``Primer``'s connection: what it heard is all that changed since it listened.
public final class ClusterFollower<Change: ClusterChange>: Service, Sendable {
    let store: PostgresGatewayStore
    let logger: Logger
    let retry: Duration
    let apply: @Sendable (Set<Change>) async throws -> Void
    let select: @Sendable ([Change]) -> [Change]
    let lost: @Sendable () -> Void
    let primer: Primer?
    private let pending = Mutex<Set<Change>>([])
    private let counts = Mutex<(listens: Int, applied: Int)>((0, 0))

    /// A follower of `Change`'s channel on `store`'s database that hands what it hears to `apply`.
    /// `select` picks, from each notification's changes, those worth keeping until `apply` runs (all
    /// of them unless told otherwise); ``ClusterChange/everything`` is always kept. With a `primer`
    /// (listening since before its owner read what `apply` keeps up to date), the follower first
    /// applies what the primer heard and hears, instead of ``ClusterChange/everything``. `lost` is
    /// called each time listening ends (before it starts again): what is heard then is missed until
    /// the next ``ClusterChange/everything``.
    public init(
        store: PostgresGatewayStore, logger: Logger = .silent, retry: Duration = .seconds(1),
        primer: Primer? = nil,
        select: @escaping @Sendable ([Change]) -> [Change] = { $0 },
        lost: @escaping @Sendable () -> Void = {},
        apply: @escaping @Sendable (Set<Change>) async throws -> Void
    ) {
        self.lost = lost
        self.store = store
        self.logger = logger
        self.retry = retry
        self.primer = primer
        self.select = select
        self.apply = apply
    }

    /// How many times listening has started, and how many sets of changes were applied.
    public var progress: (listens: Int, applied: Int) { counts.withLock { $0 } }

    /// Listens and applies changes until cancelled or the graceful shutdown.
    public func run() async throws {
        defer { primer?.cancel() }
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
        // What one notification names, as ``select`` keeps it.
        let hear: @Sendable (String) -> Void = { payload in
            for change in self.select(Change.changes(payload: payload)) { note(change) }
        }
        if let primer, let heard = primer.take() {
            counts.withLock { $0.listens += 1 }
            for await payload in heard { hear(payload) }
            lost()
            primer.cancel()
            if Task.isCancelled { return }
            // Its connection ended: listening again below starts with everything.
            logger.warning("not hearing \(Change.subject) from PostgreSQL; listening again")
        }
        while !Task.isCancelled {
            do {
                try await store.client.withConnection { connection in
                    try await connection.listen(on: Change.channel) { notifications in
                        counts.withLock { $0.listens += 1 }
                        note(.everything)
                        for try await notification in notifications { hear(notification.payload) }
                    }
                }
                lost()
            } catch {
                lost()
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

extension ClusterFollower {
    /// `LISTEN` on `Change`'s channel, on a pooled connection of its own, started before a node reads
    /// what a follower keeps up to date (the whole directory, at start). Every change committed after
    /// ``listen(store:)`` returns is heard, so the follower that takes the primer over need not read
    /// everything again: it applies what the primer heard meanwhile and goes on hearing on the
    /// primer's connection. When that connection ends, the follower listens anew as always,
    /// starting with ``ClusterChange/everything``.
    ///
    /// The listening runs in a task of its own until the follower's ``ClusterFollower/run()`` ends,
    /// ``cancel()`` is called or the primer is released.
    public final class Primer: Sendable {
        private let heard: AsyncStream<String>
        private let task: Task<Void, Never>
        private let taken = Mutex(false)

        private init(heard: AsyncStream<String>, task: Task<Void, Never>) {
            self.heard = heard
            self.task = task
        }

        /// Listens on a pooled connection of `store`'s; returns once `LISTEN` is in effect. Throws
        /// when no connection answers within the store's request timeout, or the `LISTEN` fails.
        public static func listen(store: PostgresGatewayStore) async throws -> Primer {
            let (started, start) = AsyncStream<Result<Void, any Error>>.makeStream()
            let (heard, hear) = AsyncStream<String>.makeStream()
            let task = Task {
                do {
                    try await store.client.withConnection { connection in
                        try await connection.listen(on: Change.channel) { notifications in
                            start.yield(.success(()))
                            for try await notification in notifications { hear.yield(notification.payload) }
                        }
                    }
                    start.yield(.failure(CancellationError()))
                } catch {
                    start.yield(.failure(error))
                }
                start.finish()
                hear.finish()
            }
            let primer = Primer(heard: heard, task: task)
            do {
                try await withDeadline(store.requestTimeout) {
                    for await result in started { return try result.get() }
                    throw CancellationError()
                }
            } catch {
                task.cancel()
                throw error
            }
            return primer
        }

        /// What was heard and will be, until the connection ends; `nil` after the first call.
        func take() -> AsyncStream<String>? {
            taken.withLock { taken in
                defer { taken = true }
                return taken ? nil : heard
            }
        }

        /// Stops listening.
        public func cancel() { task.cancel() }

        deinit { task.cancel() }
    }
}
