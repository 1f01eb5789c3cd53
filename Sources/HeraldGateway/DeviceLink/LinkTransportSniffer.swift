import Crypto
import Foundation
import HeraldCore
import HeraldNIO
import HeraldRuntime
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// Looks at the first byte: a TLS handshake (0x16) gets TLS; cleartext is served only to loopback
/// peers. Then the first bytes of HTTP are checked (``ProtocolSniffer``: HTTP/1.1 only; an HTTP/2
/// preface or bytes that are no request line are closed with a logged reason) and the link's
/// opening handshake (``LinkHandshakeHandler``) is set up.
final class LinkTransportSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    static var listener: String { DeviceLinkService.listener }
    let service: DeviceLinkService
    let tls: NIOSSLContext?

    init(service: DeviceLinkService, tls: NIOSSLContext?) {
        self.service = service
        self.tls = tls
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        guard let first = bytes.readableBytesView.first else { return }
        let sync = context.pipeline.syncOperations
        do {
            if first == 0x16 {
                guard let tls else { throw Refused.tlsNotConfigured }
                try sync.addHandler(NIOSSLServerHandler(context: tls))
                // One TLS record per flush rather than per notification.
                try sync.addHandler(WriteCoalescingHandler())
            } else if !Self.isLoopback(context.channel.remoteAddress) {
                throw Refused.cleartextFromNetwork
            }
            let service = self.service
            try sync.addHandler(
                ProtocolSniffer(
                    listener: Self.listener, log: service.log,
                    http1: { try LinkHandshakeHandler.configure($0, service: service) }, http2: nil))
        } catch {
            service.log.closed(listener: Self.listener, peer: context.channel.remoteAddress, reason: "\(error)")
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
        sync.removeHandler(self, promise: nil)
    }

    enum Refused: Error, CustomStringConvertible {
        case tlsNotConfigured, cleartextFromNetwork
        var description: String {
            switch self {
            case .tlsNotConfigured: "a TLS handshake, but this listener has no TLS"
            case .cleartextFromNetwork: "cleartext from a network address (only loopback may skip TLS)"
            }
        }
    }

    static func isLoopback(_ address: SocketAddress?) -> Bool {
        guard let ip = address?.ipAddress else { return false }
        return Loopback.contains(ip)
    }
}
