import Foundation
import HeraldCore
import HeraldNIO
import HeraldRuntime
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import X509

/// One binary-interface connection: reads notifications as a stream, hands each to the provider
/// API's logic and the router, and on the first refusal writes the error packet and closes,
/// processing nothing after it.
final class BinaryProviderHandler: ChannelDuplexHandler, IdleWatching {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let api: ProviderAPI
    let router: PushRouter
    let directory: GatewayDirectory
    let ca: GatewayCA
    let logger: Logger
    let clock: any WallClock
    var connection: ProviderConnectionState
    var buffer: ByteBuffer?
    /// Set once an error packet (or the shutdown packet) is written: nothing more is read.
    var finished = false
    var packetSent = false
    /// The provider ended its side (TLS close_notify): close once what it sent has been routed.
    var inputEnded = false
    var closing = false
    var lastProcessed: UInt32 = 0
    var inFlight = 0
    /// Reading stops while this many accepted notifications wait on the router.
    static let maximumInFlight = 4096
    var readPending = false
    var context: ChannelHandlerContext?
    /// Where answers to this connection's pushes come back from other loops, many to a task.
    var answers: LoopMailbox<LinkDelivery.Answer>?
    /// The idle deadline: nothing from the provider and nothing in flight.
    var idle: IdleWatch
    /// A frame begun must arrive whole within the first-bytes deadline.
    let frameDeadline: TimeAmount
    var frameTimer: Scheduled<Void>?
    let log: ListenerLog

