import HeraldRuntime
import Logging
import ServiceLifecycle

extension Gateway {
    /// What a cluster's node runs beside its listeners to follow the other nodes through the database
    /// (docs/cluster.md): the directory, the pushes other nodes stored, the fault rules, the broadcast
    /// channels, the devices' holders (when this node forwards) and its own presence.
    static func clusterFollowers(
        store postgres: PostgresGatewayStore, directory: GatewayDirectory, primer: DirectoryFollower.Primer?,
        router: PushRouter, faults: FaultInjector, broadcasts: BroadcastHub, holders: DeviceHolders?,
        presence: NodePresence?, clock: any WallClock, logger: Logger
    ) -> [any Service] {
        var followers: [any Service] = [
            DirectoryFollower(registry: directory.registry, store: postgres, logger: logger, primer: primer),
            storedFollower(store: postgres, router: router, clock: clock, logger: logger),
            ClusterFollower<FaultChange>(store: postgres, logger: logger) { _ in
                faults.replace(with: try await postgres.faultRules())
            },
            ClusterFollower<BroadcastChange>(store: postgres, logger: logger, apply: broadcasts.apply),
        ]
        if let holders {
            followers.append(
                ClusterFollower<ClaimChange>(
                    store: postgres, logger: logger, select: holders.watched, apply: holders.apply))
        }
        if let presence { followers.append(presence) }
        return followers
    }

    /// Sends a device held here what another node stored for it (its provider's push arrived there):
    /// the same path as a commit of this node's landing after the device connected, so the link
    /// skips what it has already. Keeps the devices that may have something stored
    /// (``StoredDevices``) complete: each device is added as soon as it is heard of, before it is
    /// looked for among the links; listening again loads every device with something stored.
    static func storedFollower(
        store: PostgresGatewayStore, router: PushRouter, clock: any WallClock, logger: Logger,
        retry: Duration = .seconds(1)
    ) -> ClusterFollower<StoredChange> {
        let known = router.offline.committer.storedDevices
        return ClusterFollower(
            store: store, logger: logger, retry: retry,
            select: { changes in
                known.heard(changes.lazy.compactMap { if case .device(let id) = $0 { id } else { nil } })
                return changes
            },
            lost: { known.lostTrack() }
        ) { changes in
            let links = router.links
            let devices: [String]
            if changes.contains(.everything) {
                // Every device held here that has something stored: one query, not one per link.
                let waiting = try await store.storedCountsByDevice()
                known.load(waiting.keys)
                devices = links.connectedDevices.filter { waiting[$0] != nil }
            } else {
                devices = changes.compactMap { change -> String? in
                    guard case .device(let id) = change, links.isOnline(id) else { return nil }
                    return id
                }
            }
            for device in devices {
                links.offerStored(try await router.offline.pending(device: device, now: clock.now()), to: device)
            }
        }
    }
}
