import Foundation
import HeraldCore
import HeraldRuntime
import NIOCore
import NIOWebSocket

/// One device's link as a value (docs/device-link.md): the challenge, the device's requests, the
/// notifications going down with their acknowledgements, the broadcast subscriptions, and the
/// link's deadlines. It has no channel and no clock: each event brings the time (the event loop's
/// for deadlines, the wall clock's for records) and returns the ``Action``s the handler carries
/// out, in order. Work off the event loop (authentication, the store, the broadcast hub) is an
/// action whose result comes back as another event.
struct DeviceLinkStateMachine {
    /// The longest reason of a device's `refused` the delivery log keeps, in bytes (the device's
    /// own are a line: "the app is not installed", a payload's first fault).
    static let refusalReasonLimit = 500

    /// Where the link is.
    enum Phase: Equatable {
        /// The challenge is out; the device's signed `hello` is awaited.
        case greeting(nonce: Data)
        /// The `hello` came; the gateway checks it.
        case authenticating
        /// The device is known and receives notifications.
        case online(device: String)
        /// The link is gone.
        case closed
    }

    /// Where a notification on this link came from, which decides what its acknowledgement does.
    enum Origin {
        /// Straight from a provider, who waits for the outcome.
        case direct(Completion)
        /// In the offline store: the acknowledgement removes it.
        case stored
    }

    /// A notification on the link: waiting in the QoS, or written and awaiting its acknowledgement.
    struct Entry {
        var ticket: Int
        var push: LinkPush
        var expiresAt: Date?
        var origin: Origin
        var deliveredAt: Date?
        /// Its acknowledgement deadline's slot (``AcknowledgementDeadlines/settle(_:)``), once written.
        var deadlineSlot: Int?
    }

    /// An app's subscriptions are kept by its bundle id and environment.
    struct Subscription: Hashable {
        var topic: String
        var environment: APNsEnvironment
    }

    /// ``DeviceLinkConfiguration/idleTimeout`` on the event loop's clock, converted once.
    let idleTimeout: TimeAmount?
    /// ``DeviceLinkConfiguration/authenticationTimeout`` on the event loop's clock, converted once.
    let authenticationTimeout: TimeAmount
    /// ``DeviceLinkConfiguration/drainWindow`` in milliseconds, as `goaway` carries it.
    let drainWindow: Int
    /// Whether the gateway has broadcast channels (without, subscriptions are refused).
    let broadcasts: Bool
    var phase: Phase
    var qos: LinkQoS
    var nextTicket = 0
    /// Waiting in the QoS, by ticket.
    var queued: [Int: Entry] = [:] {
        didSet { queuedIDs = nil }
    }
    /// The `apns-id`s in `queued`, made when first asked for after a change.
    var queuedIDs: Set<String>?
    /// Whether the stored backlog has been read since the device came online. Until then, stored
    /// pushes offered after their commit (``offerStored(_:now:at:isRegistered:)``) wait in
    /// `storedWaiting`, so that they go down in the order they were accepted, after the older
    /// ones the backlog holds.
    var backlogLoaded = false
    var storedWaiting: [StoredPush] = []
    /// `apns-id`s of stored pushes acknowledged on this link lately: a stored push offered again
    /// once its commit lands is not sent a second time.
    var recentlyAcknowledged = RecentIDs(capacity: 4096)
    /// The last pushes acknowledged, for a refusal that follows (the device refuses after its
    /// acknowledgement): their topic and origin count the refusal in Apple's states.
    var lastAcknowledged = LastAcknowledged()
    /// Written to the device, waiting for its acknowledgement, by `apns-id`: almost always one
    /// each, so the first has a dictionary of its own and no array is made per notification.
    var awaiting: [String: Entry] = [:]
    /// Further notifications written under an `apns-id` already awaiting (a provider may reuse one).
    var awaitingMore: [String: [Entry]] = [:]
    /// When the QoS wake-up is scheduled, if it is.
    var wakeAt: NIODeadline?
    /// Acknowledgement deadlines of direct pushes, in the event loop's time, and whether their
    /// timer is scheduled.
    var deadlines: AcknowledgementDeadlines
    var deadlineScheduled = false
    /// Liveness (``DeviceLinkConfiguration/idleTimeout``): when the device was last heard, whether
    /// it has been pinged since, and whether the timer that looks again is scheduled.
    var lastHeard = NIODeadline.distantPast
    var pinged = false
    var livenessScheduled = false
    /// The broadcast channels each app (bundle id, environment) is subscribed to on this link.
    var subscriptions: [Subscription: Set<String>] = [:]
    /// Whether the device presented a resumption ticket on this link: one try, then it signs.
    var resumeTried = false
    /// Whether the deadline of a `hello`'s check is scheduled.
    var authenticationDeadlineScheduled = false
    /// Whether the link is backed up: more is waiting to reach the device than the link's
    /// high-water mark allows (the device does not read what was written to it). Meanwhile nothing
    /// more is written: direct pushes go to the store, stored ones stay there, broadcasts are not
    /// sent, so that a device that does not read holds no more of the gateway's memory.
    var backedUp = false
    /// Whether stored pushes were left in the store while the link was backed up: once it catches
    /// up, the backlog is read again.
    var storeHasMore = false
    /// Whether a QoS wake-up came while the link was backed up (it is made once it catches up).
    var wakeMissed = false
    /// What the current (or last) backed-up stretch left unsent, for its log line.
    var leftToStore = 0
    var broadcastsNotSent = 0

