import Foundation
import HeraldCore
import HeraldNIO
import HeraldRuntime
import NIOCore
import NIOHPACK
import NIOHTTP2

/// The provider API over HTTP/2, driven at the frame level: one handler per connection reads
/// HEADERS and DATA frames, calls ``ProviderAPI/handle(_:connection:now:)`` when a stream's request
/// is complete, and writes the answer on that stream. No child channel and no Task per stream.
///
/// The connection's state and every decision about it are ``ProviderConnectionStateMachine``'s; this
/// handler feeds it the channel's events, with the loop's time, and carries out what it returns:
/// frames written, timers armed, the connection closed.
final class ProviderHTTP2Handler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame
    typealias Machine = ProviderConnectionStateMachine

    /// Bodies beyond this are answered 413 without reading further (HTTP/1.1 too).
    static let bodyCap = Machine.bodyCap

    let api: ProviderAPI
    let router: PushRouter
    let clock: any WallClock
    /// Where a connection closed for a protocol error or abuse is logged.
    let log: ListenerLog?
    var machine: Machine
    let turnFlush = LoopTurnFlush()
    var context: ChannelHandlerContext?
    /// Where answers to this connection's pushes come back from other loops, many to a task.
    var answers: LoopMailbox<LinkDelivery.Answer>?
    /// The machine's timers that are armed, by ``ProviderConnectionStateMachine/Timer``.
    var timers: [Scheduled<Void>?] = [nil, nil, nil]
    /// Set once the connection is being closed (``closeDrained(_:)``, or half-closed after an
    /// error's GOAWAY, ``closeAfterGoAway(_:)``, whose second of reading must not be cut short).
    private var closing = false
    /// A fault rule's GOAWAY is out while something was left (an answer's body waiting for the
    /// window): once drained, the connection closes as after an error's GOAWAY, not at once.
    private var halfCloseWhenDrained = false

    init(api: ProviderAPI, router: PushRouter, machine: Machine, clock: any WallClock, log: ListenerLog? = nil) {
        self.api = api
        self.router = router
        self.machine = machine
        self.clock = clock
        self.log = log
    }

    /// A connection error (NIOHTTP2Handler has already sent GOAWAY with its code: ENHANCE_YOUR_CALM
    /// for floods and rapid resets, PROTOCOL_ERROR for a malformed connection) or a transport
    /// failure: the connection is closed, with a logged reason. Other connections go on.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A protocol error or abuse is worth a line and a count; a connection that simply went away
        // (a reset, TLS without close_notify) is not.
        if error is any NIOHTTP2Error {
            guard machine.protocolErrorCaught() else { return }
            log?.closed(listener: "provider API (HTTP/2)", peer: context.channel.remoteAddress, reason: "\(error)")
            closeAfterGoAway(context)
        } else {
            log?.logger.debug(
                "provider connection error",
                metadata: ["peer": "\(context.channel.remoteAddress.map { "\($0)" } ?? "?")", "error": "\(error)"])
            context.close(promise: nil)
        }
    }

    /// Ends a connection whose GOAWAY (for an error) has been written: our side is closed first, so
    /// that the GOAWAY reaches the client before anything else; what the client still sends is read
    /// and dropped; a second later the socket closes. Closing it at once, with the client's frames
    /// still unread, would answer them with a TCP reset, which can destroy the GOAWAY on its way.
    private func closeAfterGoAway(_ context: ChannelHandlerContext) {
        closing = true
        let channel = context.channel
        let halfClosed = context.eventLoop.makePromise(of: Void.self)
        context.close(mode: .output, promise: halfClosed)
        halfClosed.futureResult.whenFailure { _ in channel.close(promise: nil) }
        context.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        answers = LinkDelivery.answerMailbox(on: context.eventLoop)
        run(machine.started(at: context.eventLoop.now), context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        machine.removed()
        for timer in timers { timer?.cancel() }
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if machine.frameReceived() { context.triggerUserOutboundEvent(ConnectionEstablished(), promise: nil) }
        switch frame.payload {
        case .headers(let headers):
            let action = machine.headersReceived(
                headers.headers, endStream: headers.endStream, on: frame.streamID, at: context.eventLoop.now)
            run(action, context)
        case .data(let payload):
            var length = payload.paddingBytes.map { $0 + 1 } ?? 0
            if case .byteBuffer(let bytes) = payload.data {
                length += bytes.readableBytes
                run(machine.dataReceived(bytes, endStream: payload.endStream, on: frame.streamID), context)
            }
            if let increment = machine.bytesReceived(length) {
                let update = HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))
                context.write(wrapOutboundOut(update), promise: nil)
            }
        case .rstStream:
            run(machine.streamReset(frame.streamID, at: context.eventLoop.now), context)
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if machine.readComplete(at: context.eventLoop.now) { context.flush() }
        context.fireChannelReadComplete()
        // A draining connection whose last stream the read ended (the client reset it, or it was
        // answered at once) has nothing left: it closes here, as after the last answer carried out.
        closeIfDrained(context)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Every stream raises events here (created, closed, window updated): compare the type
        // rather than cast, which costs a dynamic cast per event.
        if type(of: event) == ProviderShutdownEvent.self {
            run(machine.shutdownRequested(), context)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    // MARK: Carrying out the machine's actions

    private func run(_ action: consuming Machine.Action, _ context: ChannelHandlerContext) {
        switch action {
        case .none:
            break
        case .decide(let request, let id):
            let decided = machine.decide(request, on: id, with: api, now: clock.now())
            switch consume decided {
            case .answer(let response):
                router.answered(response, after: .zero)
                write(response, on: id, context)
            case .carryOut(let decision):
                router.carryOut(consume decision, on: context.eventLoop, answers: answers) { [self] response in
                    answerReady(response, on: id)
                }
            }
        case .refuseTooLarge(let request, let id):
            let response = ProviderResponse.tooLarge(request, now: clock.now())
            router.answered(response, after: .zero)
            // Reset the stream (NO_ERROR: stop sending the body) only once the answer is out: a
            // reset written earlier would discard the DATA frame still queued for flow control.
            let sent = context.eventLoop.makePromise(of: Void.self)
            write(response, on: id, context, promise: sent)
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            sent.futureResult.whenSuccess {
                bound.value.writeAndFlush(NIOAny(HTTP2Frame(streamID: id, payload: .rstStream(.noError))), promise: nil)
            }
        case .arm(let timer, let delay):
            arm(timer, in: delay, context)
        case .reset(let id, let code):
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(code))), promise: nil)
        case .goAway(let goAway, let close):
            timers[Machine.Timer.idle.rawValue]?.cancel()
            context.writeAndFlush(wrapOutboundOut(goAway.frame(context.channel.allocator)), promise: nil)
            if close { closeIfDrained(context) }
        case .giveUp(let goAway, let reason, let closeOutput):
            log?.closed(listener: "provider API (HTTP/2)", peer: context.channel.remoteAddress, reason: reason)
            context.writeAndFlush(wrapOutboundOut(goAway.frame(context.channel.allocator)), promise: nil)
            if closeOutput { closeAfterGoAway(context) }
        }
    }

    /// Closes a draining connection that has nothing left, unless it is closing already: at once, or
    /// after a fault rule's GOAWAY as after an error's (``closeAfterGoAway(_:)``).
    private func closeIfDrained(_ context: ChannelHandlerContext) {
        guard !closing, machine.isDrained else { return }
        if halfCloseWhenDrained { closeAfterGoAway(context) } else { closeDrained(context) }
    }

    private func closeDrained(_ context: ChannelHandlerContext) {
        closing = true
        context.flush()
        context.close(promise: nil)
    }

    /// An answer's body has left (or failed to): a draining connection may have nothing left then.
    private func bodyLeft(on id: HTTP2StreamID) {
        machine.bodySent(on: id)
        if let context { closeIfDrained(context) }
    }

    /// An answer carried out comes back, on the loop.
    private func answerReady(_ response: ProviderResponse, on id: HTTP2StreamID) {
        guard let context else { return machine.answerDropped(on: id) }
        machine.answerReady(on: id, at: context.eventLoop.now, injected: response.injected)
        write(response, on: id, context)
        // Answers that come back later (from the store or a device) arrive one by one as tasks on
        // the event loop: flush once after the tasks queued now have run, not once per answer.
        turnFlush.request(on: context.eventLoop) { [self] in
            self.machine.flushed()
            self.context?.flush()
        }
        // A fault rule's GOAWAY has already half-closed the connection and timed its close.
        if case .goAway = response.connectionFault { return }
        closeIfDrained(context)
    }

    private func write(
        _ response: ProviderResponse, on id: HTTP2StreamID, _ context: ChannelHandlerContext,
        promise: EventLoopPromise<Void>? = nil
    ) {
        if let fault = response.connectionFault {
            switch fault {
            case .close:
                // A fault rule: the connection goes without an answer, with whatever else was in flight.
                log?.logger.info(
                    "fault rule: connection closed",
                    metadata: ["peer": "\(context.channel.remoteAddress.map { "\($0)" } ?? "?")", "stream": "\(id)"])
                context.close(promise: nil)
                return
            case .lowerStreams(let limit):
                let settings = HTTP2Frame(
                    streamID: .rootStream,
                    payload: .settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: limit)])))
                context.write(wrapOutboundOut(settings), promise: nil)
            case .goAway: break
            }
        }
        writeAnswer(response, on: id, context, promise: promise)
        if case .goAway(let code, let debug) = response.connectionFault {
            log?.logger.info(
                "fault rule: GOAWAY",
                metadata: ["peer": "\(context.channel.remoteAddress.map { "\($0)" } ?? "?")", "debug": "\(debug)"])
            // Nothing else in flight: our side closes after the GOAWAY, and what the client still
            // sends is read and dropped, so that no reset overtakes the GOAWAY (``closeAfterGoAway``).
            if case .goAway(let goAway, let close) = machine.faultGoAway(errorCode: code, debugData: debug) {
                timers[Machine.Timer.idle.rawValue]?.cancel()
                context.writeAndFlush(wrapOutboundOut(goAway.frame(context.channel.allocator)), promise: nil)
                if close { closeAfterGoAway(context) } else { halfCloseWhenDrained = true }
            }
        }
    }

    private func writeAnswer(
        _ response: ProviderResponse, on id: HTTP2StreamID, _ context: ChannelHandlerContext,
        promise: EventLoopPromise<Void>?
    ) {
        let body = response.body
        let headers = machine.answerHeaders(for: response, body: body)
        guard let body else {
            let frame = HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers, endStream: true)))
            context.write(wrapOutboundOut(frame), promise: promise)
            return
        }
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers)))), promise: nil)
        let buffer = context.channel.allocator.buffer(string: body)
        let sent = context.eventLoop.makePromise(of: Void.self)
        run(machine.bodyWritten(on: id, at: context.eventLoop.now), context)
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        sent.futureResult.whenComplete { _ in bound.value.bodyLeft(on: id) }
        if let promise { sent.futureResult.cascade(to: promise) }
        let frame = HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(buffer), endStream: true)))
        context.write(wrapOutboundOut(frame), promise: sent)
        // Flushed alone: nio-http2 holds DATA frames until a flush and then sends those of all the
        // streams written since in the order of a `Set`, so a turn's error answers ended in no set
        // order (and their streams left the middle of both sides' stream lists). The write below
        // is still one per turn, or per 8 KiB (`WriteCoalescingHandler(flushOncePerLoopTurn:)`).
        context.flush()
    }

    // MARK: Timers

    private func arm(_ timer: Machine.Timer, in delay: TimeAmount, _ context: ChannelHandlerContext) {
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        timers[timer.rawValue] = context.eventLoop.scheduleTask(in: delay) { bound.value.fired(timer) }
    }

    private func fired(_ timer: Machine.Timer) {
        timers[timer.rawValue] = nil
        guard let context else { return }
        let now = context.eventLoop.now
        switch timer {
        case .idle: run(machine.idleTimerFired(at: now), context)
        case .stall: run(machine.stallTimerFired(at: now), context)
        case .incomplete:
            // Streams whose request did not arrive whole in time are reset (CANCEL).
            let action = machine.incompleteTimerFired(at: now)
            if !action.reset.isEmpty {
                for id in action.reset {
                    context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.cancel))), promise: nil)
                }
                context.flush()
                log?.logger.notice(
                    "request streams reset",
                    metadata: [
                        "peer": "\(context.channel.remoteAddress.map { "\($0)" } ?? "?")",
                        "streams": "\(action.reset.count)",
                        "reason":
                            "the request did not arrive whole within \(machine.stallDeadline.secondsText) (CANCEL)",
                    ])
                if action.close { closeIfDrained(context) }
            }
            if let delay = action.lookAgainIn { arm(.incomplete, in: delay, context) }
        }
    }
}
