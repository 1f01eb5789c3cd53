import Foundation
import HeraldCore
import HeraldNIO
import HeraldRuntime
import NIOCore
import NIOPosix
import NIOWebSocket

/// One device's link, on its event loop: holds the channel and the link's timers, feeds every
/// event to the link's ``DeviceLinkStateMachine`` with the time, and carries out the actions it
/// returns (docs/device-link.md).
final class DeviceLinkHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    /// Nothing above the link writes; it is outbound only to hold back reads (``read(context:)``).
    typealias OutboundIn = Never
    typealias OutboundOut = WebSocketFrame
    typealias Action = DeviceLinkStateMachine.Action

    /// How many of the device's requests (its `register`s, `reset`s, `subscribe`s, its `hello`'s
    /// check) may be carried out off the loop at once; past that the link reads nothing more until
    /// one is done, so a device that asks faster than the store answers waits in its own socket,
    /// not in the gateway's tasks.
    static let requestsInFlight = 8

    let service: DeviceLinkService
    var machine: DeviceLinkStateMachine
    var context: ChannelHandlerContext?
    /// The timers of the links on this one's loop (``LoopTimers``), once added.
    private var timers: LoopTimers?
    var wakeTimer: LoopTimers.Timer?
    var deadlineTimer: LoopTimers.Timer?
    var livenessTimer: LoopTimers.Timer?
    var authenticationTimer: LoopTimers.Timer?
    let turnFlush = LoopTurnFlush()
    /// The WebSocket frame encoder's context, when the pipeline has one: a `push` is written there
    /// already framed (``textFrame(_:allocator:)``), so that it passes no `WebSocketFrame` (a
    /// storage allocated for each) and no separate header buffer (which the encoder copies anew for
    /// each frame written before a flush). Everything else goes through the encoder; all writes run
    /// on the loop in order, so they reach the socket in the order written.
    private var framedWrites: ChannelHandlerContext?
    /// The `push` messages written since the last flush, framed, in one buffer: it goes to the
    /// channel as one write at the flush (or before anything else is written), not a buffer and a
    /// write for each push.
    private var framedPushes: ByteBuffer?
    /// The array ``offer(_:waiter:)`` gathers a push's actions in, kept between pushes.
    private var offerActions: [Action] = []

    /// The device's requests being carried out off the loop: never more than ``requestsInFlight``.
    private(set) var working = 0
    /// Frames that arrived while ``working`` was at the limit (what the socket read before the link
    /// stopped reading), and every frame after them, in order: carried out as requests finish.
    private(set) var heldFrames = CircularBuffer<WebSocketFrame>()
    /// A read asked for while frames were held or ``working`` was at the limit, made once they are
    /// carried out and a request is done.
    private var readHeld = false

    /// A device resumed in its upgrade request, accepted: welcomed as the link is added, with no
    /// challenge.
    private var resumed: DeviceLinkService.Authenticated?

    /// A link that greets the device with a challenge, or, when the device `resumed` in its upgrade
    /// request, with its `welcome`.
    init(service: DeviceLinkService, resumed: DeviceLinkService.Authenticated? = nil) {
        self.service = service
        self.resumed = resumed
        self.machine = DeviceLinkStateMachine(
            configuration: service.configuration, broadcasts: service.broadcasts != nil,
            nonce: resumed == nil ? DeviceLinkStateMachine.randomNonce() : Data())
    }

    /// The event loop's time (for deadlines) and the wall clock's (for records).
    private var now: NIODeadline { context?.eventLoop.now ?? .now() }
    private var at: Date { service.clock.now() }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        timers = service.timers.value(on: context.eventLoop)
        framedWrites = try? context.pipeline.syncOperations.context(handlerType: WebSocketFrameEncoder.self)
        if let resumed {
            self.resumed = nil
            run(machine.resumedInUpgrade(resumed, now: now, at: at))
        } else {
            run(machine.added())
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        run(machine.closed(at: at))
        self.context = nil
        framedWrites = nil
        framedPushes = nil
        heldFrames.removeAll()
    }

    func channelInactive(context: ChannelHandlerContext) {
        run(machine.closed(at: at))
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        // At the limit, what one read brought waits (the link reads no more meanwhile): one
        // socket read can hold thousands of small requests.
        guard working < Self.requestsInFlight, heldFrames.isEmpty else {
            heldFrames.append(frame)
            return
        }
        run(machine.received(frame, now: context.eventLoop.now, at: at))
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        run(machine.writabilityChanged(isWritable: context.channel.isWritable, now: now, at: at))
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        if working >= Self.requestsInFlight || !heldFrames.isEmpty {
            readHeld = true
        } else {
            context.read()
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        service.logger.debug("device link error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    // MARK: Running the machine's actions

    func run(_ actions: [Action]) {
        for (index, action) in actions.enumerated() {
            // A message right before the close frame (a `goaway`, an `error`) leaves in the close
            // frame's flush: one write to the socket, not two. A stopping gateway does this for
            // every link at once.
            if case .send(let message) = action, index + 1 < actions.count, actions[index + 1].isClose {
                writeText(message.encoded(), flush: false)
            } else {
                run(action)
            }
        }
    }

    func run(_ action: Action) {
        switch action {
        case .answer(let completion, let outcome): completion.call(outcome)
        case .send(let message): send(message)
        case .write(let push):
            let scratch = PushScratch.current
            scratch.writer.clear()
            push.writeMessage(to: &scratch.writer)
            if framedWrites != nil, let context {
                if framedPushes == nil {
                    framedPushes = context.channel.allocator.buffer(
                        capacity: max(Self.framedPushesCapacity, scratch.writer.bytes.count + 10))
                }
                Self.appendTextFrame(scratch.writer.bytes, to: &framedPushes!)
            } else {
                writeText(scratch.writer.bytes, flush: false)
            }
        case .writeFrame(let frame):
            writeFramedPushes()
            context?.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: frame)), promise: nil)
        case .flush:
            guard let context else { return }
            turnFlush.request(on: context.eventLoop) { [self] in
                writeFramedPushes()
                self.context?.flush()
            }
        case .ping:
            guard let context else { return }
            writeFramedPushes()
            let empty = context.channel.allocator.buffer(capacity: 0)
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .ping, data: empty)), promise: nil)
        case .pong(let data):
            writeFramedPushes()
            var pong = WebSocketFrame(fin: true, opcode: .pong, data: data)
            pong.maskKey = nil
            context?.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .echoClose(let code): close(with: code)
        case .close(let code):
            guard let context else { return }
            var data = context.channel.allocator.buffer(capacity: 2)
            data.writeInteger(code)
            close(with: data)
        case .connectionEstablished: context?.triggerUserOutboundEvent(ConnectionEstablished(), promise: nil)
        case .scheduleWake, .cancelWake, .scheduleDeadline, .scheduleLiveness, .scheduleAuthenticationDeadline,
            .cancelAuthenticationDeadline, .cancelTimers:
            runTimer(action)
        case .authenticate, .perform, .subscribe, .readBacklog: runWork(action)
        case .resume(let device, let ticket, let proof, let nonce):
            let result = service.resume(device: device, ticket: ticket, proof: proof, nonce: nonce)
            run(machine.resumed(result, nonce: nonce, now: now, at: at))
        case .unsubscribe(let channels, let environment):
            service.broadcasts?.unsubscribe(id: ObjectIdentifier(self), channels: channels, environment: environment)
        case .attach(let device, let at): attach(device, at: at)
        case .detach(let device, let at):
            service.links.detach(device, key: ObjectIdentifier(self))
            service.links.saw(device, at: at)
        case .recordAcknowledged(let push, let device, let deliveredAt, let acknowledgedAt):
            service.offline.acknowledged(push, device: device, deliveredAt: deliveredAt, acknowledgedAt: acknowledgedAt)
        case .recordRefused(let apnsID, let device, let reason, let at, let refusal):
            service.offline.refused(apnsID, device: device, reason: reason, at: at, refusal: refusal)
        case .discard(let pushes, let device, let at): service.offline.discard(pushes, device: device, at: at)
        case .logRefused(let code, let message):
            service.logger.notice("device refused", metadata: ["code": "\(code)", "reason": "\(message)"])
        case .logClosed(let reason):
            service.log.closed(
                listener: DeviceLinkService.listener, peer: context?.channel.remoteAddress, reason: reason)
        case .logDisconnected(let device): service.logger.info("device disconnected", metadata: ["device": "\(device)"])
        case .logBackedUp(let device):
            service.offline.metrics.linkBackedUp()
            service.logger.notice(
                "device link backed up: the device is not reading; pushes go to the store until it catches up",
                metadata: ["device": "\(device)"])
        case .logCaughtUp(let device, let left, let broadcasts):
            service.offline.metrics.linkCaughtUp(broadcastsNotSent: broadcasts)
            service.logger.notice(
                "device link caught up",
                metadata: [
                    "device": "\(device)", "pushes-left-to-store": "\(left)", "broadcasts-not-sent": "\(broadcasts)",
                ])
        }
    }

    /// A final, unmasked text frame (RFC 6455, section 5.2: what a server sends) of `payload`,
    /// header and payload in one buffer: as NIO's `WebSocketFrameEncoder` writes it.
    static func textFrame(_ payload: [UInt8], allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: payload.count + 10)
        appendTextFrame(payload, to: &buffer)
        return buffer
    }

    /// How much room a turn's framed pushes start with (it grows if they need more).
    static let framedPushesCapacity = 8192

    /// Appends ``textFrame(_:allocator:)``'s frame of `payload` to `buffer`.
    static func appendTextFrame(_ payload: [UInt8], to buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(0x81))  // FIN, text
        if payload.count < 126 {
            buffer.writeInteger(UInt8(payload.count))
        } else if payload.count <= Int(UInt16.max) {
            buffer.writeInteger(UInt8(126))
            buffer.writeInteger(UInt16(payload.count))
        } else {
            buffer.writeInteger(UInt8(127))
            buffer.writeInteger(UInt64(payload.count))
        }
        buffer.writeBytes(payload)
    }

    /// Writes the framed pushes waiting for the flush, if any: before anything else is written, so
    /// that everything reaches the socket in the order written.
    private func writeFramedPushes() {
        guard let pushes = framedPushes else { return }
        framedPushes = nil
        framedWrites?.write(NIOAny(pushes), promise: nil)
    }

    private func writeText(_ bytes: some Collection<UInt8>, flush: Bool) {
        guard let context else { return }
        writeFramedPushes()
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        let frame = wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: buffer))
        if flush { context.writeAndFlush(frame, promise: nil) } else { context.write(frame, promise: nil) }
    }

    /// Writes a close frame, then closes the connection. A link that is backed up closes at once:
    /// its device is not reading, so the frame would wait behind what it has not read for as long
    /// as it does not read, and the connection with it.
    private func close(with data: ByteBuffer) {
        guard let context else { return }
        writeFramedPushes()
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, data: data)
        guard context.channel.isWritable else {
            context.close(promise: nil)
            return
        }
        context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { [channel = context.channel] _ in
            channel.close(promise: nil)
        }
    }

    /// The device is connected here: the registry learns it, and its other link is closed.
    private func attach(_ device: String, at: Date) {
        guard let context else { return }
        let handle = DeviceLinks.Handle(
            loop: context.eventLoop, handler: NIOLoopBound<any DeviceConnection>(self, eventLoop: context.eventLoop),
            key: ObjectIdentifier(self), offers: service.links.offerMailbox(on: context.eventLoop))
        service.links.saw(device, at: at)
        if let replaced = service.links.attach(device, handle) {
            replaced.loop.execute {
                replaced.handler.value.refuse(code: .replaced, message: "the device connected again")
            }
        }
        service.logger.info("device connected", metadata: ["device": "\(device)"])
    }

    private func runTimer(_ action: Action) {
        guard context != nil, let timers else { return }
        switch action {
        case .scheduleWake(let deadline):
            if let wakeTimer { timers.cancel(wakeTimer) }
            wakeTimer = timers.schedule(at: deadline) { [self] in
                wakeTimer = nil
                run(machine.wakeFired(now: now, at: at))
            }
        case .cancelWake:
            if let wakeTimer { timers.cancel(wakeTimer) }
            wakeTimer = nil
        case .scheduleDeadline(let deadline):
            deadlineTimer = timers.schedule(at: deadline) { [self] in
                deadlineTimer = nil
                run(machine.deadlineFired(now: now))
            }
        case .scheduleLiveness(let delay):
            livenessTimer = timers.schedule(in: delay) { [self] in
                run(machine.livenessFired(now: now, at: at))
            }
        case .scheduleAuthenticationDeadline(let deadline):
            authenticationTimer = timers.schedule(at: deadline) { [self] in
                authenticationTimer = nil
                run(machine.authenticationDeadlineFired(at: at))
            }
        case .cancelAuthenticationDeadline:
            if let authenticationTimer { timers.cancel(authenticationTimer) }
            authenticationTimer = nil
        default:
            for timer in [wakeTimer, deadlineTimer, livenessTimer, authenticationTimer] {
                if let timer { timers.cancel(timer) }
            }
            (wakeTimer, deadlineTimer, livenessTimer, authenticationTimer) = (nil, nil, nil, nil)
        }
    }

    /// Starts work off the event loop; its result comes back to the machine on the loop.
    private func runWork(_ action: Action) {
        let service = self.service
        switch action {
        case .authenticate(let device, let publicKey, let signature, let nonce):
            later({
                await service.authenticate(device: device, publicKey: publicKey, signature: signature, nonce: nonce)
            }) {
                $0.run($0.machine.authenticated($1, now: $0.now, at: $0.at))
            }
        case .perform(let message, let device):
            later({ await service.perform(message, device: device) }) { $0.send($1) }
        case .subscribe(let request, let subscription, let channels, let at):
            guard let context else { return }
            let subscriber = BroadcastHub.Subscriber(
                loop: context.eventLoop,
                connection: NIOLoopBound<any DeviceConnection>(self, eventLoop: context.eventLoop))
            let id = ObjectIdentifier(self)
            later({
                await service.subscribe(
                    subscriber, id: id, topic: subscription.topic, environment: subscription.environment,
                    channels: channels, now: at)
            }) { $0.run($0.machine.subscribed(request: request, subscription, channels: channels, $1)) }
        case .readBacklog(let device):
            guard let context else { return }
            // Asked after the attach: a push stored after this answer is offered to this link.
            guard case .read(let mark) = service.storedDevices.check(device) else {
                run(machine.backlogRead([], now: now, at: at, isRegistered: service.isRegistered))
                return
            }
            let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
            let loop = context.eventLoop
            // No task of its own: the reader reads for many devices at once.
            service.backlogs.read(device: device, on: loop) { stored in
                // Not after a failed read: the device may well have something stored.
                if stored?.isEmpty == true { service.storedDevices.readNothing(device, mark: mark) }
                loop.execute {
                    let handler = bound.value
                    handler.run(
                        handler.machine.backlogRead(
                            stored ?? [], now: handler.now, at: handler.at, isRegistered: service.isRegistered))
                }
            }
        default:
            break
        }
    }

    /// Runs `work` in a task, then `then` with its result on this link's event loop.
    private func later<T: Sendable>(
        _ work: @escaping @Sendable () async -> T, then: @escaping (DeviceLinkHandler, T) -> Void
    ) {
        guard let context else { return }
        let bound = NIOLoopBound((self, then), eventLoop: context.eventLoop)
        let loop = context.eventLoop
        working += 1
        Task {
            let result = await work()
            loop.execute {
                let (handler, then) = bound.value
                handler.working -= 1
                then(handler, result)
                handler.releaseHeldRead()
            }
        }
    }

    /// Now that a request is done: carries out the frames that waited, as far as the limit allows,
    /// then makes the read held back once none waits.
    private func releaseHeldRead() {
        while working < Self.requestsInFlight, let context, let frame = heldFrames.popFirst() {
            run(machine.received(frame, now: context.eventLoop.now, at: at))
        }
        guard readHeld, working < Self.requestsInFlight, heldFrames.isEmpty, let context else { return }
        readHeld = false
        context.read()
    }
}

