import Foundation
import HeraldRuntime
import Logging
import ServiceLifecycle
import Synchronization

/// This node in the shared database (docs/cluster.md): its row in `node` with a heartbeat, and a
/// claim in `device_node` for each device link it holds, made and released in the order the links
/// open and close. The claims are what will let another node find the holder of a device.
public final class NodePresence: Service, Sendable {
    /// This node's id.
    public let id: String
    let store: any NodeStore
    let clock: any WallClock
    let logger: Logger
    let heartbeatInterval: Duration
    private let address = Mutex("")
    private let events: AsyncStream<Event>
    private let sink: AsyncStream<Event>.Continuation
    private let claims = Mutex<[String: DeviceClaim]>([:])

    enum Event {
        case connected(String, at: Date)
        case disconnected(String)
    }

    /// Registers node `id` in `store` (its earlier claims released) and returns its presence.
    public static func register(
        id: String, store: any NodeStore, clock: any WallClock, logger: Logger = .silent,
        heartbeatInterval: Duration = .seconds(5)
    ) async throws -> NodePresence {
        try await store.registerNode(id: id, address: "", now: clock.now())
        return NodePresence(id: id, store: store, clock: clock, logger: logger, heartbeatInterval: heartbeatInterval)
    }

    private init(
        id: String, store: any NodeStore, clock: any WallClock, logger: Logger, heartbeatInterval: Duration
    ) {
        self.id = id
        self.store = store
        self.clock = clock
        self.logger = logger
        self.heartbeatInterval = heartbeatInterval
        (events, sink) = AsyncStream.makeStream(of: Event.self)
    }

    /// Where this node is reached, once its listeners are bound (written with the next heartbeat).
    public func setAddress(_ address: String) {
        self.address.withLock { $0 = address }
        Task { [self] in try? await store.heartbeat(node: id, address: address, now: clock.now()) }
    }

    /// A device's link opened here (``DeviceLinks`` calls it).
    func deviceConnected(_ device: String) { sink.yield(.connected(device, at: clock.now())) }

    /// A device's link here closed, and no newer one of it is here.
    func deviceDisconnected(_ device: String) { sink.yield(.disconnected(device)) }

    /// The claim this node holds on a device's link, if any.
    public func claim(of device: String) -> DeviceClaim? { claims.withLock { $0[device] } }

    /// Writes the heartbeat and the claims until the graceful shutdown; then marks the node stopped
    /// and releases its devices.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.beat() }
                group.addTask { await self.record() }
                await group.next()
                group.cancelAll()
            }
        }
        do {
            try await store.stopNode(id: id, now: clock.now())
        } catch {
            logger.warning(
                "could not mark this node stopped", metadata: ["error": "\(PostgresGatewayStore.describe(error))"])
        }
    }

    private func beat() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: heartbeatInterval)
            if Task.isCancelled { return }
            do {
                try await store.heartbeat(node: id, address: address.withLock { $0 }, now: clock.now())
            } catch {
                logger.warning(
                    "could not write this node's heartbeat",
                    metadata: ["error": "\(PostgresGatewayStore.describe(error))"])
            }
        }
    }

    /// Applies the links' openings and closings one after the other, so that a device's release
    /// names the claim its opening made.
    private func record() async {
        for await event in events {
            if Task.isCancelled { return }
            do {
                switch event {
                case .connected(let device, let at):
                    if let claim = try await store.claimDevice(device, node: id, connectedAt: at) {
                        claims.withLock { $0[device] = claim }
                    } else {
                        logger.notice(
                            "a later link of this device is held by another node",
                            metadata: ["device": "\(device)"])
                    }
                case .disconnected(let device):
                    if let claim = claims.withLock({ $0.removeValue(forKey: device) }) {
                        try await store.releaseDevice(device, claim: claim)
                    }
                }
            } catch {
                logger.warning(
                    "could not record where a device is linked",
                    metadata: ["error": "\(PostgresGatewayStore.describe(error))"])
            }
        }
    }
}
