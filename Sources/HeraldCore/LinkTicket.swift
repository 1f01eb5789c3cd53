import Foundation

/// A resumption ticket (docs/device-link.md, "Resuming"): what the gateway gives a device in its
/// `welcome` so that the next connection needs no signature. The device keeps all three and sends
/// `ticket` back with a proof made with `secret`.
public struct LinkTicket: Sendable, Equatable {
    /// The sealed ticket, opaque to the device.
    public var ticket: Data
    /// The secret the device proves it holds (32 bytes); the device never sends it.
    public var secret: Data
    /// When the gateway stops accepting the ticket, in UNIX seconds.
    public var expires: Int64

    /// Creates a ticket.
    public init(ticket: Data, secret: Data, expires: Int64) {
        self.ticket = ticket
        self.secret = secret
        self.expires = expires
    }
}
