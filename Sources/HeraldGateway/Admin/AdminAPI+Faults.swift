import Crypto
import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import NIOCore

// Fault rules (docs/admin-api.md).
extension AdminAPI {
    /// `/faults`: list, add, remove one or all.
    func faultRoutes() -> RouteCollection<BasicRequestContext> {
        let routes = RouteCollection(context: BasicRequestContext.self)
        let faults = self.faults
        routes.get("/faults") { _, _ in faults.all }
        routes.post("/faults") { request, context -> EditedResponse<FaultRule> in
            let rule = try await request.decode(as: FaultRule.self, context: context)
            if let problem = rule.problem { throw HTTPError(.badRequest, message: problem) }
            return EditedResponse(status: .created, response: try await faults.addEverywhere(rule))
        }
        routes.delete("/faults/{id}") { _, context -> HTTPResponse.Status in
            try await faults.removeEverywhere(id: try context.parameters.require("id")) ? .noContent : .notFound
        }
        routes.delete("/faults") { _, _ -> HTTPResponse.Status in
            try await faults.removeAllEverywhere()
            return .noContent
        }
        return routes
    }
}
