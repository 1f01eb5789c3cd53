import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOTLS

/// A request with who waits for it, and how many connections it was offered to.
struct PendingRequest {
    var request: HTTP2ClientRequest
    var completion: HTTP2ClientCompletion
    /// Connections that refused it unprocessed (GOAWAY): it goes to a new one, up to a limit.
    var offers = 1
}

/// The client side of one HTTP/2 connection, driven at the frame level like the gateway's provider
/// API (`ProviderHTTP2Handler`): a request is a HEADERS frame (and a DATA frame) on a new stream, its
/// answer the HEADERS and DATA that come back on it. No child channel and no task per stream.
/// Everything runs on the connection's event loop.
///
/// Every request's completion is called once: with the answer, or with a failure when the
/// connection closes, the stream is reset, or its deadline passes (checked every ``tick``; the stream
/// is then reset). A request the server did not take (beyond a GOAWAY's last stream, or not started
/// when the connection went away) is handed to ``refused`` instead, which may offer it to another
/// connection: it was not processed.
final class HTTP2ClientHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// Streams open at once at most, whatever the server allows: bounds what a connection holds.
    static let maximumInFlight = 1000
    /// Whether a field's value repeats from request to request (the provider token until it is
    /// renewed, the topic and type of a bulk send): such a field is entered into the HPACK dynamic
    /// table once, then sent as an index, which spares the Huffman coding of its value every time.
    /// Everything else (identifiers, paths with a device token) is new on every request and is never
    /// entered. A switch, not a set: no hashing per field.
    static func repeats(_ name: String) -> Bool {
        switch name {
        case "authorization", "apns-topic", "apns-push-type", "apns-priority", "content-type", "content-length":
            return true
        default:
            return false
        }
    }

    /// The connection's receive window is given back in steps of this many bytes.
    static let windowRefill = 32 * 1024
    /// Bytes of answers' DATA not given back yet.
    private var unacknowledgedBytes = 0
    /// How often deadlines are looked at.
    static let tick = TimeAmount.milliseconds(100)

    struct InFlight {
        var pending: PendingRequest
        var status: Int?
        var headers = HPACKHeaders()
        var body: ByteBuffer?
    }

    let endpoint: HTTP2Endpoint
    /// `:authority` and `:scheme`, the same on every request: made once, not for each.
    private let authority: String
    private let scheme: String
    /// Where requests the server did not take go (on this loop).
    let refused: (PendingRequest) -> Void
    private var context: ChannelHandlerContext?
    private var nextStreamID = HTTP2StreamID(1)
    /// The last request's `:path`.
    private var lastPath = ""
    private var inFlight: [HTTP2StreamID: InFlight] = [:]
    private var waiting = CircularBuffer<PendingRequest>()
    private let turnFlush = LoopTurnFlush()
    /// Streams the server allows at once (its SETTINGS_MAX_CONCURRENT_STREAMS), at most ``maximumInFlight``.
    private(set) var streamLimit = HTTP2ClientHandler.maximumInFlight
    /// Whether the connection is up and the HTTP/2 preface on its way: a request written before
    /// would be refused by NIOHTTP2 (the connect's promise completes before `channelActive`).
    private var active = false
    private var deadlines: RepeatedTask?
    /// Whether the TLS handshake's outcome (its ALPN protocol) is still to come.
    private var awaitingHandshake: Bool
    /// No new request may start here (the connection closed, was told to go away, or used up its
    /// stream ids); the owner opens another.
    private(set) var isClosed = false

    init(endpoint: HTTP2Endpoint, refused: @escaping (PendingRequest) -> Void) {
        self.endpoint = endpoint
        self.authority = endpoint.authority
        self.scheme = endpoint.tls ? "https" : "http"
        self.awaitingHandshake = endpoint.tls
        self.refused = refused
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        active = context.channel.isActive
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        deadlines = context.eventLoop.scheduleRepeatedTask(initialDelay: Self.tick, delay: Self.tick) { _ in
            bound.value.expire()
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadlines?.cancel()
        deadlines = nil
        failAll(.closed, "the connection to \(endpoint) was closed")
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        active = true
        startWaiting()
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll(.closed, "the connection to \(endpoint) was closed")
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failAll(.closed, "the connection to \(endpoint) failed: \(error)")
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // HTTP/2 or nothing: a server that chose another protocol would read the preface as garbage.
        // Looked for only until the handshake is done: nio-http2 sends several events for every
        // stream, and each cast of an `Any` is a search of the type's conformances.
        if awaitingHandshake, let tls = event as? TLSUserEvent, case .handshakeCompleted(let negotiated) = tls {
            awaitingHandshake = false
            if negotiated != "h2" {
                failAll(.connect, "\(endpoint) did not agree to HTTP/2 (ALPN chose \(negotiated ?? "nothing"))")
                context.close(promise: nil)
                return
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Sends the request, or queues it while as many streams as the server allows are open.
    func send(_ pending: PendingRequest) {
        guard !isClosed, context != nil else { return refused(pending) }
        if !active || inFlight.count >= streamLimit {
            waiting.append(pending)
        } else {
            start(pending)
        }
    }

    private func start(_ pending: PendingRequest) {
        guard let context else { return refused(pending) }
        let id = nextStreamID
        if Int32(id) >= Int32.max - 2 {
            // Stream ids used up: this one is the last; the owner opens a new connection for the next.
            isClosed = true
        } else {
            nextStreamID = HTTP2StreamID(Int32(id) + 2)
        }
        let request = pending.request
        var headers = HPACKHeaders()
        headers.reserveCapacity(request.headers.count + 5)
        headers.add(name: ":method", value: request.method)
        headers.add(name: ":scheme", value: scheme)
        headers.add(name: ":authority", value: authority)
        // A path is new on every request of a bulk send to many devices, and entering each would
        // only churn the table; one that repeats the last request's (pushes to one device) is
        // entered, and from the third request on it is an index instead of a Huffman-coded string.
        let pathRepeats = request.path == lastPath
        headers.add(name: ":path", value: request.path, indexing: pathRepeats ? .indexable : .nonIndexable)
        if !pathRepeats { lastPath = request.path }
        for (name, value) in request.headers {
            headers.add(name: name, value: value, indexing: Self.repeats(name) ? .indexable : .nonIndexable)
        }
        if let body = request.body {
            headers.add(name: "content-length", value: String(body.readableBytes))
        }
        inFlight[id] = InFlight(pending: pending)
        let endStream = request.body == nil
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers, endStream: endStream)))),
            promise: nil)
        if let body = request.body {
            context.write(
                wrapOutboundOut(
                    HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(body), endStream: true)))),
                promise: nil)
        }
        // Flushed alone, so that nio-http2 sends it now. It holds DATA frames back until a flush and
        // then sends those of every stream written since in the order of a `Set`: flushed once per
        // turn, a turn's requests reached the server in no set order, were answered out of order,
        // and each answer's stream was taken from the middle of both sides' stream lists (an
        // element-by-element move of the rest). The write below is still one per turn, or per
        // 8 KiB of requests (`WriteCoalescingHandler(flushOncePerLoopTurn:)`).
        context.flush()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            // Taken out while it is worked on, and put back unless the answer is whole.
            guard var entry = inFlight.removeValue(forKey: frame.streamID) else { return }
            if let status = headers.headers.first(name: ":status").flatMap(Int.init), status >= 200 {
                entry.status = status
                entry.headers = headers.headers
            }
            if headers.endStream {
                finish(entry)
            } else {
                inFlight[frame.streamID] = entry
            }
        case .data(let payload):
            // A stream no longer waited on (reset for its deadline) gets no window of its own back.
            let open = !payload.endStream && inFlight[frame.streamID] != nil
            giveBackWindow(for: payload, on: frame.streamID, streamOpen: open, context)
            guard var entry = inFlight.removeValue(forKey: frame.streamID) else { return }
            if case .byteBuffer(var bytes) = payload.data {
                let room = entry.pending.request.bodyLimit - (entry.body?.readableBytes ?? 0)
                if room > 0, let slice = bytes.readSlice(length: min(room, bytes.readableBytes)) {
                    if entry.body == nil { entry.body = slice } else { entry.body!.writeImmutableBuffer(slice) }
                }
            }
            if payload.endStream {
                finish(entry)
            } else {
                inFlight[frame.streamID] = entry
            }
        case .rstStream(let code):
            if code == .refusedStream, let entry = inFlight.removeValue(forKey: frame.streamID) {
                // REFUSED_STREAM: not processed (RFC 9113, section 8.7).
                refused(entry.pending)
                startWaiting()
            } else {
                fail(frame.streamID, .reset, "\(endpoint) reset the stream (\(code))")
            }
        case .settings(.settings(let settings)):
            for setting in settings where setting.parameter == .maxConcurrentStreams {
                streamLimit = max(1, min(Self.maximumInFlight, setting.value))
            }
            startWaiting()
        case .goAway(let last, _, _):
            // Streams after `last` were not taken; those up to it are still answered.
            isClosed = true
            for id in inFlight.keys where id > last {
                if let entry = inFlight.removeValue(forKey: id) { refused(entry.pending) }
            }
            while let pending = waiting.popFirst() { refused(pending) }
        default:
            break
        }
    }

    /// Gives the server back the flow-control window an answer's DATA used. swift-nio-http2 does this
    /// itself only with stream channels; without them, the connection's window (65,535 bytes) would
    /// close for good after that much of answers' bodies (some 1,500 error answers), and a stream's
    /// after 65,535 bytes of one body. The connection's is given back in steps of ``windowRefill``; a
    /// stream's at once while its answer goes on.
    private func giveBackWindow(
        for payload: HTTP2Frame.FramePayload.Data, on id: HTTP2StreamID, streamOpen: Bool,
        _ context: ChannelHandlerContext
    ) {
        var length = payload.paddingBytes.map { $0 + 1 } ?? 0
        if case .byteBuffer(let bytes) = payload.data { length += bytes.readableBytes }
        guard length > 0 else { return }
        if streamOpen {
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: id, payload: .windowUpdate(windowSizeIncrement: length))),
                promise: nil)
        }
        unacknowledgedBytes += length
        if unacknowledgedBytes >= Self.windowRefill {
            context.write(
                wrapOutboundOut(
                    HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: unacknowledgedBytes))),
                promise: nil)
            unacknowledgedBytes = 0
        }
        scheduleFlush(context)
    }

    private func finish(_ entry: InFlight) {
        let response = HTTP2ClientResponse(
            status: entry.status ?? 0, headers: entry.headers, body: entry.body ?? ByteBuffer())
        entry.pending.completion(.success(response))
        startWaiting()
    }

    private func fail(_ id: HTTP2StreamID, _ kind: HTTP2ClientFailure.Kind, _ why: String) {
        guard let entry = inFlight.removeValue(forKey: id) else { return }
        entry.pending.completion(.failure(HTTP2ClientFailure(kind, why)))
        startWaiting()
    }

    private func startWaiting() {
        while active, !isClosed, inFlight.count < streamLimit, let pending = waiting.popFirst() {
            start(pending)
        }
    }

    /// Fails the requests whose deadline passed and resets their streams. Deadlines are on the
    /// loop's clock (`NIODeadline.now()` on a real loop).
    func expire() {
        guard let context else { return }
        let now = context.eventLoop.now
        let late = inFlight.filter { $0.value.pending.request.deadline <= now }.map(\.key)
        for id in late {
            fail(id, .timedOut, "no answer from \(endpoint) in time")
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.cancel))), promise: nil)
        }
        if !late.isEmpty { scheduleFlush(context) }
        if waiting.contains(where: { $0.request.deadline <= now }) {
            let waitingLate = waiting.filter { $0.request.deadline <= now }
            waiting.removeAll { $0.request.deadline <= now }
            for pending in waitingLate {
                pending.completion(.failure(HTTP2ClientFailure(.timedOut, "no stream free on \(endpoint) in time")))
            }
        }
    }

    /// Fails what is in flight with `kind`; what had not started yet was not processed: it is refused.
    private func failAll(_ kind: HTTP2ClientFailure.Kind, _ why: String) {
        isClosed = true
        let open = inFlight
        inFlight = [:]
        for entry in open.values { entry.pending.completion(.failure(HTTP2ClientFailure(kind, why))) }
        if kind == .connect {
            while let pending = waiting.popFirst() { pending.completion(.failure(HTTP2ClientFailure(kind, why))) }
        } else {
            while let pending = waiting.popFirst() { refused(pending) }
        }
    }

    /// One flush per turn of the event loop, however many requests were written in it.
    private func scheduleFlush(_ context: ChannelHandlerContext) {
        turnFlush.request(on: context.eventLoop) { [self] in self.context?.flush() }
    }
}
