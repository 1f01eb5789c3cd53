import Crypto
import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import NIOCore

// The delivery log and the feedback lists (docs/admin-api.md).
extension AdminAPI {
    /// On a `/deliveries` or `/deliveries/{id}` answer that left out rows of the log it could not
    /// read (damaged, or written by a newer release): how many.
    static let unreadableRowsHeader = HTTPField.Name("herald-unreadable-log-rows")!

    /// `/deliveries`: recent pushes, and one push's steps.
    func deliveryRoutes() -> RouteCollection<BasicRequestContext> {
        let routes = RouteCollection(context: BasicRequestContext.self)
        let pushes = self.pushRouter.offline.store
        routes.get("/deliveries") { request, _ -> Response in
            let query = request.uri.queryParameters
            func text(_ name: String) -> String? { query.get(name).flatMap { $0.isEmpty ? nil : $0 } }
            var filter = PushHistoryFilter(app: text("app"), device: text("device"), reason: text("reason"))
            if let status = text("status") {
                // (A warning is said of a push, not a step it stops at: the list leaves it out.)
                let statuses = DeliveryEvent.Kind.allCases.filter { $0 != .warning }
                guard let kind = DeliveryEvent.Kind(rawValue: status) else {
                    throw HTTPError(
                        .badRequest, message: "status: one of " + statuses.map(\.rawValue).joined(separator: ", "))
                }
                filter.status = kind
            }
            let limit = text("limit").map { Int($0) ?? -1 } ?? 100
            guard (1...1000).contains(limit) else { throw HTTPError(.badRequest, message: "limit: 1 to 1000") }
            let log = try await pushes.recentDeliveryLog(rows: DeliveryHistory.rowsRead)
            return try Self.response(
                DeliveryHistory.entries(log.events, filter: filter, limit: limit), leavingOut: log.unreadableRows)
        }
        let clock = self.clock
        routes.get("/delivery-metrics") { request, _ -> Response in
            let query = request.uri.queryParameters
            let days = query.get("days").map { Int($0) ?? 0 } ?? 7
            guard (1...366).contains(days) else { throw HTTPError(.badRequest, message: "days: 1 to 366") }
            let today = clock.now()
            let from = DeliveryCount.day(of: today.addingTimeInterval(-Double(days - 1) * 86400))
            var counts = try await pushes.deliveryCounts(since: from)
            if let app = query.get("app"), !app.isEmpty { counts = counts.filter { $0.app == app } }
            return try PreciseJSON.response(
                DeliveryMetricsView(from: from, to: DeliveryCount.day(of: today), counts: counts))
        }
        routes.get("/deliveries/{id}") { _, context -> Response in
            let id = try context.parameters.require("id")
            let log = try await pushes.deliveryLogRead(id: id)
            guard !log.events.isEmpty else {
                if log.unreadableRows > 0 {
                    throw HTTPError(
                        .internalServerError,
                        message: "the delivery log of \(id) is \(log.unreadableRows) row(s) this gateway cannot read "
                            + "(damaged, or written by a newer release)")
                }
                throw HTTPError(.notFound, message: "no push with apns-id or apns-unique-id \(id)")
            }
            return try Self.response(log.events.map(DeliveryEventView.init), leavingOut: log.unreadableRows)
        }
        return routes
    }

    /// `value` as JSON; rows of the log that could not be read are left out of it, and said so in
    /// ``unreadableRowsHeader``.
    static func response(_ value: some Encodable, leavingOut unreadableRows: Int) throws -> Response {
        var response = try PreciseJSON.response(value)
        if unreadableRows > 0 { response.headers[unreadableRowsHeader] = String(unreadableRows) }
        return response
    }

    /// `/feedback/{bundleID}`: read, or read and emptied (like the legacy feedback service).
    func feedbackRoutes() -> RouteCollection<BasicRequestContext> {
        let routes = RouteCollection(context: BasicRequestContext.self)
        let pushes = self.pushRouter.offline.store
        routes.get("/feedback/{bundleID}") { request, context -> [FeedbackView] in
            let id = try context.parameters.require("bundleID")
            let env =
                request.uri.queryParameters.get("environment").flatMap(APNsEnvironment.init(rawValue:)) ?? .development
            return try await pushes.feedback(bundleID: id, environment: env).map(FeedbackView.init)
        }
        routes.post("/feedback/{bundleID}/take") { request, context -> [FeedbackView] in
            let id = try context.parameters.require("bundleID")
            let env =
                request.uri.queryParameters.get("environment").flatMap(APNsEnvironment.init(rawValue:)) ?? .development
            return try await pushes.takeFeedback(bundleID: id, environment: env).map(FeedbackView.init)
        }
        return routes
    }
}
