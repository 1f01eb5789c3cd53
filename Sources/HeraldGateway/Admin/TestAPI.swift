import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import NIOCore

/// The test API (docs/testing.md): what a test in any language needs from the gateway without
/// polling it. Wait for a push to reach a state; mark a moment and list what a device received
/// since; reset the gateway's data between tests.
extension AdminAPI {
    func testRoutes() -> RouteCollection<BasicRequestContext> {
        let routes = RouteCollection(context: BasicRequestContext.self)
        let router = self.pushRouter
        let clock = self.clock
        let directory = self.directory
        let faults = self.faults
        routes.post("/test/marks") { _, _ -> Response in
            let now = clock.now()
            return try PreciseJSON.response(Mark(mark: TestWait.mark(now), at: now), status: .created)
        }
        routes.get("/test/wait") { request, _ -> Response in
            let wait = try TestWait(request.uri.queryParameters, now: clock.now())
            let (status, answer) = try await wait.run(
                store: router.offline.store, registry: directory.registry, commits: router.offline.committer.commits)
            return try PreciseJSON.response(answer, status: status)
        }
        routes.get("/test/received") { request, _ -> Response in
            let query = request.uri.queryParameters
            guard let device = query.get("device"), !device.isEmpty else {
                throw HTTPError(.badRequest, message: "device: the device id whose pushes to list")
            }
            let since = try query.get("since").map(TestWait.date(mark:)) ?? .distantPast
            let (entries, complete) = router.offline.received.received(by: device, since: since)
            return try PreciseJSON.response(
                ReceivedView(device: device, complete: complete, pushes: entries.map(ReceivedView.Push.init)))
        }
        routes.post("/test/reset") { _, _ -> Response in
            // Devices first, so that nothing new arrives from them; then whatever log lines still
            // wait (up to 100 ms) are written, so that none lands after the erase.
            for device in router.links.connectedDevices {
                router.links.disconnect(device, reason: "the gateway's data was reset (test API)")
            }
            router.offline.committer.flushLog()
            _ = try await router.offline.committer.commit(StoreBatch())
            try await router.offline.store.eraseTestData()
            try await directory.reloadEverything()
            try await faults.removeAllEverywhere()
            router.offline.received.removeAll()
            return Response(status: .noContent)
        }
        return routes
    }

    /// Without `--test-api`: every `/test/…` route says how to turn it on.
    func testAPIOff() -> RouteCollection<BasicRequestContext> {
        let routes = RouteCollection(context: BasicRequestContext.self)
        let off: @Sendable (Request, BasicRequestContext) async throws -> Response = { _, _ in
            throw HTTPError(
                .notFound, message: "the test API is off: start the gateway with --test-api (docs/testing.md)")
        }
        routes.post("/test/marks", use: off)
        routes.get("/test/wait", use: off)
        routes.get("/test/received", use: off)
        routes.post("/test/reset", use: off)
        return routes
    }

    /// `POST /test/marks`.
    struct Mark: Codable {
        /// Milliseconds since 1970 at the gateway, to pass as `since`.
        var mark: String
        var at: Date
    }

    /// `GET /test/received`.
    struct ReceivedView: Codable {
        struct Push: Codable {
            var apnsID: String
            var uniqueID: String?
            var topic: String
            /// The payload as JSON (or, if it is none, as text).
            var payload: JSONValue
            var deliveredAt: Date
            var acknowledgedAt: Date
            var fromStorage: Bool

            init(_ entry: ReceivedPushes.Entry) {
                apnsID = entry.apnsID
                uniqueID = entry.uniqueID
                topic = entry.topic
                payload =
                    (try? JSONValue.parse(entry.payload)) ?? .string(String(decoding: entry.payload, as: UTF8.self))
                deliveredAt = entry.deliveredAt
                acknowledgedAt = entry.acknowledgedAt
                fromStorage = entry.fromStorage
            }
        }
        var device: String
        /// Whether the list is whole: this node keeps the last 10,000 pushes acknowledged.
        var complete: Bool
        var pushes: [Push]
    }
}

/// One `GET /test/wait`: which push, which state, until when.
struct TestWait: Sendable {
    enum Target: Sendable {
        /// The push with this `apns-id` or `apns-unique-id`.
        case id(String)
        /// The next push to this device token (accepted or refused).
        case token(DeviceToken)
        /// The next push to this topic.
        case topic(String)
    }

    var target: Target
    /// A delivery-log step (`acknowledged`, `stored`, `rejected`, …) or an Apple state
    /// (`received`, `delivered-from-storage`, …).
    var state: String
    /// For a token or a topic: the push is the first accepted (or refused) at or after this.
    var since: Date
    var timeout: Duration

    static let steps = Set(DeliveryEvent.Kind.allCases.map(\.rawValue))
    static let appleStates = Set(AppleDeliveryState.allCases.map(\.rawValue))

