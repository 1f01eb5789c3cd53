import Foundation
import HeraldCore
import HeraldRuntime
import Logging
import NIOCore

/// Routes accepted pushes (docs/device-link.md). A push for a connected device
/// goes down its link, and the provider's 200 waits for the device's acknowledgement. A push the
/// link cannot deliver at once (the device is offline, does not acknowledge in time, or the QoS
/// holds it back) is stored under the offline policy, newest per (device, topic) by default,
/// until its expiration, and the 200 waits for the store's commit. Expiration 0 (or a time
/// already past) is never stored.
public final class PushRouter: Sendable {
    /// Where what cannot be delivered now goes.
    public let offline: OfflineStore
    /// The connected devices.
    public let links: DeviceLinks
    /// The gateway's counters.
    public let metrics: GatewayMetrics
    /// With a cluster: where a push for a device linked to another node goes first.
    public let forwarder: (any PushForwarding)?
    let logger: Logger

    /// Creates a router; `forwarder` for one node of a cluster; `testAPI` keeps what devices
    /// received lately for the test API.
    public init(
        committer: GroupCommitter, links: DeviceLinks = DeviceLinks(), metrics: GatewayMetrics = GatewayMetrics(),
        forwarder: (any PushForwarding)? = nil, testAPI: Bool = false, logger: Logger = .silent
    ) {
        self.forwarder = forwarder
        self.offline = OfflineStore(
            committer: committer, metrics: metrics, received: ReceivedPushes(enabled: testAPI), logger: logger)
        self.links = links
        self.metrics = metrics
        self.logger = logger
    }

    /// Routes a push; `respond` receives the provider's answer. A push for a device linked to
    /// another node of the cluster is forwarded there, and the answer is that node's; one it could
    /// not take is stored here (and that node hears of it from the store).
    public func route(_ push: AcceptedPush, respond: @escaping @Sendable (ProviderResponse) -> Void) {
        route(delivery(push, responder: .closure(respond)))
    }

    /// A push's trip to its device's link and back, made on the provider's loop.
    func delivery(_ push: consuming AcceptedPush, responder: consuming LinkDelivery.Responder) -> LinkDelivery {
        LinkDelivery(push: push, responder: responder, offline: offline, links: links, metrics: metrics)
    }

    /// ``route(_:respond:)`` for a delivery made by its caller.
    func route(_ delivery: LinkDelivery) {
        let push = delivery.push
        guard !links.offer(delivery, to: push.registration.deviceID) else { return }
        guard let forwarder, !push.forwarded else {
            delivery.keep(deliveredAt: nil)
            return
        }
        forwarder.forward(push) { [self] outcome in
            switch outcome {
            case .answered(let response):
                metrics.forwarded(answered: true)
                delivery.respond(response)
            case .notHeld:
                delivery.keep(deliveredAt: nil)
            case .failed(let node, let reason):
                metrics.forwarded(answered: false)
                logger.notice(
                    "could not forward a push to the node holding its device; storing it",
                    metadata: ["apns-id": "\(push.apnsID)", "node": "\(node)", "why": "\(reason)"])
                delivery.keep(deliveredAt: nil)
            }
        }
    }

    /// The metrics in Prometheus's text format, with the gauges read now (devices online, pushes
    /// stored): what `/metrics` serves and the console's live stream sends.
    public func metricsText() async -> [UInt8] {
        let stored = (try? await offline.committer.store.storedCount()) ?? 0
        return metrics.emit(devicesOnline: links.onlineCount, storedPushes: stored)
    }
}