    /// A link that will greet the device with `nonce`.
    init(configuration: DeviceLinkConfiguration, broadcasts: Bool, nonce: Data) {
        self.idleTimeout = configuration.idleTimeout.map { TimeAmount($0) }
        self.authenticationTimeout = TimeAmount(configuration.authenticationTimeout)
        self.drainWindow = Int((configuration.drainWindow.timeInterval * 1000).rounded())
        self.broadcasts = broadcasts
        self.phase = .greeting(nonce: nonce)
        self.qos = LinkQoS(configuration: configuration.qos)
        self.deadlines = AcknowledgementDeadlines(timeout: TimeAmount(configuration.acknowledgementTimeout))
    }

    /// 32 random bytes, from the pool `RandomUUID` draws from: a reconnect storm opens thousands of
    /// links a second, and a system call per eight bytes showed in its profile.
    static func randomNonce() -> Data { RandomUUID.bytes(32) }

    /// The device, once authenticated and until the link closes.
    var deviceID: String? {
        if case .online(let device) = phase { return device }
        return nil
    }

    // MARK: Channel events

    /// The handler is on the channel, which is active (the upgrade added it): greet at once.
    func added() -> [Action] {
        if case .greeting(let nonce) = phase { return [.send(.challenge(nonce: nonce))] }
        return []
    }

    /// The handler is on the channel and the device's upgrade request carried a resumption the
    /// gateway accepted: online at once, the `welcome` right behind the `101`. A second resumption
    /// on this link is refused, as after a `resume`.
    mutating func resumedInUpgrade(_ device: DeviceLinkService.Authenticated, now: NIODeadline, at: Date)
        -> [Action]
    {
        guard case .greeting = phase else { return [] }
        phase = .authenticating
        resumeTried = true
        return [.connectionEstablished] + authenticated(.success(device), now: now, at: at)
    }

    /// A frame from the device.
    mutating func received(_ frame: WebSocketFrame, now: NIODeadline, at: Date) -> [Action] {
        if livenessScheduled {
            lastHeard = now
            pinged = false
        }
        switch frame.opcode {
        case .text, .binary:
            let data = frame.unmaskedData
            let read = data.withUnsafeReadableBytes { bytes in
                Result { () throws(LinkMessageError) in try LinkMessage(json: bytes) }
            }
            switch read {
            case .success(let message): return handle(message, now: now, at: at)
            case .failure(let error):
                // Answered as the request it is, when it has a number (a message type this gateway does
                // not know, say): the device's call fails now, not at its deadline.
                let request = Self.requestNumber(in: data)
                return [.send(.error(request: request, code: .badMessage, message: error.description))]
            }
        case .ping:
            return [.pong(frame.unmaskedData)]
        case .connectionClose:
            var data = frame.unmaskedData
            return [.echoClose(data.readSlice(length: 2) ?? ByteBuffer())]
        default:
            return []
        }
    }

    /// The `request` number of a JSON object that is no message this gateway reads, if it has one.
    static func requestNumber(in data: ByteBuffer) -> Int? {
        struct Numbered: Decodable { var request: Int }
        return try? JSONDecoder().decode(Numbered.self, from: Data(data.readableBytesView)).request
    }

