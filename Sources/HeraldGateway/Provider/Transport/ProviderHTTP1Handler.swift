import Foundation
import HeraldCore
import HeraldNIO
import HeraldRuntime
import NIOCore
import NIOHTTP1

/// The provider API over HTTP/1.1 (development listener, and TLS clients that do not offer h2).
/// NIO's pipelining helper keeps answers in request order.
///
/// A request must arrive whole within `requestDeadline` of its first byte (a head or body sent a
/// byte at a time is closed then); between requests the idle deadline applies.
final class ProviderHTTP1Handler: ChannelInboundHandler, IdleWatching {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let api: ProviderAPI
    let router: PushRouter
    let clock: any WallClock
    var connection: ProviderConnectionState
    var request: ProviderRequest?
    var keepAlive = true
    var tooLarge = false
    var busy = false
    var draining = false
    var context: ChannelHandlerContext?
    /// Where answers to this connection's pushes come back from other loops, many to a task.
    var answers: LoopMailbox<LinkDelivery.Answer>?
    var idle: IdleWatch
    let requestDeadline: TimeAmount
    let log: ListenerLog?
    /// Runs from a request's first sign (bytes that made no part yet, or its head) to its end.
    var requestTimer: Scheduled<Void>?
    /// Whether the current read produced any request part.
    var sawPart = false
    var established = false

    init(
        api: ProviderAPI, router: PushRouter, connection: ProviderConnectionState, clock: any WallClock,
        requestDeadline: TimeAmount = .seconds(10), log: ListenerLog? = nil
    ) {
        self.api = api
        self.router = router
        self.connection = connection
        self.clock = clock
        self.idle = IdleWatch(timeout: api.idleTimeout)
        self.requestDeadline = requestDeadline
        self.log = log
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        answers = LinkDelivery.answerMailbox(on: context.eventLoop)
        startIdleWatch(context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idle.stop()
        requestTimer?.cancel()
        requestTimer = nil
        self.context = nil
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // Activity only once the provider has shown who it is, as on HTTP/2
        // (``ProviderConnectionState/hasAuthenticated``); an answer a fault rule gives counts too.
        if idle.isWatching, connection.hasAuthenticated { idle.touch(at: context.eventLoop.now) }
        // Bytes that made no part while nothing was in progress: a head is on its way. (While a
        // request is answered, NIO's pipelining helper holds the next one back, so that is no sign.)
        if !sawPart && request == nil && !busy { startRequestTimer(context) }
        sawPart = false
        context.fireChannelReadComplete()
    }

    private func startRequestTimer(_ context: ChannelHandlerContext) {
        guard requestTimer == nil else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        requestTimer = context.eventLoop.scheduleTask(in: requestDeadline) { bound.value.requestTimedOut() }
    }

    private func requestTimedOut() {
        requestTimer = nil
        guard let context else { return }
        log?.closed(
            listener: "provider API (HTTP/1.1)", peer: context.channel.remoteAddress,
            reason: "a request did not arrive whole within \(requestDeadline.secondsText) of its first byte")
        context.close(promise: nil)
    }

    /// Closes the connection once the client has sent nothing for the whole idle timeout and no
    /// request is in flight (HTTP/1.1 has no GOAWAY). Before authentication a request under way
    /// does not keep it (a client could otherwise always have one on its way).
    func checkIdle() {
        let underWay = connection.hasAuthenticated && (busy || request != nil)
        guard let context, idle.quietLongEnough(at: context.eventLoop.now, busy: underWay) else { return }
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        sawPart = true
        switch unwrapInboundIn(data) {
        case .head(let head):
            startRequestTimer(context)
            if !established {
                established = true
                context.triggerUserOutboundEvent(ConnectionEstablished(), promise: nil)
            }
            var r = ProviderRequest(method: head.method.rawValue, path: head.uri)
            for (name, value) in head.headers { r.addHeader(name: name, value: value) }
            request = r
            keepAlive = head.isKeepAlive
            tooLarge = false
        case .body(var bytes):
            guard var r = request else { return }
            if r.body.readableBytes + bytes.readableBytes > ProviderHTTP2Handler.bodyCap {
                tooLarge = true
            } else {
                r.body.writeBuffer(&bytes)
            }
            request = r
        case .end:
            requestTimer?.cancel()
            requestTimer = nil
            guard let r = request else { return }
            request = nil
            busy = true
            if tooLarge {
                let response = ProviderResponse.tooLarge(r, now: clock.now())
                router.answered(response, after: .zero)
                write(response, context: context)
                return
            }
            let decision = api.handle(r, connection: &connection, now: clock.now())
            router.carryOut(decision, on: context.eventLoop, answers: answers) { [self] response in
                if let context = self.context { self.write(response, context: context) }
            }
        }
    }

    private func write(_ response: ProviderResponse, context: ChannelHandlerContext) {
        busy = false
        // Fault rules over HTTP/1.1: a closed connection is closed; a GOAWAY is `connection: close`
        // after the answer; SETTINGS have no HTTP/1.1 form.
        if response.connectionFault == .close {
            context.close(promise: nil)
            return
        }
        if case .goAway = response.connectionFault { keepAlive = false }
        if idle.isWatching, connection.hasAuthenticated || response.injected { idle.touch(at: context.eventLoop.now) }
        var headers = HTTPHeaders()
        headers.add(name: response.identifiesRequest ? "apns-request-id" : "apns-id", value: response.apnsID)
        if let channel = response.channelID { headers.add(name: "apns-channel-id", value: channel) }
        if let unique = response.uniqueID { headers.add(name: "apns-unique-id", value: unique) }
        if !response.warnings.isEmpty {
            headers.add(name: ProviderConnectionStateMachine.warningsHeader, value: response.warnings.headerValue)
        }
        let body = response.body
        if body != nil { headers.add(name: "content-type", value: "application/json") }
        // A 204 (a channel deleted) has no body and, by RFC 9110, no content-length either.
        if response.status != 204 { headers.add(name: "content-length", value: String(body?.utf8.count ?? 0)) }
        let close = !keepAlive || draining
        if close { headers.add(name: "connection", value: "close") }
        let head = HTTPResponseHead(
            version: .http1_1, status: HTTPResponseStatus(statusCode: response.status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if let body {
            context.write(
                wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))), promise: nil)
        }
        let promise = close ? context.eventLoop.makePromise(of: Void.self) : nil
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: promise)
        if let promise {
            let channel = context.channel
            promise.futureResult.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ProviderShutdownEvent {
            draining = true
            if !busy && request == nil { context.close(promise: nil) }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
