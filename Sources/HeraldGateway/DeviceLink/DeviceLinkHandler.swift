import Foundation
import HeraldCore
import HeraldRuntime
import NIOCore
import NIOWebSocket

/// One device's link, on its event loop: the challenge, the device's requests, and the
/// notifications going down with their acknowledgements (docs/device-link.md).
final class DeviceLinkHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    enum Phase {
        case greeting(nonce: Data)
        case authenticating
        case online(device: String)
        case closed
    }

    /// Where a notification on this link came from, which decides what its acknowledgement does.
    enum Origin {
        /// Straight from a provider, who waits for the outcome.
        case direct(@Sendable (LinkOutcome) -> Void)
        /// In the offline store: the acknowledgement removes it.
        case stored
    }

    struct Entry {
        var ticket: Int
        var push: LinkPush
        var expiresAt: Date?
        var origin: Origin
        var deliveredAt: Date?
    }

    let service: DeviceLinkService
    var phase: Phase
    var context: ChannelHandlerContext?
    var qos: LinkQoS
    var nextTicket = 0
    /// Waiting in the QoS, by ticket.
    var queued: [Int: Entry] = [:] {
        didSet { queuedIDs = nil }
    }
    /// The `apns-id`s in `queued`, made when first asked for after a change.
    var queuedIDs: Set<String>?
    /// Whether the stored backlog has been read since the device came online. Until then, stored
    /// pushes offered after their commit (``offerStored(_:)``) wait in `storedWaiting`, so that
    /// they go down in the order they were accepted, after the older ones the backlog holds.
    var backlogLoaded = false
    var storedWaiting: [StoredPush] = []
    /// `apns-id`s of stored pushes acknowledged on this link lately: a stored push offered again
    /// once its commit lands is not sent a second time.
    var recentlyAcknowledged = RecentIDs(capacity: 4096)
    /// Written to the device, waiting for its acknowledgement, by `apns-id`: almost always one
    /// each, so the first has a dictionary of its own and no array is made per notification.
    var awaiting: [String: Entry] = [:]
    /// Further notifications written under an `apns-id` already awaiting (a provider may reuse one).
    var awaitingMore: [String: [Entry]] = [:]
    var wakeTimer: (at: NIODeadline, task: Scheduled<Void>)?
    /// Acknowledgement deadlines of direct pushes, in the event loop's time.
    var deadlines: AcknowledgementDeadlines
    var deadlineTimer: Scheduled<Void>?
    let turnFlush = LoopTurnFlush()
    /// Liveness (``DeviceLinkServer/Configuration/idleTimeout``): when the device was last heard,
    /// whether it has been pinged since, and the timer that looks again.
    var lastHeard = NIODeadline.distantPast
    var pinged = false
    var livenessTimer: Scheduled<Void>?
    /// The broadcast channels each app (bundle id, environment) is subscribed to on this link.
    var subscriptions: [Subscription: Set<String>] = [:]

    /// An app's subscriptions are kept by its bundle id and environment.
    struct Subscription: Hashable {
        var topic: String
        var environment: APNsEnvironment
    }

    init(service: DeviceLinkService) {
        self.service = service
        // 32 random bytes in four draws: each draw is a system call (getrandom), and a reconnect
        // storm opens thousands of links a second.
        var nonce = Data(capacity: 32)
        for _ in 0..<4 { withUnsafeBytes(of: UInt64.random(in: .min ... .max)) { nonce.append(contentsOf: $0) } }
        self.phase = .greeting(nonce: nonce)
        self.qos = LinkQoS(configuration: service.configuration.qos)
        self.deadlines = AcknowledgementDeadlines(timeout: service.configuration.acknowledgementTimeout)
    }

    var deviceID: String? {
        if case .online(let device) = phase { return device }
        return nil
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // The upgrade adds this handler to an active channel: greet at once.
        if case .greeting(let nonce) = phase { send(.challenge(nonce: nonce)) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        closed()
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if livenessTimer != nil {
            lastHeard = context.eventLoop.now
            pinged = false
        }
        switch frame.opcode {
        case .text, .binary:
            let read = frame.unmaskedData.withUnsafeReadableBytes { bytes in
                Result { () throws(LinkMessageError) in try LinkMessage(json: bytes) }
            }
            switch read {
            case .success(let message): handle(message)
            case .failure(let error): send(.error(request: nil, code: .badMessage, message: error.description))
            }
        case .ping:
            var pong = WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)
            pong.maskKey = nil
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            var data = frame.unmaskedData
            let code = data.readSlice(length: 2) ?? ByteBuffer()
            let close = WebSocketFrame(fin: true, opcode: .connectionClose, data: code)
            context.writeAndFlush(wrapOutboundOut(close)).whenComplete { [channel = context.channel] _ in
                channel.close(promise: nil)
            }
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        service.logger.debug("device link error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    // MARK: Messages from the device

    func handle(_ message: LinkMessage) {
        switch (phase, message) {
        case (.greeting(let nonce), .hello(let device, let publicKey, let signature)):
            phase = .authenticating
            // The device has done its part within the first-bytes deadline; checking its signature
            // and registering it is the gateway's work, which a busy gateway must not count against it.
            context?.triggerUserOutboundEvent(ConnectionEstablished(), promise: nil)
            authenticate(device: device, publicKey: publicKey, signature: signature, nonce: nonce)
        case (.greeting, _), (.authenticating, _):
            refuse(code: .notAuthenticated, message: "the first message must be hello, signed over the challenge")
        case (.online, .ack(let ids)):
            acknowledge(ids)
        case (.online(let device), .refused(let apnsID, let reason)):
            // Acknowledged already; the delivery log says what became of it on the device.
            service.offline.refused(apnsID, device: device, reason: reason, at: service.clock.now())
        case (.online, .subscribe(let request, let topic, let environment, let channels)):
            subscribe(request: request, Subscription(topic: topic, environment: environment), channels: channels)
        case (.online, .unsubscribe(let request, let topic, let environment, let channels)):
            let subscription = Subscription(topic: topic, environment: environment)
            service.broadcasts?.unsubscribe(id: ObjectIdentifier(self), channels: channels, environment: environment)
            subscriptions[subscription]?.subtract(channels)
            if subscriptions[subscription]?.isEmpty == true { subscriptions[subscription] = nil }
            send(subscribedAnswer(request: request, subscription))
        case (.online(let device), .register), (.online(let device), .unregister),
            (.online(let device), .resetDevice), (.online(let device), .registerScope),
            (.online(let device), .unregisterScope):
            guard let context else { return }
            let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
            let loop = context.eventLoop
            let service = self.service
            Task {
                let answer = await service.perform(message, device: device)
                loop.execute { bound.value.send(answer) }
            }
        case (.online, _):
            send(.error(request: message.requestID, code: .badMessage, message: "a device does not send that message"))
        case (.closed, _):
            break
        }
    }

    // MARK: Broadcast channels

    /// Subscribes an app on this link to channels (docs/broadcast.md): the hub checks that each is
    /// the app's; the answer lists all the app's channels, and each channel's kept message follows.
    func subscribe(request: Int?, _ subscription: Subscription, channels: [String]) {
        guard let context else { return }
        guard let hub = service.broadcasts else {
            send(.error(request: request, code: .refused, message: "this gateway has no broadcast channels"))
            return
        }
        if let bad = channels.first(where: { !BroadcastChannel.isWellFormed($0) }) {
            send(.error(request: request, code: .badMessage, message: "\"\(bad)\" is not a channel id (base64)"))
            return
        }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let subscriber = BroadcastHub.Subscriber(
            loop: context.eventLoop, connection: NIOLoopBound<any DeviceConnection>(self, eventLoop: context.eventLoop))
        let id = ObjectIdentifier(self)
        let loop = context.eventLoop
        let now = service.clock.now()
        Task {
            do {
                let kept = try await hub.subscribe(
                    subscriber, id: id, bundleID: subscription.topic, environment: subscription.environment,
                    channels: channels, now: now)
                loop.execute { bound.value.subscribed(request: request, subscription, channels: channels, kept: kept) }
            } catch let refusal as BroadcastHub.Refusal {
                loop.execute {
                    bound.value.send(.error(request: request, code: refusal.code, message: refusal.message))
                }
            } catch {
                loop.execute { bound.value.send(.error(request: request, code: .`internal`, message: "\(error)")) }
            }
        }
    }

    /// The hub took the subscription: answer, then send what the channels keep.
    func subscribed(request: Int?, _ subscription: Subscription, channels: [String], kept: [BroadcastMessage]) {
        guard deviceID != nil else {
            // The link closed meanwhile; its subscriptions end with it.
            service.broadcasts?.unsubscribe(
                id: ObjectIdentifier(self), channels: channels, environment: subscription.environment)
            return
        }
        subscriptions[subscription, default: []].formUnion(channels)
        send(subscribedAnswer(request: request, subscription))
        for message in kept { send(.broadcast(message.linkBroadcast)) }
    }

    func subscribedAnswer(request: Int?, _ subscription: Subscription) -> LinkMessage {
        .subscribed(
            request: request, topic: subscription.topic, environment: subscription.environment,
            channels: (subscriptions[subscription] ?? []).sorted())
    }

    func send(frame: ByteBuffer) {
        guard let context, deviceID != nil else { return }
        context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: frame)), promise: nil)
        scheduleFlush()
    }

    func authenticate(device: String?, publicKey: Data?, signature: Data, nonce: Data) {
        guard let context else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let loop = context.eventLoop
        let service = self.service
        Task {
            let result = await service.authenticate(
                device: device, publicKey: publicKey, signature: signature, nonce: nonce)
            loop.execute { bound.value.authenticated(result) }
        }
    }

    func authenticated(_ result: Result<(DeviceRecord, [Registration]), DeviceLinkService.Refusal>) {
        guard case .authenticating = phase, let context else { return }
        switch result {
        case .failure(let refusal):
            service.logger.notice(
                "device refused", metadata: ["code": "\(refusal.code)", "reason": "\(refusal.message)"])
            refuse(code: refusal.code, message: refusal.message)
        case .success(let (device, registrations)):
            phase = .online(device: device.id)
            startLiveness(context)
            send(
                .welcome(
                    device: device.id, generation: device.generation,
                    registrations: registrations.map {
                        LinkRegistration(
                            topic: $0.bundleID, environment: $0.environment, token: $0.token, scope: $0.scope)
                    }))
            let handle = DeviceLinks.Handle(
                loop: context.eventLoop,
                handler: NIOLoopBound<any DeviceConnection>(self, eventLoop: context.eventLoop),
                key: ObjectIdentifier(self))
            service.links.saw(device.id, at: service.clock.now())
            if let replaced = service.links.attach(device.id, handle) {
                replaced.loop.execute {
                    replaced.handler.value.refuse(code: .replaced, message: "the device connected again")
                }
            }
            service.logger.info("device connected", metadata: ["device": "\(device.id)"])
            loadBacklog(device: device.id)
        }
    }

    /// Sends what the store holds for the device (what it missed, and what it never acknowledged).
    func loadBacklog(device: String) {
        guard let context else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let loop = context.eventLoop
        let service = self.service
        Task {
            do {
                let pending = try await service.offline.pending(device: device, now: service.clock.now())
                loop.execute { bound.value.backlogRead(pending) }
            } catch {
                service.logger.error(
                    "could not read stored notifications", metadata: ["device": "\(device)", "error": "\(error)"])
                loop.execute { bound.value.backlogRead([]) }
            }
        }
    }

    /// The backlog is read: it goes down with whatever was stored meanwhile, oldest first.
    func backlogRead(_ pending: [StoredPush]) {
        backlogLoaded = true
        var all = pending
        if !storedWaiting.isEmpty {
            all += storedWaiting
            storedWaiting = []
            var seen = Set<String>()
            all = all.filter { seen.insert($0.apnsID).inserted }
            // Stable: pushes accepted in the same instant keep the store's order.
            all = all.enumerated().sorted { ($0.element.receivedAt, $0.offset) < ($1.element.receivedAt, $1.offset) }
                .map(\.element)
        }
        submitStored(all)
    }

    /// Pushes the router stored while this link was up (its commit landed after the device was
    /// attached, or the link held them): sent now, unless the link already has them.
    func offerStored(_ pushes: [StoredPush]) {
        guard deviceID != nil else { return }
        if !backlogLoaded {
            storedWaiting += pushes
            return
        }
        submitStored(pushes)
    }

    /// Queues stored pushes for the device, skipping those it has or has just acknowledged.
    func submitStored(_ pending: [StoredPush]) {
        guard let device = deviceID, let loop = context?.eventLoop else { return }
        var tickets: [LinkQoS.Ticket] = []
        if queuedIDs == nil { queuedIDs = Set(queued.values.map(\.push.apnsID)) }
        let waiting = queuedIDs ?? []
        let registry = service.directory.registry
        var void: [StoredPush] = []
        for stored in pending
        where awaiting[stored.apnsID] == nil && !waiting.contains(stored.apnsID)
            && !recentlyAcknowledged.contains(stored.apnsID)
        {
            guard registry.registration(stored.token, in: stored.environment)?.invalidatedAt == nil else {
                // The app was removed or the device reset since: the push has no one to go to.
                void.append(stored)
                continue
            }
            let ticket = LinkQoS.Ticket(
                id: takeTicket(), priority: stored.priority, topic: stored.topic,
                background: stored.pushType == .background)
            queued[ticket.id] = Entry(
                ticket: ticket.id, push: stored.linkPush, expiresAt: stored.expiresAt, origin: .stored)
            tickets.append(ticket)
        }
        if !void.isEmpty { service.offline.discard(void, device: device, at: service.clock.now()) }
        if tickets.isEmpty { return }
        apply(qos.submitBacklog(tickets, now: loop.now))
    }

    func acknowledge(_ ids: [String]) {
        guard let device = deviceID else { return }
        let at = service.clock.now()
        for id in ids {
            guard let entry = awaiting.removeValue(forKey: id) else { continue }
            acknowledged(entry, device: device, at: at)
            if !awaitingMore.isEmpty, let more = awaitingMore.removeValue(forKey: id) {
                for entry in more { acknowledged(entry, device: device, at: at) }
            }
        }
    }

    private func acknowledged(_ entry: Entry, device: String, at: Date) {
        let deliveredAt = entry.deliveredAt ?? at
        switch entry.origin {
        case .direct(let completion):
            completion(.acknowledged(deliveredAt: deliveredAt, acknowledgedAt: at))
        case .stored:
            recentlyAcknowledged.insert(entry.push.apnsID)
            service.offline.acknowledged(entry.push, device: device, deliveredAt: deliveredAt, acknowledgedAt: at)
        }
    }

    // MARK: Liveness

    /// Starts watching an authenticated link for silence.
    func startLiveness(_ context: ChannelHandlerContext) {
        guard let idle = service.configuration.idleTimeout, livenessTimer == nil else { return }
        lastHeard = context.eventLoop.now
        armLiveness(in: .nanoseconds(idle.nanoseconds / 2), context)
    }

    private func armLiveness(in delay: TimeAmount, _ context: ChannelHandlerContext) {
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        livenessTimer = context.eventLoop.scheduleTask(in: delay) { bound.value.checkLiveness() }
    }

    /// Half the idle time quiet: ping the device. All of it: the device is gone; close.
    func checkLiveness() {
        guard let context, let idle = service.configuration.idleTimeout, deviceID != nil else { return }
        let quiet = context.eventLoop.now - lastHeard
        if quiet >= idle {
            livenessTimer = nil
            service.log.closed(
                listener: DeviceLinkService.listener, peer: context.channel.remoteAddress,
                reason:
                    "device \(deviceID ?? "?") sent nothing, not even a pong, for \(idle.secondsText) (idle deadline)")
            close(context, code: 1001)
            return
        }
        if quiet >= .nanoseconds(idle.nanoseconds / 2) {
            if !pinged {
                pinged = true
                context.writeAndFlush(
                    wrapOutboundOut(
                        WebSocketFrame(fin: true, opcode: .ping, data: context.channel.allocator.buffer(capacity: 0))),
                    promise: nil)
            }
            armLiveness(in: idle - quiet, context)
        } else {
            armLiveness(in: .nanoseconds(idle.nanoseconds / 2) - quiet, context)
        }
    }

    // MARK: Notifications going down

    func offer(_ offer: LinkOffer, completion: @escaping @Sendable (LinkOutcome) -> Void) {
        guard deviceID != nil, let context else {
            completion(.notAcknowledged(deliveredAt: nil))
            return
        }
        let id = takeTicket()
        let entry = Entry(ticket: id, push: offer.push, expiresAt: offer.expiresAt, origin: .direct(completion))
        let now = service.clock.now()
        guard offer.expiresAt != nil else {
            // Expiration 0: one attempt, now, whatever the priority; it is never stored to wait.
            write(entry, at: now, context: context)
            scheduleFlush()
            return
        }
        let ticket = LinkQoS.Ticket(
            id: id, priority: offer.push.priority, topic: offer.push.topic, background: offer.background)
        let output = qos.submit(ticket, now: context.eventLoop.now)
        if output.send.count == 1, output.send[0] == id {
            // The usual case, sent at once and alone: it need not pass through `queued`.
            write(entry, at: now, context: context)
            scheduleFlush()
            scheduleWake(output.wakeAt)
            return
        }
        queued[id] = entry
        if !output.send.contains(id) {
            // It waits: the router stores it now, and its acknowledgement will remove it.
            queued[id]?.origin = .stored
            completion(.hold)
        }
        apply(output)
    }

    func apply(_ output: LinkQoS.Output) {
        write(output.send)
        scheduleWake(output.wakeAt)
    }

    func scheduleWake(_ at: NIODeadline?) {
        guard let context else { return }
        if let current = wakeTimer, let at, current.at == at { return }
        wakeTimer?.task.cancel()
        wakeTimer = nil
        guard let at else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let task = context.eventLoop.scheduleTask(deadline: at) {
            let handler = bound.value
            handler.wakeTimer = nil
            guard let loop = handler.context?.eventLoop else { return }
            handler.apply(handler.qos.wake(now: loop.now))
        }
        wakeTimer = (at, task)
    }

    /// Writes the queued notifications `tickets` to the device and starts waiting for their
    /// acknowledgements.
    func write(_ tickets: [Int]) {
        guard let context, !tickets.isEmpty else { return }
        let at = service.clock.now()
        for id in tickets {
            guard let entry = queued.removeValue(forKey: id) else { continue }
            write(entry, at: at, context: context)
        }
        scheduleFlush()
    }

    /// Writes one notification (without flushing) and starts waiting for its acknowledgement.
    private func write(_ entry: consuming Entry, at: Date, context: ChannelHandlerContext) {
        if let expiresAt = entry.expiresAt, expiresAt <= at {
            // Expired while it waited; the store's purge logs it.
            if case .direct(let completion) = entry.origin { completion(.notAcknowledged(deliveredAt: nil)) }
            return
        }
        let message = entry.push.encodedMessage()
        var buffer = context.channel.allocator.buffer(capacity: message.count)
        buffer.writeBytes(message)
        context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: buffer)), promise: nil)
        entry.deliveredAt = at
        if case .direct = entry.origin {
            deadlines.written(apnsID: entry.push.apnsID, ticket: entry.ticket, now: context.eventLoop.now)
            armDeadlineTimer()
        }
        if awaiting[entry.push.apnsID] == nil {
            awaiting[entry.push.apnsID] = entry
        } else {
            awaitingMore[entry.push.apnsID, default: []].append(entry)
        }
    }

    func armDeadlineTimer() {
        guard deadlineTimer == nil, let context, let next = deadlines.next else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        deadlineTimer = context.eventLoop.scheduleTask(deadline: next) {
            let handler = bound.value
            handler.deadlineTimer = nil
            handler.expireDeadlines()
        }
    }

    func expireDeadlines() {
        guard let context else { return }
        for due in deadlines.expired(now: context.eventLoop.now) {
            acknowledgementTimedOut(apnsID: due.apnsID, ticket: due.ticket)
        }
        armDeadlineTimer()
    }

    /// The device did not answer in time: the provider's answer cannot wait any longer, so the push
    /// is stored; a late acknowledgement still removes it.
    func acknowledgementTimedOut(apnsID: String, ticket: Int) {
        if let entry = awaiting[apnsID], entry.ticket == ticket {
            guard case .direct(let completion) = entry.origin else { return }
            awaiting[apnsID]?.origin = .stored
            completion(.notAcknowledged(deliveredAt: entry.deliveredAt))
            return
        }
        guard var more = awaitingMore[apnsID], let i = more.firstIndex(where: { $0.ticket == ticket }),
            case .direct(let completion) = more[i].origin
        else { return }
        more[i].origin = .stored
        awaitingMore[apnsID] = more
        completion(.notAcknowledged(deliveredAt: more[i].deliveredAt))
    }

    /// Flushes once per turn of the event loop, however many notifications were written in it.
    func scheduleFlush() {
        guard let context else { return }
        turnFlush.request(on: context.eventLoop) { [self] in self.context?.flush() }
    }

    func send(_ message: LinkMessage) {
        guard let context else { return }
        let bytes = message.encoded()
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: buffer)), promise: nil)
    }

    /// Sends an error and closes the connection (policy violation, 1008).
    func refuse(code: LinkErrorCode, message: String) {
        guard let context else { return }
        send(.error(request: nil, code: code, message: message))
        close(context, code: 1008)
    }

    /// The gateway is stopping (1001, going away).
    func goAway() {
        guard let context else { return }
        close(context, code: 1001)
    }

    private func close(_ context: ChannelHandlerContext, code: UInt16) {
        var data = context.channel.allocator.buffer(capacity: 2)
        data.writeInteger(code)
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, data: data)
        context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { [channel = context.channel] _ in
            channel.close(promise: nil)
        }
        closed()
    }

    /// The link is gone: providers still waiting learn that their pushes were not acknowledged
    /// (the router stores them); stored ones stay stored for the next connection.
    func closed() {
        if case .closed = phase { return }
        let device = deviceID
        phase = .closed
        wakeTimer?.task.cancel()
        wakeTimer = nil
        deadlineTimer?.cancel()
        deadlineTimer = nil
        livenessTimer?.cancel()
        livenessTimer = nil
        deadlines.removeAll()
        for (subscription, channels) in subscriptions {
            service.broadcasts?.unsubscribe(
                id: ObjectIdentifier(self), channels: Array(channels), environment: subscription.environment)
        }
        subscriptions = [:]
        if let device {
            service.links.detach(device, key: ObjectIdentifier(self))
            service.links.saw(device, at: service.clock.now())
        }
        var unfinished: [Entry] = qos.drain().compactMap { queued.removeValue(forKey: $0) }
        unfinished += queued.values
        unfinished += awaiting.values
        unfinished += awaitingMore.values.flatMap { $0 }
        queued = [:]
        awaiting = [:]
        awaitingMore = [:]
        for entry in unfinished {
            if case .direct(let completion) = entry.origin {
                completion(.notAcknowledged(deliveredAt: entry.deliveredAt))
            }
        }
        if let device { service.logger.info("device disconnected", metadata: ["device": "\(device)"]) }
    }

    private func takeTicket() -> Int {
        nextTicket += 1
        return nextTicket
    }
}

extension StoredPush {
    /// The stored push as it goes down the link.
    var linkPush: LinkPush {
        LinkPush(
            apnsID: apnsID, uniqueID: uniqueID, topic: topic, token: token, environment: environment,
            pushType: pushType, priority: priority, expiration: expiration, collapseID: collapseID, payload: payload)
    }
}

extension DeviceLinkHandler: DeviceConnection {}
