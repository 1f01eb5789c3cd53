import Foundation
import HeraldCore
import HeraldRuntime
import NIOCore
import NIOHPACK
import NIOHTTP2

/// The provider API over HTTP/2, driven at the frame level: one handler per connection reads
/// HEADERS and DATA frames, calls ``ProviderAPI/handle(_:connection:now:)`` when a stream's request
/// is complete, and writes the answer on that stream. No child channel and no Task per stream.
final class ProviderHTTP2Handler: ChannelDuplexHandler, IdleWatching {
    typealias InboundIn = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    struct Stream {
        var request: ProviderRequest
        var bodyLimitExceeded = false
        var answered = false
        /// When its HEADERS came: a request must arrive whole within the stall deadline.
        var openedAt = NIODeadline.uptimeNanoseconds(0)
    }

    let api: ProviderAPI
    let router: PushRouter
    let clock: any WallClock
    var connection: ProviderConnectionState
    var streams: [HTTP2StreamID: Stream] = [:]
    /// Streams whose answer has not been written yet (decided but waiting on the router or a delay).
    var inFlight = 0
    var highestStreamID = HTTP2StreamID(0)
    var unacknowledgedBytes = 0
    var needsFlush = false
    let turnFlush = LoopTurnFlush()
    var draining = false
    var context: ChannelHandlerContext?
    var idle: IdleWatch
    /// Whether this connection's HPACK dynamic table has had `apns-id` / `apns-unique-id` entered.
    var idNameIndexed = false
    var uniqueIDNameIndexed = false
    /// Whether the first-bytes watch has been told the connection is up (its first frame, the
    /// client's SETTINGS, arrived after the preface).
    var established = false

    /// Bodies beyond this are answered 413 without reading further.
    static let bodyCap = 5120
    static let connectionWindowRefill = 32 * 1024

    /// Where a connection closed for a protocol error or abuse is logged.
    let log: ListenerLog?
    /// Answers with a body not yet passed to the socket (the client's flow-control window holds
    /// them back), by when they were written; and the timer that looks at the oldest.
    var unsentBodies: [HTTP2StreamID: NIODeadline] = [:]
    var stallTimer: Scheduled<Void>?
    /// Looks at requests that are not whole yet (a stream opened and never finished).
    var incompleteTimer: Scheduled<Void>?
    /// How long an answer may wait for the client's window before the connection is given up.
    let stallDeadline: TimeAmount

    init(
        api: ProviderAPI, router: PushRouter, connection: ProviderConnectionState, clock: any WallClock,
        log: ListenerLog? = nil, stallDeadline: TimeAmount = .seconds(10)
    ) {
        self.api = api
        self.router = router
        self.connection = connection
        self.clock = clock
        self.idle = IdleWatch(timeout: api.idleTimeout)
        self.log = log
        self.stallDeadline = stallDeadline
    }

