import HeraldCore
import NIOCore

/// A connected device's link as the registry drives it; every call runs on the link's event loop.
/// (`DeviceLinkHandler` is the one kind; the registry does not need to know it.)
protocol DeviceConnection: AnyObject {
    /// Sends a push (or holds it under the QoS); `completion` says what became of it.
    func offer(_ offer: LinkOffer, completion: @escaping @Sendable (LinkOutcome) -> Void)
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
