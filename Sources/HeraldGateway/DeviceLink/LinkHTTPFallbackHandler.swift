import Foundation
import HeraldCore
import NIOCore
import NIOHTTP1

/// Answers a plain HTTP request on the link port: 426 for the link's path without the WebSocket
/// upgrade, 404 for anything else.
final class LinkHTTPFallbackHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    var path = ""

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        case .body:
            break
        case .end:
            let upgrade = path == DeviceLink.path
            let text = upgrade ? "the device link speaks WebSocket: send Upgrade: websocket\n" : "not found\n"
            var headers = HTTPHeaders([("content-type", "text/plain"), ("connection", "close")])
            headers.add(name: "content-length", value: String(text.utf8.count))
            if upgrade { headers.add(name: "upgrade", value: "websocket") }
            let head = HTTPResponseHead(
                version: .http1_1, status: upgrade ? .upgradeRequired : .notFound, headers: headers)
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { [channel = context.channel] _ in
                channel.close(promise: nil)
            }
        }
    }
}