    /// A connection error (NIOHTTP2Handler has already sent GOAWAY with its code: ENHANCE_YOUR_CALM
    /// for floods and rapid resets, PROTOCOL_ERROR for a malformed connection) or a transport
    /// failure: the connection is closed, with a logged reason. Other connections go on.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A protocol error or abuse is worth a line and a count; a connection that simply went away
        // (a reset, TLS without close_notify) is not.
        if error is any NIOHTTP2Error {
            if !closingAfterGoAway {
                log?.closed(listener: "provider API (HTTP/2)", peer: context.channel.remoteAddress, reason: "\(error)")
            }
            closeAfterGoAway(context)
        } else {
            log?.logger.debug(
                "provider connection error",
                metadata: ["peer": "\(context.channel.remoteAddress.map { "\($0)" } ?? "?")", "error": "\(error)"])
            context.close(promise: nil)
        }
    }

    /// Whether the connection is on its way out after a GOAWAY for an error.
    var closingAfterGoAway = false

    /// Ends a connection whose GOAWAY (for an error) has been written: our side is closed first, so
    /// that the GOAWAY reaches the client before anything else; what the client still sends is read
    /// and dropped; a second later the socket closes. Closing it at once, with the client's frames
    /// still unread, would answer them with a TCP reset, which can destroy the GOAWAY on its way.
    private func closeAfterGoAway(_ context: ChannelHandlerContext) {
        guard !closingAfterGoAway else { return }
        closingAfterGoAway = true
        let channel = context.channel
        let halfClosed = context.eventLoop.makePromise(of: Void.self)
        context.close(mode: .output, promise: halfClosed)
        halfClosed.futureResult.whenFailure { _ in channel.close(promise: nil) }
        context.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        startIdleWatch(context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idle.stop()
        stallTimer?.cancel()
        stallTimer = nil
        incompleteTimer?.cancel()
        incompleteTimer = nil
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if !established {
            established = true
            context.triggerUserOutboundEvent(ConnectionEstablished(), promise: nil)
        }
        switch frame.payload {
        case .headers(let headers):
            // Streams are taken out of the table while they are worked on (and put back unless
            // complete): a copy would retain and release every field of the request.
            if var stream = streams.removeValue(forKey: frame.streamID) {
                // Trailers: nothing in them matters to APNs.
                if headers.endStream {
                    complete(frame.streamID, &stream, context: context)
                } else {
                    streams[frame.streamID] = stream
                }
                return
            }
            if frame.streamID > highestStreamID { highestStreamID = frame.streamID }
            var request = ProviderRequest(method: "", path: "")
            for (name, value, _) in headers.headers {
                switch name {
                case ":method": request.method = value
                case ":path": request.path = value
                case ":authority": request.authority = value
                default: request.addHeader(name: name, value: value)
                }
            }
            var stream = Stream(request: request)
            if headers.endStream {
                complete(frame.streamID, &stream, context: context)
            } else {
                stream.openedAt = context.eventLoop.now
                streams[frame.streamID] = stream
                if incompleteTimer == nil { armIncompleteTimer(in: stallDeadline, context) }
            }
        case .data(let payload):
            var length = 0
            if case .byteBuffer(var bytes) = payload.data {
                length = bytes.readableBytes
                if var stream = streams.removeValue(forKey: frame.streamID) {
                    if stream.request.body.readableBytes + bytes.readableBytes > Self.bodyCap {
                        stream.bodyLimitExceeded = true
                    } else if stream.request.body.readableBytes == 0 {
                        stream.request.body = bytes
                    } else {
                        stream.request.body.writeBuffer(&bytes)
                    }
                    if stream.bodyLimitExceeded && !stream.answered {
                        // Answer now: the client may be blocked on flow control and never finish.
                        stream.answered = true
                        let response = ProviderResponse.tooLarge(stream.request, now: clock.now())
                        router.answered(response, after: .zero)
                        // Reset the stream (NO_ERROR: stop sending the body) only once the answer is out:
                        // a reset written earlier would discard the DATA frame still queued for flow control.
                        let sent = context.eventLoop.makePromise(of: Void.self)
                        write(response, on: frame.streamID, context: context, promise: sent)
                        let streamID = frame.streamID
                        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
                        sent.futureResult.whenSuccess {
                            bound.value.writeAndFlush(
                                NIOAny(HTTP2Frame(streamID: streamID, payload: .rstStream(.noError))), promise: nil)
                        }
                    }
                    if payload.endStream {
                        complete(frame.streamID, &stream, context: context)
                    } else {
                        streams[frame.streamID] = stream
                    }
                }
            }
            length += payload.paddingBytes.map { $0 + 1 } ?? 0
            unacknowledgedBytes += length
            if unacknowledgedBytes >= Self.connectionWindowRefill {
                context.write(
                    wrapOutboundOut(
                        HTTP2Frame(
                            streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: unacknowledgedBytes))),
                    promise: nil)
                unacknowledgedBytes = 0
                needsFlush = true
            }
        case .rstStream:
            streams[frame.streamID] = nil
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if idle.isWatching { idle.touch(at: context.eventLoop.now) }
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    /// Answers a stream whose request is complete; the caller has taken it out of `streams`.
    private func complete(_ id: HTTP2StreamID, _ stream: inout Stream, context: ChannelHandlerContext) {
        if stream.answered { return }
        if stream.bodyLimitExceeded {
            let response = ProviderResponse.tooLarge(stream.request, now: clock.now())
            router.answered(response, after: .zero)
            write(response, on: id, context: context)
            return
        }
        let decision = api.handle(stream.request, connection: &connection, now: clock.now())
        if case .respond(let response, nil) = decision {
            // Written now, within the read that completed the request; flushed with the rest of it.
            router.answered(response, after: .zero)
            write(response, on: id, context: context)
            return
        }
        inFlight += 1
        router.carryOut(decision, on: context.eventLoop) { [self] response in
            self.inFlight -= 1
            if self.idle.isWatching, let loop = self.context?.eventLoop { self.idle.touch(at: loop.now) }
            if let context = self.context {
                self.write(response, on: id, context: context)
                self.scheduleFlush(context)
            }
            self.closeIfDrained()
        }
    }

    /// Answers that come back later (from the store or a device) arrive one by one as tasks on the
    /// event loop: flush once after the tasks queued now have run, not once per answer.
    private func scheduleFlush(_ context: ChannelHandlerContext) {
        turnFlush.request(on: context.eventLoop) { [self] in
            self.needsFlush = false
            self.context?.flush()
        }
    }

    private func write(
        _ response: ProviderResponse, on id: HTTP2StreamID, context: ChannelHandlerContext,
        promise: EventLoopPromise<Void>? = nil
    ) {
        var headers = HPACKHeaders()
        headers.reserveCapacity(5)
        headers.add(name: ":status", value: Self.statusText(response.status))
        // Identifiers are new on every response: indexing them would only churn both HPACK tables.
        // The first one on a connection is entered all the same, so that the header *name* is in
        // the dynamic table and every later answer refers to it by index instead of spelling it out
        // (Huffman-coded) again. Nothing else answered here is entered except a handful of fixed
        // statuses and `content-type`, so that entry is not evicted in practice; if it were, the
        // encoder would simply spell the name out again.
        if response.identifiesRequest {
            headers.add(name: "apns-request-id", value: response.apnsID, indexing: .nonIndexable)
        } else {
            headers.add(
                name: "apns-id", value: response.apnsID, indexing: idNameIndexed ? .nonIndexable : .indexable)
            idNameIndexed = true
        }
        if let channel = response.channelID {
            headers.add(name: "apns-channel-id", value: channel, indexing: .nonIndexable)
        }
        if let unique = response.uniqueID {
            headers.add(
                name: "apns-unique-id", value: unique, indexing: uniqueIDNameIndexed ? .nonIndexable : .indexable)
            uniqueIDNameIndexed = true
        }
        guard let body = response.body else {
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers, endStream: true)))),
                promise: promise)
            needsFlush = true
            return
        }
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "content-length", value: String(body.utf8.count), indexing: .nonIndexable)
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers)))), promise: nil)
        let buffer = context.channel.allocator.buffer(string: body)
        // A body is flow-controlled: watch that it leaves (a client whose window never opens would
        // otherwise hold the stream, and its memory, for as long as the connection lasts).
        let sent = context.eventLoop.makePromise(of: Void.self)
        unsentBodies[id] = context.eventLoop.now
        armStallTimer(context)
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        sent.futureResult.whenComplete { _ in bound.value.unsentBodies[id] = nil }
        if let promise { sent.futureResult.cascade(to: promise) }
        context.write(
            wrapOutboundOut(
                HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(buffer), endStream: true)))),
            promise: sent)
        needsFlush = true
    }

    // MARK: Requests that never finish

    private func armIncompleteTimer(in delay: TimeAmount, _ context: ChannelHandlerContext) {
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        incompleteTimer = context.eventLoop.scheduleTask(in: delay) { bound.value.resetIncomplete() }
    }

    /// Streams whose request has not arrived whole within the deadline are reset (CANCEL): a
    /// client cannot hold streams, and the gateway's memory, by opening them and never finishing.
    func resetIncomplete() {
        incompleteTimer = nil
        guard let context else { return }
        let now = context.eventLoop.now
        var oldestLeft: NIODeadline?
        var expired: [HTTP2StreamID] = []
        for (id, stream) in streams {
            if now - stream.openedAt >= stallDeadline {
                expired.append(id)
            } else if oldestLeft.map({ stream.openedAt < $0 }) ?? true {
                oldestLeft = stream.openedAt
            }
        }
        for id in expired {
            streams[id] = nil
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.cancel))), promise: nil)
        }
        if !expired.isEmpty {
            context.flush()
            log?.logger.notice(
                "request streams reset",
                metadata: [
                    "peer": "\(context.channel.remoteAddress.map { "\($0)" } ?? "?")", "streams": "\(expired.count)",
                    "reason": "the request did not arrive whole within \(stallDeadline.secondsText) (CANCEL)",
                ])
            closeIfDrained()
        }
        if let oldestLeft { armIncompleteTimer(in: oldestLeft + stallDeadline - now, context) }
    }

    // MARK: Answers the client's window holds back

    private func armStallTimer(_ context: ChannelHandlerContext) {
        guard stallTimer == nil, let oldest = unsentBodies.values.min() else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        stallTimer = context.eventLoop.scheduleTask(deadline: oldest + stallDeadline) { bound.value.checkStall() }
    }

    /// An answer has waited the whole deadline for the client's flow-control window: GOAWAY
    /// (ENHANCE_YOUR_CALM: the client holds the gateway's memory without reading) and close.
    func checkStall() {
        stallTimer = nil
        guard let context, let oldest = unsentBodies.values.min() else { return }
        guard context.eventLoop.now - oldest >= stallDeadline else {
            armStallTimer(context)
            return
        }
        log?.closed(
            listener: "provider API (HTTP/2)", peer: context.channel.remoteAddress,
            reason: "\(unsentBodies.count) answers waited \(stallDeadline.secondsText) for a flow-control window")
        let debug = context.channel.allocator.buffer(
            string: "answers waited for a flow-control window that never opened")
        context.writeAndFlush(
            wrapOutboundOut(
                HTTP2Frame(
                    streamID: .rootStream,
                    payload: .goAway(lastStreamID: highestStreamID, errorCode: .enhanceYourCalm, opaqueData: debug))),
            promise: nil)
        closeAfterGoAway(context)
    }

    static func statusText(_ status: Int) -> String {
        switch status {
        case 200: "200"
        case 400: "400"
        case 403: "403"
        case 410: "410"
        default: String(status)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Every stream raises events here (created, closed, window updated): compare the type
        // rather than cast, which costs a dynamic cast per event.
        if type(of: event) == ProviderShutdownEvent.self {
            beginDrain(context: context)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    // MARK: Idle timeout

    /// Closes the connection with GOAWAY `{"reason":"IdleTimeout"}` once the client has sent
    /// nothing for the whole timeout and no request is in flight.
    func checkIdle() {
        guard let context, !draining,
            idle.quietLongEnough(at: context.eventLoop.now, busy: inFlight > 0 || !streams.isEmpty)
        else { return }
        beginDrain(context: context, reason: .idleTimeout)
    }

    private func beginDrain(context: ChannelHandlerContext, reason: APNsReason = .shutdown) {
        guard !draining else { return }
        draining = true
        idle.stop()
        let reason = context.channel.allocator.buffer(string: #"{"reason":"\#(reason.rawValue)"}"#)
        context.writeAndFlush(
            wrapOutboundOut(
                HTTP2Frame(
                    streamID: .rootStream,
                    payload: .goAway(lastStreamID: highestStreamID, errorCode: .noError, opaqueData: reason))),
            promise: nil)
        closeIfDrained()
    }

    private func closeIfDrained() {
        guard draining, inFlight == 0, streams.isEmpty, let context else { return }
        context.flush()
        context.close(promise: nil)
    }
}
