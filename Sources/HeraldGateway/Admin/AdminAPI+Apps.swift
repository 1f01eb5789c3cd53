import Crypto
import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import NIOCore
import X509

// Apps and their certificates (docs/admin-api.md).
extension AdminAPI {
    /// `/apps`: list, create, delete, and issue an app certificate.
    func appRoutes() -> RouteCollection<BasicRequestContext> {
        let routes = RouteCollection(context: BasicRequestContext.self)
        let directory = self.directory
        let ca = self.ca
        let clock = self.clock
        routes.get("/apps") { _, _ in directory.registry.apps }
        routes.post("/apps") { request, context -> EditedResponse<TeamApp> in
            let body = try await request.decode(as: AppBody.self, context: context)
            let app = try await Self.mapped {
                try await directory.putApp(
                    bundleID: body.bundleID, teamID: body.teamID, broadcast: body.broadcast ?? true)
            }
            return EditedResponse(status: .created, response: app)
        }
        routes.delete("/apps/{bundleID}") { _, context -> HTTPResponse.Status in
            let id = try context.parameters.require("bundleID")
            try await Self.mapped { try await directory.removeApp(id) }
            return .noContent
        }
        routes.post("/apps/{bundleID}/certificates") { request, context -> EditedResponse<CertificateView> in
            let id = try context.parameters.require("bundleID")
            guard directory.registry.app(id) != nil else { throw HTTPError(.notFound, message: "app \(id) not found") }
            let body = try await request.decode(as: CertificateBody.self, context: context)
            let key = P256.Signing.PrivateKey()
            let environments = Set(body.environments ?? [.development])
            guard !environments.isEmpty else {
                throw HTTPError(.badRequest, message: "environments: must not be empty")
            }
            let days = body.days ?? 365
            guard (1...3650).contains(days) else {
                throw HTTPError(.badRequest, message: "days: 1 to 3650, not \(days)")
            }
            let cert = try ca.issueAppCertificate(
                bundleID: id, environments: environments, topics: body.topics ?? [], key: key,
                validity: TimeInterval(days * 86400), now: clock.now())
            return EditedResponse(
                status: .created,
                response: CertificateView(
                    certificate: try cert.serializeAsPEM().pemString, privateKey: key.pemRepresentation))
        }
        return routes
    }
}
