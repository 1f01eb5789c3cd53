import Crypto
import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import NIOCore

// Devices, their apps and stored pushes, and the cluster's nodes (docs/admin-api.md).
extension AdminAPI {
    /// `/devices` and `/nodes`.
    func deviceRoutes() -> RouteCollection<BasicRequestContext> {
        let routes = RouteCollection(context: BasicRequestContext.self)
        let directory = self.directory
        let push = self.pushRouter
        let clock = self.clock
        routes.get("/devices") { _, _ -> [DeviceView] in
            let stored = try await push.offline.store.storedCountsByDevice()
            var views: [DeviceView] = []
            let holders = try await self.holders()
            for device in directory.registry.devices {
                views.append(try await self.device(device.id, stored: stored, holders: holders))
            }
            return views
        }
        routes.post("/devices") { request, context -> EditedResponse<DeviceView> in
            let body = (try? await request.decode(as: DeviceBody.self, context: context)) ?? DeviceBody()
            let device = try await Self.mapped { try await directory.registerDevice(id: body.id, now: clock.now()) }
            return EditedResponse(status: .created, response: try await self.device(device.id))
        }
        // The cluster's nodes (docs/cluster.md); a gateway without --database is not in one.
        routes.get("/nodes") { _, _ -> [NodeView] in
            guard let presence = self.pushRouter.links.presence else {
                throw HTTPError(.notFound, message: "this gateway is not in a cluster (it runs without --database)")
            }
            let now = self.clock.now()
            return try await presence.store.nodes().map {
                NodeView(
                    id: $0.id, address: $0.address, startedAt: $0.startedAt, heartbeatAt: $0.heartbeatAt,
                    stoppedAt: $0.stoppedAt, alive: $0.isAlive(at: now), devices: $0.devices, this: $0.id == presence.id
                )
            }
        }
        routes.get("/devices/{id}") { _, context in try await self.device(try context.parameters.require("id")) }
        routes.delete("/devices/{id}") { _, context -> HTTPResponse.Status in
            let id = try context.parameters.require("id")
            try await Self.mapped { try await directory.deleteDevice(id, now: clock.now()) }
            push.links.disconnect(id, reason: "an administrator deleted the device")
            return .noContent
        }
        routes.post("/devices/{id}/reset") { _, context -> DeviceView in
            let id = try context.parameters.require("id")
            let record = try await Self.mapped { try await directory.resetDevice(id, now: clock.now()) }
            push.links.deviceWasReset(id, generation: record.generation)
            return try await self.device(id)
        }
        routes.post("/devices/{id}/apps") { request, context -> EditedResponse<RegistrationView> in
            let id = try context.parameters.require("id")
            let body = try await request.decode(as: RegistrationBody.self, context: context)
            let r = try await Self.mapped {
                try await directory.registerApp(
                    device: id, bundleID: body.bundleID, environment: body.environment ?? .development, now: clock.now()
                )
            }
            return EditedResponse(status: .created, response: RegistrationView(r))
        }
        routes.delete("/devices/{id}/apps/{bundleID}") { request, context -> RegistrationView in
            let id = try context.parameters.require("id")
            let bundleID = try context.parameters.require("bundleID")
            let env =
                request.uri.queryParameters.get("environment").flatMap(APNsEnvironment.init(rawValue:)) ?? .development
            let r = try await Self.mapped {
                try await directory.unregisterApp(device: id, bundleID: bundleID, environment: env, now: clock.now())
            }
            return RegistrationView(r)
        }
        routes.get("/devices/{id}/stored") { _, context -> [StoredView] in
            let id = try context.parameters.require("id")
            return try await push.offline.store.pending(device: id, now: clock.now()).map {
                StoredView(
                    apnsID: $0.apnsID, topic: $0.topic, pushType: $0.pushType, priority: $0.priority.rawValue,
                    collapseID: $0.collapseID, expiresAt: $0.expiresAt, receivedAt: $0.receivedAt,
                    payload: String(decoding: $0.payload, as: UTF8.self))
            }
        }
        return routes
    }

    func device(_ id: String, stored: [String: Int]? = nil, holders: [String: String]? = nil) async throws
        -> DeviceView
    {
        guard let d = directory.registry.device(id) else {
            throw HTTPError(.notFound, message: "device \(id) not found")
        }
        let counts: [String: Int]
        if let stored {
            counts = stored
        } else {
            // One device: its own count, not every device's.
            counts = [id: try await pushRouter.offline.store.storedCount(device: id)]
        }
        let holding: [String: String]
        if let holders {
            holding = holders
        } else {
            // One device: its own row, not every device's.
            let node = try await pushRouter.links.presence?.store.deviceNode(id, now: clock.now())
            holding = node.map { [id: $0] } ?? [:]
        }
        return DeviceView(
            id: d.id, generation: d.generation, createdAt: d.createdAt, resetAt: d.resetAt, deletedAt: d.deletedAt,
            online: pushRouter.links.isOnline(id) || holding[id] != nil, node: holding[id],
            lastSeen: pushRouter.links.lastSeen(id), stored: counts[id] ?? 0,
            apps: directory.registry.registrations(device: id).map(RegistrationView.init))
    }

    /// On a cluster, the live node holding each device's link; else none.
    func holders() async throws -> [String: String] {
        try await pushRouter.links.presence?.store.deviceNodes(now: clock.now()) ?? [:]
    }

}
