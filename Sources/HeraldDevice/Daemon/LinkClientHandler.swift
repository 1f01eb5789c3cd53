import Crypto
import Foundation
import HeraldCore
import HeraldRuntime
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// The client's handler, on the connection's event loop.
final class LinkClientHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    struct Welcome: Sendable {
        var device: String
        var generation: Int
        var registrations: [LinkRegistration]
    }

    let identity: DeviceIdentity
    let autoAcknowledge: Bool
    let welcome: EventLoopPromise<Welcome>
    let events: AsyncStream<GatewayLinkEvent>.Continuation
    var context: ChannelHandlerContext?
    var nextRequest = 0
    var pending: [Int: EventLoopPromise<LinkMessage>] = [:]
    /// Each pending request's deadline (``Liveness/answer``): a gateway that keeps its link alive
    /// but answers no request would otherwise keep the request's caller waiting for ever.
    private var deadlines: [Int: LoopTimers.Timer] = [:]
    var toAcknowledge: [String] = []
    /// Broadcasts already handed over, by `apns-unique-id`.
    var seenBroadcasts = RecentIDs(capacity: 1024)
    /// Notifications read in this read cycle, handed over together at its end.
    var arrived: [LinkPush] = []
    /// `apns-id`s already seen: the newest `seenLimit` at least, in two generations. New ones go
    /// into `seen`; when it holds `seenLimit`, it becomes `seenBefore` and the generation before
    /// that is forgotten whole. So no id is removed on its own (a set removes by hashing again
    /// the ids that follow it), and an id is forgotten after between `seenLimit` and twice as
    /// many newer ones.
    var seen: Set<SeenID> = []
    var seenBefore: Set<SeenID> = []
    let seenLimit: Int
    var closeReason: String?
    /// The challenge's nonce, kept until the gateway welcomes the device: signed if the ticket
    /// presented for it is refused.
    var nonce: Data?

    /// How the link notices a gateway gone without a word: a half-open connection after the
    /// network changed, or a machine that stopped, sends nothing, and TCP alone would wait for
    /// ever. Once the link has read nothing for `quiet` (checked every `quiet`, so between one and
    /// two of them) the device pings; if nothing at all arrives within `answer`, it closes the link,
    /// and the daemon connects again. The gateway answers every ping, and hears it as the device
    /// being there.
    struct Liveness: Sendable {
        var quiet: TimeAmount = .seconds(120)
        var answer: TimeAmount = .seconds(30)
    }

    /// The links' liveness timers, one heap per event loop.
    static let timers = PerLoop { LoopTimers(loop: $0) }
    let liveness: Liveness
    private var livenessTimer: LoopTimers.Timer?
    /// Whether anything was read since the liveness timer last fired.
    private var heard = false
    /// Whether the device pinged and waits for anything from the gateway.
    private var pinged = false

    init(
        identity: DeviceIdentity, autoAcknowledge: Bool, welcome: EventLoopPromise<Welcome>,
        events: AsyncStream<GatewayLinkEvent>.Continuation, seenLimit: Int = 100_000,
        liveness: Liveness = Liveness()
    ) {
        self.liveness = liveness
        self.seenLimit = max(1, seenLimit)
        self.identity = identity
        self.autoAcknowledge = autoAcknowledge
        self.welcome = welcome
        self.events = events
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) { stopLiveness(context) }

    func channelInactive(context: ChannelHandlerContext) {
        stopLiveness(context)
        let failure = GatewayLinkFailure(code: .closed, message: closeReason ?? "the link closed")
        for (_, promise) in pending { promise.fail(failure) }
        pending = [:]
        let timers = Self.timers.value(on: context.eventLoop)
        for (_, timer) in deadlines { timers.cancel(timer) }
        deadlines = [:]
        welcome.fail(failure)
        handOver()
        events.yield(.closed(reason: closeReason))
        events.finish()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        heard = true
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary:
            let read = frame.unmaskedData.withUnsafeReadableBytes { bytes in try? LinkMessage(json: bytes) }
            guard let message = read else { return }
            receive(message)
        case .ping:
            write(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData), flush: true)
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        handOver()
        if !toAcknowledge.isEmpty {
            send(.ack(toAcknowledge))
            toAcknowledge = []
        }
        context.fireChannelReadComplete()
    }

    func receive(_ message: LinkMessage) {
        switch message {
        case .challenge(let nonce):
            self.nonce = nonce
            if let device = identity.deviceID, let ticket = identity.resumption.current(now: Date()) {
                let proof = DeviceLink.resumeProof(secret: ticket.secret, nonce: nonce)
                send(.resume(device: device, ticket: ticket.ticket, proof: proof))
            } else {
                sendHello(nonce: nonce)
            }
        case .error(nil, .ticketRefused, _):
            // The ticket is void (expired, the device reset, another gateway): forget it and sign
            // instead, on the same connection.
            identity.resumption.keep(nil)
            if let nonce { sendHello(nonce: nonce) }
        case .welcome(let device, let generation, let registrations, let ticket):
            nonce = nil
            identity.resumption.keep(ticket)
            // The handshake's deadline is over (``GatewayLinkClient``); the link's liveness begins.
            context?.triggerUserOutboundEvent(ConnectionEstablished(), promise: nil)
            startLiveness()
            welcome.succeed(Welcome(device: device, generation: generation, registrations: registrations))
        case .push(let push):
            if autoAcknowledge { toAcknowledge.append(push.apnsID) }
            let id = SeenID(push.apnsID)
            guard !seenBefore.contains(id), seen.insert(id).inserted else { return }
            if seen.count >= seenLimit {
                // The new generation starts in the storage of the one forgotten.
                swap(&seen, &seenBefore)
                seen.removeAll(keepingCapacity: true)
            }
            arrived.append(push)
        case .token(let request?, _), .unregistered(let request?, _, _), .error(let request?, _, _),
            .subscribed(let request?, _, _, _):
            answered(request)?.succeed(message)
        case .broadcast(let broadcast):
            guard !seenBroadcasts.contains(broadcast.uniqueID) else { return }
            seenBroadcasts.insert(broadcast.uniqueID)
            // After the notifications read before it, in the order they came.
            handOver()
            events.yield(.broadcast(broadcast))
        case .reset(let request, let generation):
            // The ticket names the old generation: the gateway would refuse it.
            identity.resumption.keep(nil)
            if let request { answered(request)?.succeed(message) }
            handOver()
            events.yield(.reset(generation: generation))
        case .goAway(let within):
            handOver()
            events.yield(.goAway(reconnectWithin: .milliseconds(within)))
        case .error(nil, let code, let text):
            closeReason = "\(code): \(text)"
            welcome.fail(GatewayLinkFailure(code: code, message: text))
        default:
            break
        }
    }

    /// The promise of answered request `request`, its deadline stopped.
    private func answered(_ request: Int) -> EventLoopPromise<LinkMessage>? {
        if let timer = deadlines.removeValue(forKey: request), let context {
            Self.timers.value(on: context.eventLoop).cancel(timer)
        }
        return pending.removeValue(forKey: request)
    }

    // MARK: Liveness

    private func startLiveness() {
        guard livenessTimer == nil, let context else { return }
        heard = false
        pinged = false
        arm(liveness.quiet, on: context.eventLoop)
    }

    private func arm(_ delay: TimeAmount, on loop: any EventLoop) {
        livenessTimer = Self.timers.value(on: loop).schedule(in: delay) { [self] in livenessFired() }
    }

    private func stopLiveness(_ context: ChannelHandlerContext) {
        guard let timer = livenessTimer else { return }
        livenessTimer = nil
        Self.timers.value(on: context.eventLoop).cancel(timer)
    }

    private func livenessFired() {
        livenessTimer = nil
        guard let context, context.channel.isActive else { return }
        if heard {
            heard = false
            pinged = false
            arm(liveness.quiet, on: context.eventLoop)
        } else if !pinged {
            pinged = true
            write(
                WebSocketFrame(fin: true, opcode: .ping, data: context.channel.allocator.buffer(capacity: 0)),
                flush: true)
            arm(liveness.answer, on: context.eventLoop)
        } else {
            closeReason =
                "the gateway sent nothing for \(liveness.quiet.secondsText) and answered no ping within \(liveness.answer.secondsText)"
            context.close(promise: nil)
        }
    }

    /// Authenticates with a signature over the challenge.
    func sendHello(nonce: Data) {
        let signature =
            (try? identity.privateKey.signature(for: DeviceLink.signedBytes(nonce: nonce)))?
            .rawRepresentation ?? Data()
        let publicKey = identity.privateKey.publicKey.x963Representation
        send(.hello(device: identity.deviceID, publicKey: publicKey, signature: signature))
    }

    /// Yields the notifications read so far as one event.
    func handOver() {
        if arrived.isEmpty { return }
        events.yield(.pushes(arrived))
        arrived = []
    }

    func request(_ make: (Int) -> LinkMessage, promise: EventLoopPromise<LinkMessage>) {
        // A link that closed before the request got here never answers: fail it now rather than
        // leave it waiting for ever.
        guard let context, context.channel.isActive else {
            promise.fail(GatewayLinkFailure(code: .closed, message: closeReason ?? "the link closed"))
            return
        }
        nextRequest += 1
        pending[nextRequest] = promise
        let request = nextRequest
        deadlines[request] = Self.timers.value(on: context.eventLoop).schedule(in: liveness.answer) { [self] in
            deadlines[request] = nil
            guard let promise = pending.removeValue(forKey: request), let context = self.context else { return }
            closeReason = "the gateway answered no request within \(liveness.answer.secondsText)"
            promise.fail(GatewayLinkFailure(code: .closed, message: closeReason ?? ""))
            // A gateway that answers nothing is no use: the daemon connects again.
            context.close(promise: nil)
        }
        send(make(nextRequest))
    }

    func send(_ message: LinkMessage) {
        guard let context else { return }
        let bytes = message.encoded()
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        write(WebSocketFrame(fin: true, opcode: .text, data: buffer), flush: true)
    }

    private func write(_ frame: WebSocketFrame, flush: Bool) {
        guard let context else { return }
        var frame = frame
        // A client masks every frame (RFC 6455 §5.3), with a key from the pooled generator (NIO's
        // `.random()` is a system call a frame).
        frame.maskKey = WebSocketMaskingKey(RandomUUID.bytes(4))
        if flush {
            context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
        } else {
            context.write(wrapOutboundOut(frame), promise: nil)
        }
    }
}

/// An `apns-id` as the duplicate check keeps it: a lowercase UUID (what the gateway generates and
/// most providers send) as its 128 bits, compared and hashed in place, any other text as itself,
/// so two identifiers are the same exactly when their text is. The check holds up to 100,000 of them
/// and runs for every notification; text would mean a heap string per entry and a pointer chase
/// per comparison.
enum SeenID: Hashable {
    case uuid(UInt64, UInt64)
    case text(String)

    init(_ apnsID: String) {
        var text = apnsID
        if let (high, low) = text.withUTF8(Self.uuidBits) {
            self = .uuid(high, low)
        } else {
            self = .text(apnsID)
        }
    }

    /// The 128 bits of a lowercase UUID's text, or `nil` for any other text.
    private static func uuidBits(_ utf8: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt64)? {
        guard utf8.count == 36 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for i in 0..<36 {
            let c = utf8[i]
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard c == UInt8(ascii: "-") else { return nil }
                continue
            }
            let value: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = c - UInt8(ascii: "a") + 10
            default: return nil
            }
            if i < 19 {
                high = high << 4 | UInt64(value)
            } else {
                low = low << 4 | UInt64(value)
            }
        }
        return (high, low)
    }
}
