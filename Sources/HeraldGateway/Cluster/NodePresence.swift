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
    /// Openings and closings not yet written, in order, and a doorbell rung when some arrive.
    private let queue = Mutex<[Event]>([])
    private let doorbell: AsyncStream<Void>
    private let ring: AsyncStream<Void>.Continuation
    private let claims = Mutex<[String: DeviceClaim]>([:])

    /// The most claims (or releases) written in one statement (and named in one notification, whose
    /// payload holds 8,000 bytes: 80 device ids of up to 64 characters with their epochs fit).
    static let claimBatch = 80

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
        (doorbell, ring) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Where this node is reached, once its listeners are bound (written with the next heartbeat).
    public func setAddress(_ address: String) {
        self.address.withLock { $0 = address }
        Task { [self] in try? await store.heartbeat(node: id, address: address, now: clock.now()) }
    }

    /// A device's link opened here (``DeviceLinks`` calls it).
    func deviceConnected(_ device: String) { enqueue(.connected(device, at: clock.now())) }

    /// A device's link here closed, and no newer one of it is here.
    func deviceDisconnected(_ device: String) { enqueue(.disconnected(device)) }

    private func enqueue(_ event: Event) {
        queue.withLock { $0.append(event) }
        ring.yield()
    }

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

    /// Applies the links' openings and closings in the order they happened, so that a device's
    /// release names the claim its opening made. Openings in a row are claimed together, and
    /// closings in a row released together, up to ``claimBatch`` in a statement: a reconnect storm
    /// (or a node's own shutdown, which closes every link at once) brings thousands a second, and a
    /// statement and a notification each would keep the database busier than the nodes.
    private func record() async {
        for await _ in doorbell {
            let events = queue.withLock { queue in
                defer { queue = [] }
                return queue
            }
            var next = 0
            while next < events.count {
                if Task.isCancelled { return }
                if case .disconnected = events[next] {
                    // Closings in a row are released together, as openings are claimed.
                    var closed: [String] = []
                    while closed.count < Self.claimBatch, next < events.count,
                        case .disconnected(let device) = events[next]
                    {
                        next += 1
                        closed.append(device)
                    }
                    await release(closed)
                    continue
                }
                var opened: [(device: String, connectedAt: Date)] = []
                var index: [String: Int] = [:]
                while opened.count < Self.claimBatch, next < events.count,
                    case .connected(let device, let at) = events[next]
                {
                    next += 1
                    // The same device twice in a row: its later connection is the one that counts.
                    if let i = index[device] {
                        opened[i].connectedAt = at
                    } else {
                        index[device] = opened.count
                        opened.append((device, at))
                    }
                }
                await claim(opened)
            }
        }
    }

    private func claim(_ opened: [(device: String, connectedAt: Date)]) async {
        do {
            let made = try await store.claimDevices(opened, node: id)
            claims.withLock { claims in
                for (device, claim) in made { claims[device] = claim }
            }
            for (device, _) in opened where made[device] == nil {
                logger.notice("a later link of this device is held by another node", metadata: ["device": "\(device)"])
            }
        } catch {
            logger.warning(
                "could not record where devices are linked",
                metadata: ["devices": "\(opened.count)", "error": "\(PostgresGatewayStore.describe(error))"])
        }
    }

    private func release(_ devices: [String]) async {
        let held = claims.withLock { claims in
            devices.compactMap { device in
                claims.removeValue(forKey: device).map { (device: device, epoch: $0.epoch) }
            }
        }
        do {
            _ = try await store.releaseDevices(held, node: id)
        } catch {
            logger.warning(
                "could not record where devices are linked",
                metadata: ["devices": "\(held.count)", "error": "\(PostgresGatewayStore.describe(error))"])
        }
    }
}
