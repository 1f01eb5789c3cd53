import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals

/// The boot sequence every Herald process shares. Its long-running parts run as one
/// swift-service-lifecycle `ServiceGroup`, with graceful shutdown on SIGINT and SIGTERM: the services
/// stop one by one in the reverse of their order, so list them from what must stop last (the final
/// write) to what must stop first (the HTTP listener people talk to). Cancelling the task that runs
/// it cancels every service at once; each still closes what it holds.
public enum ServiceRunner {
    /// Runs `services` until a signal or cancellation. `listening` yields the port of the one
    /// listener that binds inside the group (a Hummingbird application) once it is listening; then
    /// `ready` runs with it (writing the process's runtime file, say). When the group ends before that
    /// listener was listening, the error names `listener` and `address`.
    public static func run(
        _ services: [any Service], signals: Bool, logger: Logger,
        listening: Readiness, listener: String, address: String, stopper: Stopper? = nil,
        ready: (Int) async throws -> Void
    ) async throws {
        // The group's own signal handling logs at debug only; here the log says why the process stops.
        let group = ServiceGroup(
            configuration: .init(
                services: services.map {
                    let announced = Announced(service: $0, logger: logger)
                    // Named as the service itself is, in the group's errors, not as the wrapper.
                    return .init(service: announced, serviceName: announced.name)
                },
                gracefulShutdownSignals: [], logger: logger))
        stopper?.running(group)
        defer { stopper?.finished() }
        // Trapped for as long as the group runs: from here a signal stops the process gracefully.
        let trapped = signals ? await UnixSignalsSequence(trapping: .sigterm, .sigint) : nil
        let signalWatch = trapped.map { trapped in
            Task {
                var stopping = false
                for await signal in trapped {
                    if stopping {
                        logger.notice("received \(signal) again; already stopping")
                    } else {
                        logger.notice("received \(signal); stopping gracefully")
                    }
                    stopping = true
                    await group.triggerGracefulShutdown()
                }
            }
        }
        defer { signalWatch?.cancel() }
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                // If the listener never binds, the wait below must still end.
                defer { listening.finish() }
                try await group.run()
            }
            var bound: Int?
            for await port in listening.ports { bound = port }
            guard let bound else {
                var reason = "it stopped before it was listening"
                do { try await tasks.next() } catch { reason = "\(error)" }
                throw ListenerStartError(listener: listener, address: address, reason: reason)
            }
            do {
                try await ready(bound)
            } catch {
                await group.triggerGracefulShutdown()
                try? await tasks.next()
                throw error
            }
            try await tasks.next()
        }
    }

    /// Stops a running group gracefully from code, as SIGTERM would (in order, the streams in flight
    /// finished); asked before the group runs, it stops it as soon as it does.
    public final class Stopper: Sendable {
        private enum State {
            case idle
            case running(ServiceGroup)
            case stopRequested
            case finished
        }

        private let state = Mutex(State.idle)

        /// Nothing running yet.
        public init() {}

        /// Stops the group gracefully; returns at once (the group's `run` returns when it is done).
        public func stop() async {
            let group = state.withLock { state -> ServiceGroup? in
                switch state {
                case .running(let group):
                    return group
                case .idle:
                    state = .stopRequested
                    return nil
                case .stopRequested, .finished:
                    return nil
                }
            }
            await group?.triggerGracefulShutdown()
        }

        func running(_ group: ServiceGroup) {
            let stopNow = state.withLock { state -> Bool in
                if case .stopRequested = state { return true }
                state = .running(group)
                return false
            }
            if stopNow { Task { await group.triggerGracefulShutdown() } }
        }

        func finished() { state.withLock { $0 = .finished } }
    }

    /// The port of a listener once it is listening: handed to Hummingbird's `onServerRunning`.
    public struct Readiness: Sendable {
        let ports: AsyncStream<Int>
        let continuation: AsyncStream<Int>.Continuation

        /// Nothing listening yet.
        public init() {
            (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        }

        /// The listener listens on `port`.
        public func listening(on port: Int) {
            continuation.yield(port)
            continuation.finish()
        }

        func finish() { continuation.finish() }
    }
}

/// A service of ``ServiceRunner``'s group that says in the log when it ends the process: a service
/// that returns or throws before it was asked to stop ends every other one with it.
struct Announced: Service {
    let service: any Service
    let logger: Logger

    /// The service's type, without its generic parameters (`Application`, `GatewaySession`).
    var name: String { String(String(describing: type(of: service)).prefix { $0 != "<" }) }

    func run() async throws {
        do {
            try await service.run()
        } catch {
            if !Task.isShuttingDownGracefully && !Task.isCancelled {
                logger.error("\(name) failed; stopping", metadata: ["error": "\(error)"])
            }
            throw error
        }
        if !Task.isShuttingDownGracefully && !Task.isCancelled {
            logger.error("\(name) ended on its own; stopping")
        }
    }
}

/// Work done every `interval` until graceful shutdown or cancellation, then `finally` once (the
/// last flush, say).
public struct PeriodicService: Service {
    let interval: Duration
    let work: @Sendable () async -> Void
    let finally: @Sendable () async -> Void

    /// `work` every `interval`; `finally` once at the end.
    public init(
        every interval: Duration, _ work: @escaping @Sendable () async -> Void,
        finally: @escaping @Sendable () async -> Void = {}
    ) {
        self.interval = interval
        self.work = work
        self.finally = finally
    }

    /// Repeats `work` until the end, then runs `finally`.
    public func run() async throws {
        let interval = self.interval
        let work = self.work
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if Task.isCancelled { break }
                await work()
            }
        }
        await finally()
    }
}
