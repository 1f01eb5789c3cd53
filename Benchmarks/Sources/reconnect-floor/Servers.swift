import CFloor
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

import Glibc

// The servers of the floor. Each accepts a connection with the gateway's socket options
// (TCP_NODELAY, SO_KEEPALIVE, set on the listening socket, whose connections inherit them, as the
// gateway does), reads the upgrade request, writes the `101` and the welcome-sized frame in one
// write, and holds the connection until the peer closes it.

/// The kernel's floor: one thread, epoll, and the system calls a reconnection needs; no framework.
func serveEpoll(host: String, port: Int) -> Never {
    let listener = listeningSocket(host: host, port: port)
    let epoll = Epoll()
    epoll.add(listener, epollIn)
    ready()
    var events = [epoll_event](repeating: epoll_event(), count: 512)
    var buffer = [UInt8](repeating: 0, count: 16_384)
    var partial: [Int32: [UInt8]] = [:]
    var answered = Set<Int32>()
    while true {
        let count = epoll.wait(into: &events)
        for event in events[0..<count] {
            let fd = event.data.fd
            if fd == listener {
                while true {
                    let connection = cfloor_accept(listener)
                    if connection < 0 { break }
                    epoll.add(connection, epollIn | UInt32(EPOLLRDHUP.rawValue))
                }
                continue
            }
            let read = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if read <= 0 {
                if read == 0 || (errno != EAGAIN && errno != EINTR) {
                    partial[fd] = nil
                    answered.remove(fd)
                    close(fd)
                }
                continue
            }
            guard !answered.contains(fd) else { continue }
            var bytes = partial.removeValue(forKey: fd) ?? []
            bytes += buffer[0..<read]
            let answer: [UInt8]? = bytes.withUnsafeBytes { head in
                guard Wire.endOfHead(head) != nil else { return nil }
                return Wire.answer(key: Wire.key(inHead: head) ?? "")
            }
            guard let answer else {
                partial[fd] = bytes
                continue
            }
            answered.insert(fd)
            _ = answer.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        }
    }
}

/// NIO's floor: as many event loops as the gateway gives its device links by default (half the
/// cores, at least one: `Gateway.Configuration.linkThreads`), and one handler that answers.
func serveNIO(host: String, port: Int, http: Bool) throws -> Never {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, System.coreCount / 2))
    let bootstrap = ServerBootstrap(group: group)
        .serverChannelOption(.backlog, value: 4096)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .serverChannelOption(.tcpOption(.tcp_nodelay), value: 1)
        .serverChannelOption(.socketOption(.so_keepalive), value: 1)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                let sync = channel.pipeline.syncOperations
                if http {
                    let decoder = ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes))
                    try sync.addHandler(decoder)
                    try sync.addHandler(HTTPUpgradeFloor(decoder: decoder))
                } else {
                    try sync.addHandler(BytesFloor())
                }
            }
        }
    _ = try bootstrap.bind(host: host, port: port).wait()
    ready()
    while true { pause() }
}

/// Reads bytes until the request's head is there, then answers.
final class BytesFloor: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    var received: ByteBuffer?
    var answered = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answered else { return }
        let bytes = joined(received, unwrapInboundIn(data))
        let answer: [UInt8]? = bytes.withUnsafeReadableBytes { head in
            guard Wire.endOfHead(head) != nil else { return nil }
            return Wire.answer(key: Wire.key(inHead: head) ?? "")
        }
        guard let answer else {
            received = bytes
            return
        }
        answered = true
        received = nil
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: answer)), promise: nil)
    }
}

/// The bytes a connection has read so far: those kept from its earlier reads, then `bytes`.
func joined(_ earlier: ByteBuffer?, _ bytes: ByteBuffer) -> ByteBuffer {
    guard var earlier else { return bytes }
    var bytes = bytes
    earlier.writeBuffer(&bytes)
    return earlier
}

/// What the gateway's handshake does with NIO's parts: NIO's HTTP/1.1 decoder reads the request;
/// at its end the answer is written, this handler and the decoder are taken out and NIO's
/// WebSocket frame decoder and encoder put in their place, with a handler that holds the link.
final class HTTPUpgradeFloor: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = ByteBuffer
    let decoder: ByteToMessageHandler<HTTPRequestDecoder>
    var key = ""

    init(decoder: ByteToMessageHandler<HTTPRequestDecoder>) { self.decoder = decoder }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): key = head.headers["sec-websocket-key"].first ?? ""
        case .body: break
        case .end:
            context.writeAndFlush(
                wrapOutboundOut(context.channel.allocator.buffer(bytes: Wire.answer(key: key))), promise: nil)
            let sync = context.pipeline.syncOperations
            sync.removeHandler(context: context, promise: nil)
            do {
                try sync.addHandlers([
                    ByteToMessageHandler(WebSocketFrameDecoder()), WebSocketFrameEncoder(), HeldLink(),
                ])
                sync.removeHandler(decoder, promise: nil)
            } catch {
                context.channel.close(promise: nil)
            }
        }
    }
}

/// Holds an upgraded connection: frames read are dropped.
final class HeldLink: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}

/// Tells the harness the server listens.
func ready() {
    say("ready")
}
