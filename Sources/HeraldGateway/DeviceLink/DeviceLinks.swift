import Foundation
import HeraldCore
import HeraldNIO
import NIOCore
import Synchronization

/// The devices connected over the device link, by device id. The router looks a device up here
/// for every push; the link's own handler (on its event loop) does the rest.
public final class DeviceLinks: Sendable {
    struct Handle: Sendable {
        let loop: any EventLoop
        let handler: NIOLoopBound<any DeviceConnection>
        let key: ObjectIdentifier
        /// Pushes on their way to the links of `loop` from other loops, many to a task.
        let offers: LoopMailbox<PendingOffer>
    }

    /// A push on its way to a link on another loop.
    struct PendingOffer: Sendable {
        let link: NIOLoopBound<any DeviceConnection>
        let push: any OfferedPush
    }

    private let links = Mutex<[String: Handle]>([:])
    private let seen = Mutex<[String: Date]>([:])
    /// ``offerMailbox(on:)``'s, by loop.
    private let offerMailboxes = Mutex<[ObjectIdentifier: LoopMailbox<PendingOffer>]>([:])
    /// Told of each device whose link opens here or closes (a cluster node records it).
    let presence: NodePresence?

    /// No device connected; `presence` (on a cluster) is told as links open and close.
    public init(presence: NodePresence? = nil) {
        self.presence = presence
    }

    /// How many devices are connected.
    public var onlineCount: Int { links.withLock { $0.count } }

    /// Whether a device is connected.
    public func isOnline(_ deviceID: String) -> Bool { links.withLock { $0[deviceID] != nil } }

    /// When a device's link last connected or closed, since the gateway started.
    public func lastSeen(_ deviceID: String) -> Date? { seen.withLock { $0[deviceID] } }

    /// Notes that a device's link connected or closed at `at`.
    func saw(_ deviceID: String, at: Date) { seen.withLock { $0[deviceID] = at } }

    /// The event loop a connected device's link runs on.
    func loop(of deviceID: String) -> (any EventLoop)? { links.withLock { $0[deviceID]?.loop } }

    /// Records a device's connection; returns the connection it replaces.
    func attach(_ deviceID: String, _ handle: Handle) -> Handle? {
        let old = links.withLock { links in
            let old = links[deviceID]
            links[deviceID] = handle
            return old
        }
        presence?.deviceConnected(deviceID)
        return old
    }

    /// Forgets a device's connection, unless another one has replaced it.
    func detach(_ deviceID: String, key: ObjectIdentifier) {
        let removed = links.withLock { links in
            guard links[deviceID]?.key == key else { return false }
            links[deviceID] = nil
            return true
        }
        if removed { presence?.deviceDisconnected(deviceID) }
    }

    /// Offers a push to its device; `false` (and the push never told) when the device is not
    /// connected. The push hears what became of it on the link's event loop.
    func offer(_ push: any OfferedPush, to deviceID: String) -> Bool {
        guard let handle = links.withLock({ $0[deviceID] }) else { return false }
        if handle.loop.inEventLoop {
            handle.handler.value.offer(push.offer, waiter: push)
        } else {
            handle.offers.post(PendingOffer(link: handle.handler, push: push))
        }
        return true
    }

    /// The mailbox of pushes for the device links on `loop`: one per loop, made by the first link
    /// attached there.
    func offerMailbox(on loop: any EventLoop) -> LoopMailbox<PendingOffer> {
        offerMailboxes.withLock { mailboxes in
            if let mailbox = mailboxes[ObjectIdentifier(loop)] { return mailbox }
            let mailbox = LoopMailbox<PendingOffer>(loop: loop) { offers in
                // By index: each offer is read where it lies, not copied out (as the answers are).
                for i in offers.indices { offers[i].link.value.offer(offers[i].push.offer, waiter: offers[i].push) }
            }
            mailboxes[ObjectIdentifier(loop)] = mailbox
            return mailbox
        }
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

    /// The ids of the devices connected here.
    public var connectedDevices: [String] { links.withLock { Array($0.keys) } }

    /// Every connection, for shutdown.
    var all: [Handle] { links.withLock { Array($0.values) } }
}