    init(
        api: ProviderAPI, router: PushRouter, directory: GatewayDirectory, ca: GatewayCA, environment: APNsEnvironment,
        logger: Logger, timeouts: ListenerTimeouts = ListenerTimeouts(idle: nil), log: ListenerLog? = nil,
        clock: any WallClock
    ) {
        self.api = api
        self.router = router
        self.directory = directory
        self.ca = ca
        self.logger = logger
        self.clock = clock
        self.connection = ProviderConnectionState(defaultEnvironment: environment)
        self.idle = IdleWatch(timeout: timeouts.idle.map { TimeAmount($0) })
        self.frameDeadline = TimeAmount(timeouts.firstBytes)
        self.log = log ?? ListenerLog(logger: logger)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        answers = LinkDelivery.answerMailbox(on: context.eventLoop)
        startIdleWatch(context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idle.stop()
        frameTimer?.cancel()
        frameTimer = nil
        self.context = nil
    }

    /// Closes a connection quiet for the whole idle deadline with nothing in flight (the binary
    /// interface has no goodbye).
    func checkIdle() {
        guard let context, !finished, idle.quietLongEnough(at: context.eventLoop.now, busy: inFlight > 0) else {
            return
        }
        log.closed(
            listener: LegacyService.binary.rawValue, peer: context.channel.remoteAddress,
            reason: "nothing sent for the idle deadline")
        context.close(promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if idle.isWatching { idle.touch(at: context.eventLoop.now) }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent {
            context.triggerUserOutboundEvent(ConnectionEstablished(), promise: nil)
            connection.certificate = ProviderServer.grant(channel: context.channel, ca: ca, now: clock.now())
        } else if event is ProviderShutdownEvent {
            finish(.shutdown, identifier: lastProcessed, context: context)
            return
        } else if case .inputClosed = event as? ChannelEvent {
            inputEnded = true
            closeIfDrained()
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !finished else { return }
        var bytes = unwrapInboundIn(data)
        if buffer == nil {
            buffer = bytes
        } else {
            buffer!.writeBuffer(&bytes)
        }
        while !finished, let readable = buffer, readable.readableBytes > 0 {
            let result = readable.withUnsafeReadableBytes { LegacyBinary.parse($0) }
            switch result {
            case .needMoreBytes:
                buffer!.discardReadBytes()
                startFrameTimer(context)
                return
            case .failure(let status, let identifier):
                finish(status, identifier: identifier, context: context)
            case .notification(let notification, let consumed):
                // A frame arrived whole: the next one's deadline counts from its own first byte.
                frameTimer?.cancel()
                frameTimer = nil
                buffer!.moveReaderIndex(forwardBy: consumed)
                process(notification, context: context)
            }
        }
        buffer = nil
        frameTimer?.cancel()
        frameTimer = nil
    }

    private func startFrameTimer(_ context: ChannelHandlerContext) {
        guard frameTimer == nil else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        frameTimer = context.eventLoop.scheduleTask(in: frameDeadline) {
            let handler = bound.value
            handler.frameTimer = nil
            guard let context = handler.context, !handler.finished else { return }
            handler.log.closed(
                listener: LegacyService.binary.rawValue, peer: context.channel.remoteAddress,
                reason: "a frame did not arrive whole within \(handler.frameDeadline.secondsText) of its first byte")
            context.close(promise: nil)
        }
    }

    private func process(_ notification: LegacyBinary.Notification, context: ChannelHandlerContext) {
        let decision = api.handle(binary: notification, connection: &connection, now: clock.now())
        if case .respond(let response, _) = decision, response.connectionFault == .close {
            // A fault rule: the connection goes without an error frame.
            router.answered(response, after: .zero)
            context.close(promise: nil)
            return
        }
        if case .respond(let response, nil) = decision, response.status != 410 {
            router.answered(response, after: .zero)
            let status = LegacyBinary.Status(reason: response.reason ?? .internalServerError)
            // Shutdown names the last notification processed, and this one was not.
            finish(status, identifier: status == .shutdown ? lastProcessed : notification.identifier, context: context)
            return
        }
        lastProcessed = notification.identifier
        inFlight += 1
        let token = DeviceToken(bytes: notification.token)
        router.carryOut(decision, on: context.eventLoop, answers: answers) { [self] response in
            inFlight -= 1
            switch response.status {
            case 200:
                break
            case 410:
                // The binary interface does not report a removed app: the push is dropped and the
                // token is (again) on the feedback list, which is how such a provider learns of it.
                dropped(token, apnsID: response.apnsID, identifier: notification.identifier)
            default:
                if let context = self.context {
                    finish(
                        LegacyBinary.Status(reason: response.reason ?? .internalServerError),
                        identifier: notification.identifier, context: context)
                }
            }
            resumeReadingIfNeeded()
            closeIfDrained()
        }
    }

    private func dropped(_ token: DeviceToken, apnsID: String, identifier: UInt32) {
        let environment = connection.defaultEnvironment
        router.offline.log([
            DeliveryEvent(
                apnsID: apnsID, uniqueID: nil, kind: .discarded, at: clock.now(),
                detail:
                    "binary interface identifier \(identifier): the token is no longer valid (a removed app's token goes on the feedback list)"
            )
        ])
        guard let registration = directory.registry.registration(token, in: environment),
            registration.invalidation == .appRemoved, let removedAt = registration.invalidatedAt
        else { return }
        let directory = self.directory
        let logger = self.logger
        Task {
            do {
                try await directory.noteFailedDelivery(registration, removedAt: removedAt)
            } catch {
                logger.error("feedback list write failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Writes the error packet (once) and stops reading; the connection closes once what was
    /// accepted before it has been routed.
    private func finish(_ status: LegacyBinary.Status, identifier: UInt32, context: ChannelHandlerContext) {
        guard !finished else { return }
        finished = true
        buffer = nil
        if status != .shutdown {
            logger.info(
                "binary provider refused",
                metadata: ["status": "\(status.rawValue) \(status)", "identifier": "\(identifier)"])
        }
        let packet = context.channel.allocator.buffer(bytes: LegacyBinary.errorPacket(status, identifier: identifier))
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(packet)).whenComplete { _ in
            bound.value.packetSent = true
            bound.value.closeIfDrained()
        }
    }

    private func closeIfDrained() {
        guard finished ? packetSent : inputEnded, inFlight == 0, let context, !closing else { return }
        closing = true
        if inputEnded {
            context.close(promise: nil)
            return
        }
        // After an error packet the provider may still be writing. Closing the socket now would
        // answer its next bytes with a reset, which can destroy the packet before the provider reads
        // it. So end our side only (TLS close_notify) and go on reading, discarding, until the
        // provider closes too; after `linger`, close regardless.
        context.close(mode: .output, promise: nil)
        let channel = context.channel
        context.eventLoop.scheduleTask(in: Self.linger) { channel.close(promise: nil) }
    }

    /// How long a connection that was sent an error packet waits for the provider to close.
    static let linger = TimeAmount.seconds(10)

    // Back pressure: no new reads while many accepted notifications wait on the router.
    func read(context: ChannelHandlerContext) {
        if inFlight >= Self.maximumInFlight {
            readPending = true
            return
        }
        context.read()
    }

    private func resumeReadingIfNeeded() {
        guard readPending, inFlight < Self.maximumInFlight / 2, let context else { return }
        readPending = false
        context.read()
    }
}
