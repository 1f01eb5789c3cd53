import Foundation
import HeraldCore
import HeraldNIO
import NIOCore

/// What the transports (HTTP/2, HTTP/1.1, the binary interface) share: carrying out the provider
/// API's decision and counting the answer.
extension PushRouter {
    /// Counts an answer, and logs why it was given when the provider API left a note (a body that
    /// is no JSON object, say): the client sees only the reason.
    func answered(_ response: ProviderResponse, after elapsed: TimeAmount) {
        if let refused = response.subject { offline.logRejected(response, refused) }
        if let note = response.note, !response.injected {
            logger.notice(
                "provider request refused",
                metadata: [
                    "apns-id": "\(response.apnsID)", "reason": "\(response.reasonText ?? "\(response.status)")",
                    "why": "\(note)",
                ])
        }
        metrics.answered(response, after: elapsed)
    }

    /// Carries out a provider API decision for a transport: answers at once, after an injected
    /// delay, or once the push is delivered or stored. `answer` always runs on `loop` (at once,
    /// inside this call, for an immediate answer), so a channel handler can write from it. Answers
    /// that come from other loops arrive through `answers`, the connection's mailbox (a new one for
    /// this push when `nil`).
    func carryOut(
        _ decision: consuming ProviderAPI.Decision, on loop: any EventLoop,
        answers: LoopMailbox<LinkDelivery.Answer>? = nil, answer: @escaping (ProviderResponse) -> Void
    ) {
        let start = loop.now
        let metrics = self.metrics
        switch consume decision {
        case .respond(let response, nil):
            answered(response, after: .zero)
            answer(response)
        case .respond(let response, let delay?):
            loop.assumeIsolated().scheduleTask(in: delay) { [self] in
                answered(response, after: loop.now - start)
                answer(response)
            }
        case .perform(let work):
            // Work on the store (the channel management API): its answer comes back to the loop.
            let bound = NIOLoopBound(answer, eventLoop: loop)
            Task {
                let response = await work()
                loop.execute {
                    metrics.answered(response, after: loop.now - start)
                    bound.value(response)
                }
            }
        case .accept(let push, let delay):
            // One object carries the push to the device's link and its answer back to this loop.
            let connection = LinkDelivery.ConnectionAnswer(
                answer: NIOLoopBound(answer, eventLoop: loop), start: start,
                warnings: push.forwarded ? PushWarnings() : push.warnings, connectionFault: push.connectionFault,
                mailbox: answers ?? LinkDelivery.answerMailbox(on: loop))
            let delivery = delivery(consume push, responder: .connection(consume connection))
            if let delay {
                loop.scheduleTask(in: delay) { [self] in route(delivery) }
            } else {
                route(delivery)
            }
        }
    }
}
