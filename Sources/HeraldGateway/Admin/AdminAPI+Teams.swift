import Crypto
import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import NIOCore

// Teams and their signing keys (docs/admin-api.md).
extension AdminAPI {
    /// `/teams`: list, create, edit, delete.
    func teamRoutes() -> RouteCollection<BasicRequestContext> {
        let routes = RouteCollection(context: BasicRequestContext.self)
        let directory = self.directory
        routes.get("/teams") { _, _ in directory.registry.teams }
        routes.post("/teams") { request, context -> EditedResponse<Team> in
            let body = try await request.decode(as: TeamBody.self, context: context)
            guard let id = body.id else { throw HTTPError(.badRequest, message: "id: required") }
            let team = try await Self.mapped {
                try await directory.putTeam(id: id, name: body.name ?? "", suspended: body.suspended ?? false)
            }
            return EditedResponse(status: .created, response: team)
        }
        routes.put("/teams/{id}") { request, context -> Team in
            let id = try context.parameters.require("id")
            let body = try await request.decode(as: TeamBody.self, context: context)
            let existing = directory.registry.team(id)
            return try await Self.mapped {
                try await directory.putTeam(
                    id: id, name: body.name ?? existing?.name ?? "",
                    suspended: body.suspended ?? existing?.suspended ?? false)
            }
        }
        routes.delete("/teams/{id}") { _, context -> HTTPResponse.Status in
            let id = try context.parameters.require("id")
            try await Self.mapped { try await directory.removeTeam(id) }
            return .noContent
        }
        return routes
    }

    /// `/keys`: list, generate or import, revoke, delete.
    func keyRoutes() -> RouteCollection<BasicRequestContext> {
        let routes = RouteCollection(context: BasicRequestContext.self)
        let directory = self.directory
        routes.get("/keys") { _, _ in directory.registry.keys.map { KeyView($0) } }
        routes.post("/keys") { request, context -> EditedResponse<KeyView> in
            let body = try await request.decode(as: KeyBody.self, context: context)
            if let pem = body.publicKey {
                let publicKey: P256.Signing.PublicKey
                do {
                    publicKey = try P256.Signing.PublicKey(pemRepresentation: pem)
                } catch {
                    throw HTTPError(.badRequest, message: "publicKey: not a PEM P-256 public key")
                }
                guard let keyID = body.keyID else {
                    throw HTTPError(.badRequest, message: "keyID: required with publicKey")
                }
                let key = try await Self.mapped {
                    try await directory.putKey(
                        id: keyID, teamID: body.teamID, publicKey: publicKey, topics: body.topics,
                        environment: body.environment)
                }
                return EditedResponse(status: .created, response: KeyView(key))
            }
            let (key, pem) = try await Self.mapped {
                try await directory.generateKey(
                    teamID: body.teamID, id: body.keyID, topics: body.topics, environment: body.environment)
            }
            return EditedResponse(status: .created, response: KeyView(key, privateKey: pem))
        }
        routes.post("/keys/{id}/revoke") { _, context -> KeyView in
            let id = try context.parameters.require("id")
            try await Self.mapped { try await directory.revokeKey(id) }
            guard let key = directory.registry.key(id) else {
                throw HTTPError(.notFound, message: "key \(id) not found")
            }
            return KeyView(key)
        }
        routes.delete("/keys/{id}") { _, context -> HTTPResponse.Status in
            let id = try context.parameters.require("id")
            try await Self.mapped { try await directory.removeKey(id) }
            return .noContent
        }
        return routes
    }
}
