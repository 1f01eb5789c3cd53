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
        let expiresAt = offline.expiry(of: push)
        let offer = LinkOffer(push: push.linkPush, expiresAt: expiresAt, background: push.pushType == .background)
        let offered = links.offer(offer, to: push.registration.deviceID) { [self] outcome in
            switch outcome {
            case .acknowledged(let deliveredAt, let acknowledgedAt):
                offline.received.record(
                    .init(
                        apnsID: push.apnsID, uniqueID: push.uniqueID, deviceID: push.registration.deviceID,
                        topic: push.topic, payload: offer.push.payload, deliveredAt: deliveredAt,
                        acknowledgedAt: acknowledgedAt, fromStorage: false))
                // The device has it: the 200 need not wait for the log.
                offline.logDelivered(
                    DeliveredPush(
                        apnsID: push.apnsID, uniqueID: push.uniqueID, deviceID: push.registration.deviceID,
                        topic: push.topic, binaryIdentifier: push.binaryIdentifier, acceptedAt: push.receivedAt,
                        deliveredAt: deliveredAt, acknowledgedAt: acknowledgedAt, warnings: push.warnings,
                        pushType: push.pushType))
                respond(.ok(apnsID: push.apnsID, uniqueID: push.uniqueID))
            case .notAcknowledged(let deliveredAt):
                keep(push, expiresAt: expiresAt, deliveredAt: deliveredAt, respond: respond)
            case .hold:
                keep(push, expiresAt: expiresAt, deliveredAt: nil, held: true, respond: respond)
            }
        }
        guard !offered else { return }
        guard let forwarder, !push.forwarded else {
            keep(push, expiresAt: expiresAt, deliveredAt: nil, respond: respond)
            return
        }
        forwarder.forward(push) { [self] outcome in
            switch outcome {
            case .answered(let response):
                metrics.forwarded(answered: true)
                respond(response)
            case .notHeld:
                keep(push, expiresAt: expiresAt, deliveredAt: nil, respond: respond)
            case .failed(let node, let reason):
                metrics.forwarded(answered: false)
                logger.notice(
                    "could not forward a push to the node holding its device; storing it",
                    metadata: ["apns-id": "\(push.apnsID)", "node": "\(node)", "why": "\(reason)"])
                keep(push, expiresAt: expiresAt, deliveredAt: nil, respond: respond)
            }
        }
    }

    /// Stores or discards a push the link could not deliver, and offers a stored one to the device's
    /// link once durable, in case the device connected meanwhile.
    private func keep(
        _ push: AcceptedPush, expiresAt: Date?, deliveredAt: Date?, held: Bool = false,
        respond: @escaping @Sendable (ProviderResponse) -> Void
    ) {
        let links = self.links
        offline.keep(push, expiresAt: expiresAt, deliveredAt: deliveredAt, held: held, respond: respond) { stored in
            links.offerStored([stored], to: stored.deviceID)
        }
    }

    /// The metrics in Prometheus's text format, with the gauges read now (devices online, pushes
    /// stored): what `/metrics` serves and the console's live stream sends.
    public func metricsText() async -> [UInt8] {
        let stored = (try? await offline.committer.store.storedCount()) ?? 0
        return metrics.emit(devicesOnline: links.onlineCount, storedPushes: stored)
    }
}

extension AcceptedPush {
    /// The push as it goes down the device link.
    var linkPush: LinkPush {
        LinkPush(
            apnsID: apnsID, uniqueID: uniqueID, topic: topic, token: registration.token,
            environment: registration.environment, pushType: pushType, priority: priority, expiration: expiration,
            collapseID: collapseID, payload: Data(payload.readableBytesView))
    }
}