extension DeviceLinkHandler: DeviceConnection {
    func offer(_ offer: LinkOffer, waiter: any LinkWaiter) {
        // The handler's own array, emptied and kept: a push allocates none for its actions. (An
        // offer made while these actions run, on the same loop, gets a new one.)
        var actions: [Action] = []
        swap(&actions, &offerActions)
        machine.offer(offer, waiter: waiter, now: now, at: at, into: &actions)
        run(actions)
        actions.removeAll(keepingCapacity: true)
        offerActions = actions
    }

    func offerStored(_ pushes: [StoredPush]) {
        run(machine.offerStored(pushes, now: now, at: at, isRegistered: service.isRegistered))
    }

    func send(_ message: LinkMessage) { writeText(message.encoded(), flush: true) }

    func send(frame: ByteBuffer) { run(machine.broadcastFrame(frame)) }

    func refuse(code: LinkErrorCode, message: String) {
        guard context != nil else { return }
        run(machine.refuse(code: code, message: message, at: at))
    }

    func goAway() {
        guard context != nil else { return }
        run(machine.goAway(at: at))
    }
}

/// The writer a thread's device links write their `push` messages with: one for all the links on
/// an event loop, so that a push costs no allocation for its text (a writer per link would hold
/// its capacity for every connected device). Only its own thread touches it.
final class PushScratch: @unchecked Sendable {
    var writer = JSONWriter(capacity: 1024)
    private static let perThread = ThreadSpecificVariable<PushScratch>()

    /// This thread's.
    static var current: PushScratch {
        if let scratch = perThread.currentValue { return scratch }
        let scratch = PushScratch()
        perThread.currentValue = scratch
        return scratch
    }
}
