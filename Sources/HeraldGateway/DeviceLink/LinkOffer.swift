import Foundation
import HeraldCore

/// How an offered notification ended on the device link.
public enum LinkOutcome: Sendable, Equatable {
    /// The device acknowledged it.
    case acknowledged(deliveredAt: Date, acknowledgedAt: Date)
    /// The device did not acknowledge it in time, or the link closed first (`deliveredAt` is set
    /// when it was written to the device). The router stores it under the offline policy.
    case notAcknowledged(deliveredAt: Date?)
    /// The QoS holds it (priority 5 or 1, or a background push over budget): the router stores it
    /// now and the link sends it later; its acknowledgement then removes it from the store.
    case hold
    /// The device's link is backed up (the device has not read what was written to it): the push
    /// was not written. The router stores it (or, with expiration 0, discards it); the link reads
    /// the store again once the device catches up.
    case backedUp
}

/// A notification offered to a connected device.
public struct LinkOffer: Sendable {
    /// What goes down the link.
    public var push: LinkPush
    /// When the gateway stops trying (`nil`: one attempt only, expiration 0).
    public var expiresAt: Date?
    /// Counts against the background budget.
    public var background: Bool

    /// Creates an offer.
    public init(push: LinkPush, expiresAt: Date?, background: Bool) {
        self.push = push
        self.expiresAt = expiresAt
        self.background = background
    }
}