    /// A message from the device.
    mutating func handle(_ message: LinkMessage, now: NIODeadline, at: Date) -> [Action] {
        switch (phase, message) {
        case (.greeting(let nonce), .hello(let device, let publicKey, let signature)):
            phase = .authenticating
            authenticationDeadlineScheduled = true
            // The device has done its part within the first-bytes deadline; checking its signature
            // and registering it is the gateway's work, which a busy gateway must not count against
            // it. It has a deadline of its own, so that a store that stalls holds no link for good.
            return [
                .connectionEstablished,
                .scheduleAuthenticationDeadline(at: now + authenticationTimeout),
                .authenticate(device: device, publicKey: publicKey, signature: signature, nonce: nonce),
            ]
        case (.greeting(let nonce), .resume(let device, let ticket, let proof)) where !resumeTried:
            phase = .authenticating
            resumeTried = true
            // Checked at once, on the loop: the first-bytes deadline ends only once it is accepted,
            // so a device that then never signs is still closed in time.
            return [.resume(device: device, ticket: ticket, proof: proof, nonce: nonce)]
        case (.greeting, _), (.authenticating, _):
            return refuse(
                code: .notAuthenticated, message: "the first message must be hello, signed over the challenge", at: at)
        case (.online, .ack(let ids)):
            return acknowledge(ids, at: at)
        case (.online(let device), .refused(let apnsID, let reason)):
            // Acknowledged already; the delivery log says what became of it on the device. Pushes'
            // ids are UUIDs (the provider API refuses any other apns-id), and a reason longer than
            // any a device gives is cut: the line is stored for the delivery log's whole retention.
            guard UUID(uuidString: apnsID) != nil else {
                return [
                    .send(
                        .error(
                            request: nil, code: .badMessage,
                            message: "apnsID \(TextExcerpt.quoted(apnsID, limit: 64)) is not a push's apns-id"))
                ]
            }
            return [
                .recordRefused(
                    apnsID: apnsID, device: device, reason: TextExcerpt.of(reason, limit: Self.refusalReasonLimit),
                    at: at, refusal: refusal(of: apnsID))
            ]
        case (.online, .subscribe(let request, let topic, let environment, let channels)):
            return subscribe(request: request, Subscription(topic: topic, environment: environment), channels, at: at)
        case (.online, .unsubscribe(let request, let topic, let environment, let channels)):
            let subscription = Subscription(topic: topic, environment: environment)
            subscriptions[subscription]?.subtract(channels)
            if subscriptions[subscription]?.isEmpty == true { subscriptions[subscription] = nil }
            return [
                .unsubscribe(channels: channels, environment: environment),
                .send(subscribedAnswer(request: request, subscription)),
            ]
        case (.online(let device), .register), (.online(let device), .unregister),
            (.online(let device), .resetDevice), (.online(let device), .registerScope),
            (.online(let device), .unregisterScope):
            return [.perform(message, device: device)]
        case (.online, _):
            return [
                .send(
                    .error(
                        request: message.requestID, code: .badMessage, message: "a device does not send that message"))
            ]
        case (.closed, _):
            return []
        }
    }

    /// The gateway checked the device's `hello`: refused, or online with its welcome, its
    /// registration as connected here, and its backlog to read.
    mutating func authenticated(
        _ result: Result<DeviceLinkService.Authenticated, DeviceLinkService.Refusal>, now: NIODeadline, at: Date
    ) -> [Action] {
        guard case .authenticating = phase else { return [] }
        switch result {
        case .failure(let refusal):
            return [.logRefused(code: refusal.code, message: refusal.message)]
                + refuse(code: refusal.code, message: refusal.message, at: at)
        case .success(let authenticated):
            let (device, registrations) = (authenticated.device, authenticated.registrations)
            phase = .online(device: device.id)
            var actions = startLiveness(now: now)
            if authenticationDeadlineScheduled {
                authenticationDeadlineScheduled = false
                actions.insert(.cancelAuthenticationDeadline, at: 0)
            }
            actions.append(
                .send(
                    .welcome(
                        device: device.id, generation: device.generation,
                        registrations: registrations.map {
                            LinkRegistration(
                                topic: $0.bundleID, environment: $0.environment, token: $0.token, scope: $0.scope)
                        }, ticket: authenticated.ticket)))
            actions.append(.attach(device: device.id, at: at))
            actions.append(.readBacklog(device: device.id))
            return actions
        }
    }

