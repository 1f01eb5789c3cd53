import Foundation
import HeraldCore
import HeraldRuntime
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import X509

/// One feedback connection: once the handshake names the certificate's topic, writes every
/// feedback tuple of that topic in the connection's environment (the list is emptied by reading)
/// and closes.
final class FeedbackHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let feedback: any PushStore
    let ca: GatewayCA
    let environment: APNsEnvironment
    let logger: Logger
    let clock: any WallClock

    init(
        feedback: any PushStore, ca: GatewayCA, environment: APNsEnvironment, logger: Logger,
        clock: any WallClock
    ) {
        self.feedback = feedback
        self.ca = ca
        self.environment = environment
        self.logger = logger
        self.clock = clock
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}  // a provider has nothing to say here

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard case .handshakeCompleted = event as? TLSUserEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        context.triggerUserOutboundEvent(ConnectionEstablished(), promise: nil)
        guard let grant = ProviderServer.grant(channel: context.channel, ca: ca, now: clock.now()), grant.problem == nil
        else {
            context.close(promise: nil)
            return
        }
        let feedback = self.feedback
        let environment = self.environment
        let logger = self.logger
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let loop = context.eventLoop
        Task {
            var bytes: [UInt8] = []
            do {
                let entries = try await feedback.takeFeedback(bundleID: grant.bundleID, environment: environment)
                for entry in entries {
                    let seconds = UInt32(clamping: Int64(entry.removedAt.timeIntervalSince1970.rounded(.down)))
                    bytes += LegacyBinary.FeedbackTuple(time: seconds, token: entry.token.bytes).encoded()
                }
                logger.info(
                    "feedback read",
                    metadata: [
                        "topic": "\(grant.bundleID)", "environment": "\(environment)", "tuples": "\(entries.count)",
                    ])
            } catch {
                logger.error("feedback read failed", metadata: ["error": "\(error)"])
            }
            let answer = bytes
            loop.execute {
                let context = bound.value
                context.writeAndFlush(NIOAny(context.channel.allocator.buffer(bytes: answer))).whenComplete { _ in
                    bound.value.close(promise: nil)
                }
            }
        }
    }
}
