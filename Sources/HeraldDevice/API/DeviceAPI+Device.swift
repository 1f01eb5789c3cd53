import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird

// The device itself: its status, log, time zone, clock and location (docs/device-api.md).
extension DeviceAPI {
    /// The first moment of the year 10000 (UTC), which a manual clock may not reach.
    static let latestClock: TimeInterval = 253_402_300_800

    /// `/status`, `/log`, `/time-zone`, `/clock` and `/location`.
    static func deviceRoutes(_ service: DeviceService) -> RouteCollection<BasicRequestContext> {
        let routes = RouteCollection(context: BasicRequestContext.self)
        routes.get("/status") { _, _ in
            Self.json(
                StatusView(
                    deviceID: await service.deviceID, gateway: await service.gatewayState,
                    timeZone: await service.timeZone.identifier, location: await service.location,
                    apps: await service.records.count, nextWake: await service.nextWake))
        }
        routes.get("/log") { request, _ in
            let limit = request.uri.queryParameters.get("limit", as: Int.self) ?? 100
            return Self.json(await service.log(limit: limit))
        }
        routes.get("/time-zone") { _, _ in Self.json(TimeZoneBody(identifier: await service.timeZone.identifier)) }
        routes.put("/time-zone") { request, _ in
            let body = try await Self.decode(TimeZoneBody.self, request)
            guard let zone = TimeZone(identifier: body.identifier) else {
                throw HTTPError(.badRequest, message: "identifier: unknown time zone '\(body.identifier)'")
            }
            try await Self.mapped { try await service.setTimeZone(zone) }
            return Self.json(TimeZoneBody(identifier: zone.identifier))
        }
        routes.get("/clock") { _, _ in Self.json(await Self.clock(service)) }
        routes.post("/clock") { request, _ in
            let body = try await Self.decode(ClockBody.self, request)
            let target: Date
            switch (body.advance, body.to) {
            case (let seconds?, nil):
                guard seconds >= 0, seconds.isFinite else {
                    throw HTTPError(.badRequest, message: "advance: must be 0 or more seconds")
                }
                target = await service.now.addingTimeInterval(seconds)
            case (nil, let date?): target = date
            default: throw HTTPError(.badRequest, message: "give exactly one of advance (seconds) and to (a date)")
            }
            // The calendar's years end at 9999 (a trigger's year is 1 to 9999): a clock past them has
            // no next date to find.
            guard target.timeIntervalSince1970 < Self.latestClock else {
                throw HTTPError(
                    .badRequest, message: "\(body.advance != nil ? "advance" : "to"): the clock goes no later than 9999"
                )
            }
            do {
                try await service.advanceClock(to: target)
            } catch DeviceService.ClockError.notManual {
                throw HTTPError(.conflict, message: "\(DeviceService.ClockError.notManual)")
            } catch {
                throw HTTPError(.badRequest, message: "to: \(error)")
            }
            return Self.json(await Self.clock(service))
        }
        routes.get("/location") { _, _ in
            guard let fix = await service.location else {
                throw HTTPError(.notFound, message: "the device has had no location fix yet")
            }
            return Self.json(fix)
        }
        routes.put("/location") { request, _ in
            let fix = try await Self.decode(LocationFix.self, request)
            guard (-90...90).contains(fix.latitude), (-180...180).contains(fix.longitude) else {
                throw HTTPError(.badRequest, message: "latitude must be -90…90 and longitude -180…180")
            }
            try await Self.mapped { try await service.setLocation(fix) }
            return Self.json(fix)
        }
        return routes
    }
}