    /// The `hello`'s check did not come back within ``DeviceLinkConfiguration/authenticationTimeout``
    /// (the store stalls): the device is told, and the link closed. A check that comes back later
    /// changes nothing (``authenticated(_:now:at:)`` wants a link still being checked).
    mutating func authenticationDeadlineFired(at: Date) -> [Action] {
        authenticationDeadlineScheduled = false
        guard case .authenticating = phase else { return [] }
        let seconds = Double(authenticationTimeout.nanoseconds) / 1e9
        let shown = seconds == seconds.rounded() ? "\(Int(seconds))" : "\(seconds)"
        let message = "the gateway could not check the hello within \(shown) s"
        return [.logRefused(code: .internal, message: message)] + refuse(code: .internal, message: message, at: at)
    }

    /// The gateway checked a resumption ticket: online as after a signed `hello`, or, when the
    /// ticket is refused, `TicketRefused` and the same challenge, now to be signed.
    mutating func resumed(
        _ result: Result<DeviceLinkService.Authenticated, DeviceLinkService.Refusal>, nonce: Data, now: NIODeadline,
        at: Date
    ) -> [Action] {
        guard case .authenticating = phase else { return [] }
        guard case .failure(let refusal) = result, refusal.code == .ticketRefused else {
            return [.connectionEstablished] + authenticated(result, now: now, at: at)
        }
        phase = .greeting(nonce: nonce)
        return [
            .logRefused(code: refusal.code, message: refusal.message),
            .send(.error(request: nil, code: .ticketRefused, message: refusal.message)),
        ]
    }

    // MARK: Broadcast channels

    /// Subscribes an app on this link to channels (docs/broadcast.md): the hub checks that each is
    /// the app's; the answer lists all the app's channels, and each channel's kept message follows.
    func subscribe(request: Int?, _ subscription: Subscription, _ channels: [String], at: Date) -> [Action] {
        guard broadcasts else {
            return [.send(.error(request: request, code: .refused, message: "this gateway has no broadcast channels"))]
        }
        if let bad = channels.first(where: { !BroadcastChannel.isWellFormed($0) }) {
            return [
                .send(
                    .error(
                        request: request, code: .badMessage,
                        message: "\(TextExcerpt.quoted(bad, limit: 64)) is not a channel id (base64)"))
            ]
        }
        return [.subscribe(request: request, subscription, channels: channels, at: at)]
    }

    /// The hub answered: refused, or the subscription is taken; answer, then send what the
    /// channels keep.
    mutating func subscribed(
        request: Int?, _ subscription: Subscription, channels: [String],
        _ result: Result<[LinkBroadcast], DeviceLinkService.Refusal>
    ) -> [Action] {
        let kept: [LinkBroadcast]
        switch result {
        case .failure(let refusal):
            return [.send(.error(request: request, code: refusal.code, message: refusal.message))]
        case .success(let messages): kept = messages
        }
        guard deviceID != nil else {
            // The link closed meanwhile; its subscriptions end with it.
            return [.unsubscribe(channels: channels, environment: subscription.environment)]
        }
        subscriptions[subscription, default: []].formUnion(channels)
        return [.send(subscribedAnswer(request: request, subscription))] + kept.map { .send(.broadcast($0)) }
    }

    func subscribedAnswer(request: Int?, _ subscription: Subscription) -> LinkMessage {
        .subscribed(
            request: request, topic: subscription.topic, environment: subscription.environment,
            channels: (subscriptions[subscription] ?? []).sorted())
    }

    /// A broadcast already encoded: written while the device is online, unless the link is backed
    /// up (the device that missed it learns the channel's kept message when it subscribes again).
    mutating func broadcastFrame(_ frame: ByteBuffer) -> [Action] {
        guard deviceID != nil else { return [] }
        if backedUp {
            broadcastsNotSent += 1
            return []
        }
        return [.writeFrame(frame), .flush]
    }

    // MARK: Back-pressure

