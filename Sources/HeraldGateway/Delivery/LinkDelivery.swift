import Foundation
import HeraldCore
import HeraldNIO
import NIOCore

/// One push routed by ``PushRouter``, from the provider connection's event loop to the device's
/// link and its answer back: one object for the whole trip.
///
/// It replaces the closures a push used to carry (the router's completion, the provider's answer,
/// a task to the link's loop and one back). Those were made on the provider's loop and freed on
/// the link's, or the other way, so that the allocator's per-thread cache never got them back
/// (BENCHMARKS.md, "One object for a push's trip"). This one is made on the provider's loop and,
/// once the answer is written, usually freed there; it crosses between the loops in
/// `LoopMailbox`es, many to one task.
///
/// It holds nothing mutable: an answer goes back to the connection's loop beside it, in the
/// mailbox's item.
final class LinkDelivery: OfferedPush, Sendable {
    /// Who hears the answer.
    enum Responder {
        /// A closure, from any thread (``PushRouter/route(_:respond:)``).
        case closure(@Sendable (ProviderResponse) -> Void)
        /// A provider connection's handler, on its event loop (``PushRouter/carryOut(_:on:answer:)``).
        case connection(ConnectionAnswer)
    }

    /// How a provider connection's answer comes back to it.
    struct ConnectionAnswer {
        /// Writes the answer; called on the connection's loop only.
        let answer: NIOLoopBound<(ProviderResponse) -> Void>
        /// When the push was accepted, on that loop's clock (the answer's latency).
        let start: NIODeadline
        /// Added to a `200` (none for a push another node forwarded: that node adds its own).
        let warnings: PushWarnings
        /// What a fault rule does to the connection once the push is answered.
        let connectionFault: ConnectionFaultAction?
        /// The loop's mailbox for answers coming from other loops.
        let mailbox: LoopMailbox<Answer>
    }

    /// An answer on its way to the connection's loop.
    struct Answer: Sendable {
        let delivery: LinkDelivery
        let response: ProviderResponse
    }

    let push: AcceptedPush
    /// Who hears the answer, when a closure does (``Responder/closure(_:)``).
    let closure: (@Sendable (ProviderResponse) -> Void)?
    /// Who hears the answer, when a provider connection does (``Responder/connection(_:)``). Kept
    /// apart rather than as a `Responder`: reading an enum's case copies its payload (a retain of
    /// each reference in it), and every answer reads this.
    let connection: ConnectionAnswer?
    /// When the gateway stops trying, under the offline policy.
    let expiresAt: Date?
    /// What goes to the link.
    let offer: LinkOffer
    let offline: OfflineStore
    let links: DeviceLinks
    let metrics: GatewayMetrics

    init(push: AcceptedPush, responder: Responder, offline: OfflineStore, links: DeviceLinks, metrics: GatewayMetrics) {
        let expiresAt = offline.expiry(of: push)
        self.expiresAt = expiresAt
        self.offer = LinkOffer(push: push.linkPush, expiresAt: expiresAt, background: push.pushType == .background)
        switch consume responder {
        case .closure(let closure):
            self.closure = closure
            self.connection = nil
        case .connection(let connection):
            self.closure = nil
            self.connection = connection
        }
        self.offline = offline
        self.links = links
        self.metrics = metrics
        // Last, so that the push moves in rather than being copied (a retain of each string).
        self.push = push
    }

    /// What became of the push on its device's link (on the link's event loop).
    func linkOutcome(_ outcome: LinkOutcome) {
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
            keep(deliveredAt: deliveredAt)
        case .hold:
            keep(deliveredAt: nil, why: .held)
        case .backedUp:
            keep(deliveredAt: nil, why: .backedUp)
        }
    }

    /// Stores or discards the push (the link could not deliver it, or no link has its device), and
    /// offers it to the device's link once durable, in case the device connected meanwhile.
    func keep(deliveredAt: Date?, why: OfflineStore.Why = .unreached) {
        let links = self.links
        offline.keep(
            push, expiresAt: expiresAt, deliveredAt: deliveredAt, why: why, respond: { self.respond($0) }
        ) { stored in
            links.offerStored([stored], to: stored.deviceID)
        }
    }

    /// Answers the provider: at once on the connection's loop, else through its mailbox.
    func respond(_ answer: consuming ProviderResponse) {
        guard connection != nil else {
            closure?(answer)
            return
        }
        // `connection!.…` reads each field where it is kept; `if let` would copy them all.
        var final = answer
        // Nearly every push has neither: its answer goes on as it came.
        if !connection!.warnings.isEmpty || connection!.connectionFault != nil {
            if final.status == 200 { final.warnings = connection!.warnings }
            final.connectionFault = connection!.connectionFault
        }
        let loop = connection!.answer.eventLoop
        metrics.answered(final, after: loop.now - connection!.start)
        if loop.inEventLoop {
            connection!.answer.value(final)
        } else {
            connection!.mailbox.post(Answer(delivery: self, response: final))
        }
    }

    /// An answer posted by ``respond(_:)`` reached the connection's loop.
    private func answerArrived(_ response: ProviderResponse) {
        connection?.answer.value(response)
    }

    /// A mailbox for the answers of a provider connection on `loop` (each connection keeps one).
    static func answerMailbox(on loop: any EventLoop) -> LoopMailbox<Answer> {
        LoopMailbox(loop: loop) { answers in
            // By index: each answer is read where it lies, not copied out.
            for i in answers.indices { answers[i].delivery.answerArrived(answers[i].response) }
        }
    }
}

extension AcceptedPush {
    /// The push as it goes down the device link.
    var linkPush: LinkPush {
        LinkPush(
            apnsID: apnsID, uniqueID: uniqueID, topic: topic, token: registration.token,
            environment: registration.environment, pushType: pushType, priority: priority, expiration: expiration,
            collapseID: collapseID, payload: payload.withUnsafeReadableBytes { Data($0) })
    }
}
