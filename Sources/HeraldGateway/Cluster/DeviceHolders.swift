import Foundation
import HeraldRuntime
import Logging
import Synchronization

/// Which node of the cluster holds each device's link, as far as this node knows: what a push
/// accepted here for a device linked elsewhere needs to be forwarded (docs/cluster.md).
///
/// Nothing is loaded up front. The first push for a device reads its latest claim from the shared
/// database (one statement); from then on the claims and releases the nodes notify
/// (``ClaimChange``, heard by a ``ClusterFollower``) keep it current, so a device that gets many
/// pushes costs no statement per push. Claims carry their connection's epoch, and a release ranks
/// above the claim it releases: whatever order a read and the notifications arrive in, the newest
/// state wins. The nodes (address, heartbeat) are read again when one starts, moves or stops, and
/// whenever the copy is older than ``nodesMaximumAge`` (a heartbeat goes stale without a
/// notification).
public final class DeviceHolders: Sendable {
    /// A node to forward to.
    public struct Holder: Sendable, Equatable {
        /// Its id.
        public var node: String
        /// Its internal address (``ClusterNode/address``).
        public var address: String
    }

    /// What is known of a device's claim; ordered by (epoch, released).
    struct Claim: Equatable {
        var node: String?
        var epoch: Int64
        /// Whether this is the release of `epoch`'s claim.
        var released: Bool
        /// False for a read still under way (a notification arriving meanwhile makes it known).
        var known: Bool

        func isNewer(than other: Claim) -> Bool {
            (epoch, released ? 1 : 0) > (other.epoch, other.released ? 1 : 0)
        }

        static let lookingUp = Claim(node: nil, epoch: -1, released: false, known: false)
    }

    struct State {
        var claims: [String: Claim] = [:]
        var nodes: [String: ClusterNode] = [:]
        var nodesReadAt: Date?
        /// A read of the nodes is under way in the background.
        var refreshingNodes = false
        /// Grows with every ``ClaimChange/everything``: a read begun before it is not kept.
        var generation = 0
    }

    /// A copy of the nodes older than this is read again (in the background, while pushes are still
    /// answered from it); one older than twice this is not trusted and is read before answering. A
    /// node's heartbeat is 5 s apart and it counts as dead after 15 s, so a copy 10 s old still tells
    /// the living from the dead.
    public static let nodesMaximumAge: TimeInterval = 5

    let store: any NodeStore
    /// This node's id: a claim of its own is no reason to forward.
    let me: String
    let clock: any WallClock
    let limit: Int
    private let state = Mutex(State())

    /// Holders of devices in `store`'s cluster as seen from node `me`; at most `limit` devices are
    /// remembered (past it, the memory is emptied and filled again by reads).
    public init(store: any NodeStore, me: String, clock: any WallClock, limit: Int = 1_000_000) {
        self.store = store
        self.me = me
        self.clock = clock
        self.limit = limit
    }

    /// What the memory answers without the database: `.some(holder)` (`nil` for "no other live
    /// node holds it"), or `nil` when it must be read (``lookUp(_:)``).
    public func cachedHolder(of device: String) -> Holder?? {
        let now = clock.now()
        let (answer, refresh) = state.withLock { state -> (Holder??, Bool) in
            guard let read = state.nodesReadAt else { return (nil, false) }
            let age = now.timeIntervalSince(read)
            var refresh = false
            if age >= Self.nodesMaximumAge, !state.refreshingNodes {
                state.refreshingNodes = true
                refresh = true
            }
            guard age < 2 * Self.nodesMaximumAge, let claim = state.claims[device], claim.known else {
                return (nil, refresh)
            }
            return (.some(holder(claim, state: state, now: now)), refresh)
        }
        if refresh {
            // One read at a time, off the caller's path.
            Task {
                try? await readNodes()
                state.withLock { $0.refreshingNodes = false }
            }
        }
        return answer
    }

    /// The holder of `device`, read from the database when the memory does not know it.
    public func lookUp(_ device: String) async throws -> Holder? {
        if let known = cachedHolder(of: device) { return known }
        let now = clock.now()
        let stale = state.withLock { state -> Bool in
            guard let read = state.nodesReadAt else { return true }
            return now.timeIntervalSince(read) >= 2 * Self.nodesMaximumAge
        }
        if stale { try await readNodes() }
        let generation = state.withLock { state -> Int? in
            if let claim = state.claims[device], claim.known { return nil }
            if state.claims.count >= limit { state.claims.removeAll() }
            if state.claims[device] == nil { state.claims[device] = .lookingUp }
            return state.generation
        }
        if let generation {
            let read = try await store.latestClaim(of: device)
            let claim =
                read.map { Claim(node: $0.node, epoch: $0.epoch, released: $0.node == nil, known: true) }
                ?? Claim(node: nil, epoch: 0, released: true, known: true)
            state.withLock { state in
                guard state.generation == generation, let current = state.claims[device] else { return }
                if !current.known || claim.isNewer(than: current) { state.claims[device] = claim }
            }
        }
        return state.withLock { state in
            state.claims[device].map { holder($0, state: state, now: now) } ?? nil
        }
    }

    /// Of `changes`, those ``apply(_:)`` would use: the claims and releases of devices remembered
    /// here (asked about, or being read), and every `nodes` and `everything`. The rest need not wait
    /// in the follower: a device asked about later is read from the database after it is
    /// remembered, and so after every notification that came before.
    public func watched(_ changes: [ClaimChange]) -> [ClaimChange] {
        state.withLock { state in
            changes.filter {
                switch $0 {
                case .claimed(let device, _, _), .released(let device, _, _): state.claims[device] != nil
                case .nodes, .everything: true
                }
            }
        }
    }

    /// Applies what the nodes notified (``ClaimChange``).
    public func apply(_ changes: Set<ClaimChange>) async throws {
        if changes.contains(.everything) {
            state.withLock { state in
                state.claims.removeAll()
                state.generation += 1
            }
        }
        if changes.contains(.everything) || changes.contains(.nodes) { try await readNodes() }
        state.withLock { state in
            for change in changes {
                let device: String
                let claim: Claim
                switch change {
                case .claimed(let d, let node, let epoch):
                    (device, claim) = (d, Claim(node: node, epoch: epoch, released: false, known: true))
                case .released(let d, _, let epoch):
                    (device, claim) = (d, Claim(node: nil, epoch: epoch, released: true, known: true))
                case .nodes, .everything:
                    continue
                }
                // Only devices asked about are remembered; the others are read when a push needs them.
                guard let current = state.claims[device] else { continue }
                if !current.known || claim.isNewer(than: current) { state.claims[device] = claim }
            }
        }
    }

    private func readNodes() async throws {
        // The copy is as old as the moment the read began.
        let now = clock.now()
        let nodes = try await store.nodes()
        state.withLock { state in
            state.nodes = Dictionary(nodes.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
            state.nodesReadAt = now
        }
    }

    private func holder(_ claim: Claim, state: State, now: Date) -> Holder? {
        guard let id = claim.node, id != me, let node = state.nodes[id], node.isAlive(at: now),
            !node.address.isEmpty
        else { return nil }
        return Holder(node: id, address: node.address)
    }
}