    /// The link's writability changed: it went above its high-water mark (backed up: the device
    /// is not reading what was written) or came back below its low-water mark (caught up). Caught
    /// up, the link makes the QoS wake-up it let pass, and reads the store again for what it left
    /// there meanwhile; pushes stored while that read runs wait for it, as at connect, so that
    /// they go down in the order they were accepted.
    mutating func writabilityChanged(isWritable: Bool, now: NIODeadline, at: Date) -> [Action] {
        guard let device = deviceID else { return [] }
        if !isWritable {
            guard !backedUp else { return [] }
            backedUp = true
            leftToStore = 0
            broadcastsNotSent = 0
            return [.logBackedUp(device: device)]
        }
        guard backedUp else { return [] }
        backedUp = false
        var actions: [Action] = [
            .logCaughtUp(device: device, leftToStore: leftToStore, broadcastsNotSent: broadcastsNotSent)
        ]
        missedWake(now: now, at: at, into: &actions)
        if storeHasMore {
            storeHasMore = false
            backlogLoaded = false
            actions.append(.readBacklog(device: device))
        }
        return actions
    }

    // MARK: Liveness

    /// Starts watching an authenticated link for silence.
    mutating func startLiveness(now: NIODeadline) -> [Action] {
        guard let idle = idleTimeout, !livenessScheduled else { return [] }
        lastHeard = now
        livenessScheduled = true
        return [.scheduleLiveness(in: .nanoseconds(idle.nanoseconds / 2))]
    }

    /// Half the idle time quiet: ping the device. All of it: the device is gone; close.
    mutating func livenessFired(now: NIODeadline, at: Date) -> [Action] {
        guard let idle = idleTimeout, let device = deviceID else { return [] }
        let quiet = now - lastHeard
        if quiet >= idle {
            livenessScheduled = false
            let reason = "device \(device) sent nothing, not even a pong, for \(idle.secondsText) (idle deadline)"
            return [.logClosed(reason: reason)] + close(code: 1001, at: at)
        }
        if quiet >= .nanoseconds(idle.nanoseconds / 2) {
            var actions: [Action] = []
            if !pinged {
                pinged = true
                actions.append(.ping)
            }
            actions.append(.scheduleLiveness(in: idle - quiet))
            return actions
        }
        return [.scheduleLiveness(in: .nanoseconds(idle.nanoseconds / 2) - quiet)]
    }

    // MARK: Closing

    /// Sends an error and closes the connection (policy violation, 1008).
    mutating func refuse(code: LinkErrorCode, message: String, at: Date) -> [Action] {
        [.send(.error(request: nil, code: code, message: message))] + close(code: 1008, at: at)
    }

    /// The gateway is stopping: an authenticated device is told when to come back (`goaway`, with
    /// the drain window), then the link closes (1001, going away).
    mutating func goAway(at: Date) -> [Action] {
        guard deviceID != nil else { return close(code: 1001, at: at) }
        return [.send(.goAway(reconnectWithin: drainWindow))] + close(code: 1001, at: at)
    }

    mutating func close(code: UInt16, at: Date) -> [Action] { [.close(code: code)] + closed(at: at) }

    /// The link is gone: providers still waiting learn that their pushes were not acknowledged
    /// (the router stores them); stored ones stay stored for the next connection.
    mutating func closed(at: Date) -> [Action] {
        if case .closed = phase { return [] }
        let device = deviceID
        phase = .closed
        var actions: [Action] = [.cancelTimers]
        wakeAt = nil
        deadlineScheduled = false
        livenessScheduled = false
        deadlines.removeAll()
        for (subscription, channels) in subscriptions {
            actions.append(.unsubscribe(channels: Array(channels), environment: subscription.environment))
        }
        subscriptions = [:]
        if let device { actions.append(.detach(device: device, at: at)) }
        var unfinished: [Entry] = qos.drain().compactMap { queued.removeValue(forKey: $0) }
        unfinished += queued.values
        unfinished += awaiting.values
        unfinished += awaitingMore.values.flatMap { $0 }
        queued = [:]
        awaiting = [:]
        awaitingMore = [:]
        for entry in unfinished {
            if case .direct(let completion) = entry.origin {
                actions.append(.answer(completion, .notAcknowledged(deliveredAt: entry.deliveredAt)))
            }
        }
        if let device { actions.append(.logDisconnected(device: device)) }
        return actions
    }
}
