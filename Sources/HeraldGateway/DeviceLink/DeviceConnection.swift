import HeraldCore
import NIOCore

/// What waits for a push offered to a device's link: told once, on the link's event loop, what
/// became of it.
protocol LinkWaiter: AnyObject, Sendable {
    /// The push was acknowledged, not acknowledged in time, or held by the link's QoS.
    func linkOutcome(_ outcome: LinkOutcome)
}

/// A push offered to a device's link, with what waits for it (the router's `LinkDelivery`).
protocol OfferedPush: LinkWaiter {
    /// What goes to the link.
    var offer: LinkOffer { get }
}

/// A connected device's link as the registry drives it; every call runs on the link's event loop.
/// (`DeviceLinkHandler` is the one kind; the registry does not need to know it.)
protocol DeviceConnection: AnyObject {
    /// Sends a push (or holds it under the QoS); `waiter` hears what became of it.
    func offer(_ offer: LinkOffer, waiter: any LinkWaiter)
    /// Sends pushes just committed to the offline store, unless the link has them already.
    func offerStored(_ pushes: [StoredPush])
    /// Sends a message.
    func send(_ message: LinkMessage)
    /// Sends a message already encoded (a broadcast, encoded once for all its subscribers), flushed
    /// once per turn of the event loop.
    func send(frame: ByteBuffer)
    /// Sends an error and closes.
    func refuse(code: LinkErrorCode, message: String)
    /// Closes for shutdown (1001, going away).
    func goAway()
}
