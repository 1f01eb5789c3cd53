import Foundation
import NIOCore

@testable import HeraldGateway

/// A ``LinkWaiter`` that calls a closure: the tests hear what became of a push offered to a link.
final class ClosureWaiter: LinkWaiter {
    let call: @Sendable (LinkOutcome) -> Void

    init(_ call: @escaping @Sendable (LinkOutcome) -> Void) { self.call = call }

    func linkOutcome(_ outcome: LinkOutcome) { call(outcome) }
}

extension DeviceConnection {
    /// ``offer(_:waiter:)`` with a closure to hear what became of the push.
    func offer(_ offer: LinkOffer, completion: @escaping @Sendable (LinkOutcome) -> Void) {
        self.offer(offer, waiter: ClosureWaiter(completion))
    }
}

extension DeviceLinkStateMachine {
    /// ``offer(_:waiter:now:at:into:)`` with a closure to hear what became of the push, its actions
    /// returned.
    mutating func offer(
        _ offer: LinkOffer, completion: @escaping @Sendable (LinkOutcome) -> Void, now: NIODeadline, at: Date
    ) -> [Action] {
        var actions: [Action] = []
        self.offer(offer, waiter: ClosureWaiter(completion), now: now, at: at, into: &actions)
        return actions
    }
}

extension DeviceLinkStateMachine.Completion {
    /// A completion that calls `call`.
    init(ticket: Int, call: @escaping @Sendable (LinkOutcome) -> Void) {
        self.init(ticket: ticket, waiter: ClosureWaiter(call))
    }
}