    init(_ query: Parameters, now: Date) throws {
        func text(_ name: String) -> String? { query.get(name).flatMap { $0.isEmpty ? nil : $0 } }
        let given = [text("id"), text("token"), text("topic")].compactMap { $0 }
        guard given.count == 1 else {
            throw HTTPError(.badRequest, message: "id, token or topic: exactly one, naming the push to wait for")
        }
        if let id = text("id") {
            target = .id(id)
        } else if let token = text("token") {
            guard let parsed = DeviceToken(hex: token) else {
                throw HTTPError(.badRequest, message: "token: \(token) is not a device token (hex)")
            }
            target = .token(parsed)
        } else {
            target = .topic(text("topic")!)
        }
        guard let state = text("state"), Self.steps.contains(state) || Self.appleStates.contains(state) else {
            throw HTTPError(
                .badRequest,
                message: "state: a delivery-log step (\(Self.steps.sorted().joined(separator: ", "))) or one of "
                    + "Apple's states (\(AppleDeliveryState.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        self.state = state
        since = try text("since").map(Self.date(mark:)) ?? now
        let seconds = text("timeout").map { Double($0) ?? -1 } ?? 10
        guard seconds > 0, seconds <= 60 else { throw HTTPError(.badRequest, message: "timeout: 0 to 60 seconds") }
        timeout = .milliseconds(Int64(seconds * 1000))
    }

    /// A mark: milliseconds since 1970.
    static func mark(_ date: Date) -> String { String(Int64((date.timeIntervalSince1970 * 1000).rounded(.down))) }

    static func date(mark: String) throws -> Date {
        guard let ms = Int64(mark) else {
            throw HTTPError(.badRequest, message: "since: a mark from POST /test/marks (milliseconds since 1970)")
        }
        return Date(timeIntervalSince1970: Double(ms) / 1000)
    }

    /// What the wait answers.
    struct Answer: Codable {
        var reached: Bool
        var state: String
        var apnsID: String?
        var uniqueID: String?
        /// When the push ended elsewhere: its last step.
        var ended: String?
        /// The timeout passed first.
        var timedOut: Bool?
        var events: [DeliveryEventView]
    }

    /// Steps after which the push goes no further, unless the state waited for is a refusal (which
    /// the device reports after its acknowledgement).
    func isFinal(_ kind: DeliveryEvent.Kind) -> Bool {
        switch kind {
        case .rejected, .discarded, .refused, .replaced: true
        case .acknowledged: !(state == "refused" || state.hasPrefix("discarded-"))
        default: false
        }
    }

    func reaches(_ event: DeliveryEvent) -> Bool {
        event.kind.rawValue == state || AppleDeliveryState(event)?.rawValue == state
    }

    /// Checks the log until the push reaches the state (200, `reached`), ends without it (409,
    /// `ended`) or the time is up (200, `timedOut`: a 408 would invite clients to send it again). It looks again after each group of log lines written on this node, and every 250 ms
    /// for what other nodes of a cluster write.
    func run(store: any PushStore, registry: Registry, commits: CommitSignal) async throws -> (
        HTTPResponse.Status, Answer
    ) {
        let deadline = ContinuousClock.now + timeout
        while true {
            let (wakes, stop) = commits.subscribe()
            defer { stop() }
            let events = try await push(store: store, registry: registry)
            var answer = Answer(
                reached: false, state: state, apnsID: events.first?.apnsID, uniqueID: events.first?.uniqueID,
                events: events.map(DeliveryEventView.init))
            if events.contains(where: reaches) {
                answer.reached = true
                return (.ok, answer)
            }
            if let last = events.last(where: { $0.kind != .warning }), isFinal(last.kind) {
                answer.ended = last.kind.rawValue
                return (.conflict, answer)
            }
            let left = deadline - ContinuousClock.now
            if left <= .zero {
                answer.timedOut = true
                return (.ok, answer)
            }
            await withTaskGroup(of: Void.self) { group in
                group.addTask { for await _ in wakes { return } }
                group.addTask { try? await Task.sleep(for: min(left, .milliseconds(250))) }
                await group.next()
                group.cancelAll()
            }
        }
    }

    /// The steps of the push waited for so far (none while there is no such push yet).
    func push(store: any PushStore, registry: Registry) async throws -> [DeliveryEvent] {
        switch target {
        case .id(let id):
            return try await store.deliveryLog(id: id)
        case .token(let token):
            let registrations = [APNsEnvironment.development, .production].compactMap {
                registry.registration(token, in: $0)
            }
            return try await next(store: store) { first in
                if first.kind == .rejected {
                    return first.detail.flatMap(RejectedDetail.init(text:))?.token == token.hex
                }
                guard let target = DeliveredPush.target(ofAccepted: first.detail) else { return false }
                return registrations.contains {
                    $0.deviceID == target.device && PushHistoryFilter.topic(target.topic, isOf: $0.bundleID)
                }
            }
        case .topic(let topic):
            return try await next(store: store) { first in
                if first.kind == .rejected { return first.detail.flatMap(RejectedDetail.init(text:))?.topic == topic }
                return DeliveredPush.target(ofAccepted: first.detail)?.topic == topic
            }
        }
    }

    /// The first push accepted or refused at or after ``since`` whose first step `matches`, with all
    /// its steps, from the newest rows of the log.
    private func next(store: any PushStore, matches: (DeliveryEvent) -> Bool) async throws -> [DeliveryEvent] {
        let recent = try await store.recentDeliveryEvents(rows: 2000)
        let found = recent.filter { ($0.kind == .accepted || $0.kind == .rejected) && $0.at >= since && matches($0) }
            .min { $0.at < $1.at }
        guard let found else { return [] }
        return try await store.deliveryLog(id: found.uniqueID ?? found.apnsID)
    }
}
