import Foundation
import HeraldCore
import NIOCore
import Synchronization

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

/// A connected device's link as the registry drives it; every call runs on the link's event loop.
/// (`DeviceLinkHandler` is the one kind; the registry does not need to know it.)
protocol DeviceConnection: AnyObject {
    /// Sends a push (or holds it under the QoS); `completion` says what became of it.
    func offer(_ offer: LinkOffer, completion: @escaping @Sendable (LinkOutcome) -> Void)
    /// Sends pushes just committed to the offline store, unless the link has them already.
    func offerStored(_ pushes: [StoredPush])
    /// Sends a message.
    func send(_ message: LinkMessage)
    /// Sends an error and closes.
    func refuse(code: LinkErrorCode, message: String)
    /// Closes for shutdown (1001, going away).
    func goAway()
}

/// The devices connected over the device link, by device id. The router looks a device up here
/// for every push; the link's own handler (on its event loop) does the rest.
public final class DeviceLinks: Sendable {
    struct Handle: Sendable {
        let loop: any EventLoop
        let handler: NIOLoopBound<any DeviceConnection>
        let key: ObjectIdentifier
    }

    private let links = Mutex<[String: Handle]>([:])

    /// No device connected.
    public init() {}

    /// How many devices are connected.
    public var onlineCount: Int { links.withLock { $0.count } }

    /// Whether a device is connected.
    public func isOnline(_ deviceID: String) -> Bool { links.withLock { $0[deviceID] != nil } }

    /// The event loop a connected device's link runs on.
    func loop(of deviceID: String) -> (any EventLoop)? { links.withLock { $0[deviceID]?.loop } }

    /// Records a device's connection; returns the connection it replaces.
    func attach(_ deviceID: String, _ handle: Handle) -> Handle? {
        links.withLock { links in
            let old = links[deviceID]
            links[deviceID] = handle
            return old
        }
    }

    /// Forgets a device's connection, unless another one has replaced it.
    func detach(_ deviceID: String, key: ObjectIdentifier) {
        links.withLock { links in
            if links[deviceID]?.key == key { links[deviceID] = nil }
        }
    }

    /// Offers a notification to a device; `false` (and `completion` never called) when the device
    /// is not connected. `completion` runs on the link's event loop.
    func offer(
        _ offer: LinkOffer, to deviceID: String, completion: @escaping @Sendable (LinkOutcome) -> Void
    ) -> Bool {
        guard let handle = links.withLock({ $0[deviceID] }) else { return false }
        if handle.loop.inEventLoop {
            handle.handler.value.offer(offer, completion: completion)
        } else {
            handle.loop.execute { handle.handler.value.offer(offer, completion: completion) }
        }
        return true
    }

    /// Hands pushes just committed to the offline store to the device's link, if it is connected:
    /// it sends those it does not have yet. This closes the gap between a device's connecting (its
    /// link reads the store) and a commit that lands after that read.
    func offerStored(_ pushes: [StoredPush], to deviceID: String) {
        guard !pushes.isEmpty, let handle = links.withLock({ $0[deviceID] }) else { return }
        handle.loop.execute { handle.handler.value.offerStored(pushes) }
    }

    /// Tells a connected device that it was reset.
    public func deviceWasReset(_ deviceID: String, generation: Int) {
        guard let handle = links.withLock({ $0[deviceID] }) else { return }
        handle.loop.execute { handle.handler.value.send(.reset(request: nil, generation: generation)) }
    }

    /// Closes a device's connection (it was deleted).
    public func disconnect(_ deviceID: String, reason: String) {
        guard let handle = links.withLock({ $0[deviceID] }) else { return }
        handle.loop.execute { handle.handler.value.refuse(code: .deviceDeleted, message: reason) }
    }

    /// Every connection, for shutdown.
    var all: [Handle] { links.withLock { Array($0.values) } }
}
