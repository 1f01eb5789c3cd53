import Foundation
import HeraldRuntime
import Hummingbird
import NIOCore
import ServiceLifecycle
import Synchronization

/// Whether the gateway takes work, as the admin API's `/readyz` tells probes and load balancers: not
/// while it starts (until every listener is bound), not once it stops, and not while its store does
/// not answer. `/healthz` says only that the process answers.
public final class GatewayReadiness: Sendable {
    /// Where the gateway is in its life.
    public enum Phase: String, Sendable {
        /// Listeners are still being bound.
        case starting
        /// Every listener is bound; work is taken.
        case ready
        /// Shutting down (SIGTERM, or ``Gateway/shutdown()``).
        case stopping
    }

    private let phase: Mutex<Phase>
    /// How long `/readyz` waits for the store's answer before it says the store does not answer.
    let storeDeadline: Duration

    /// Readiness in `phase`.
    public init(_ phase: Phase = .starting, storeDeadline: Duration = .seconds(2)) {
        self.phase = Mutex(phase)
        self.storeDeadline = storeDeadline
    }

    /// The phase now.
    public var current: Phase { phase.withLock { $0 } }

    /// Moves to `phase`.
    public func set(_ phase: Phase) { self.phase.withLock { $0 = phase } }

    /// `/readyz`'s answer: 200 `{"status":"ready"}`, or 503 with the status and the reason.
    func answer(store: any PushStore) async -> Response {
        let (status, fields) = await verdict(store: store)
        let body = (try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])) ?? Data()
        return Response(
            status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// The status and the fields of `/readyz`'s answer.
    func verdict(store: any PushStore) async -> (HTTPResponse.Status, [String: String]) {
        switch current {
        case .starting:
            return (
                .serviceUnavailable, ["status": "starting", "reason": "the gateway's listeners are not all bound yet"]
            )
        case .stopping:
            return (.serviceUnavailable, ["status": "stopping", "reason": "the gateway is shutting down"])
        case .ready:
            do {
                try await withDeadline(storeDeadline) { try await store.ping() }
                return (.ok, ["status": "ready"])
            } catch {
                return (
                    .serviceUnavailable, ["status": "unavailable", "reason": "the store does not answer: \(error)"]
                )
            }
        }
    }
}

/// Marks readiness ``GatewayReadiness/Phase/stopping`` when the group's graceful shutdown begins.
/// Last in the gateway's list of services, so the first to hear of it.
struct ReadinessService: Service {
    let readiness: GatewayReadiness

    func run() async throws {
        // Ends at graceful shutdown, or throws at cancellation (then everything stops at once).
        try? await gracefulShutdown()
        readiness.set(.stopping)
    }
}
