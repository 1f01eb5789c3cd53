import HeraldRuntime
import NIOCore
import NIOHPACK
import NIOHTTP2

/// One push on its way to another node: the request and who waits for its answer.
struct ForwardingRequest {
    /// `:path`.
    var path: String
    /// The headers after the pseudo-headers.
    var headers: [(String, String)]
    /// The body.
    var body: ByteBuffer
    /// How long to wait for the answer, from when the request reaches its connection.
    var timeout: TimeAmount
    /// Called exactly once: with the answer, or with why there is none.
    var completion: @Sendable (Result<ForwardingAnswer, ForwardingFailure>) -> Void
}

/// What the other node answered.
struct ForwardingAnswer: Sendable {
    /// The HTTP status.
    var status: Int
    /// The start of the body (a reason), for the log.
    var body: String
}

/// Why a forwarded push got no answer.
struct ForwardingFailure: Error, CustomStringConvertible {
    var description: String
}

/// The client side of forwarding on one HTTP/2 connection to another node, driven at the frame
/// level like the provider API's server side (``ProviderHTTP2Handler``): a request is a HEADERS and
/// a DATA frame on a new stream, its answer the HEADERS (and DATA) that come back on it. No child
/// channel or task per stream: AsyncHTTPClient's stream channel per request took more than half of
/// the forwarding node's CPU (BENCHMARKS.md). Everything runs on the connection's event loop.
///
/// Every request's completion is called once: with the answer, or with a failure when the
/// connection closes, the stream is reset, a GOAWAY leaves it out, or its deadline passes (checked
/// every ``tick``; the stream is then reset).
final class ForwardingHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// Streams open at once: what the provider API advertises (``ProviderPipeline/settings``).
    static let maximumInFlight = 1000
    /// How often deadlines are looked at.
    static let tick = TimeAmount.milliseconds(250)
    /// How much of an answer's body is kept (a JSON reason).
    static let bodyLimit = 512

    struct InFlight {
        var request: ForwardingRequest
        var deadline: NIODeadline
        var status: Int?
        var body = ""
    }

    let authority: String
    private var context: ChannelHandlerContext?
    private var nextStreamID = HTTP2StreamID(1)
    private var inFlight: [HTTP2StreamID: InFlight] = [:]
    private var waiting = CircularBuffer<(request: ForwardingRequest, deadline: NIODeadline)>()
    private let turnFlush = LoopTurnFlush()
    /// Whether the connection is up and the HTTP/2 preface on its way: a request written before
    /// would be refused by NIOHTTP2 (the connect's promise completes before `channelActive`).
    private var active = false
    private var deadlines: RepeatedTask?
    /// No new request may start here (the connection closed, was told to go away, or used up its
    /// stream ids); the owner opens another.
    private(set) var isClosed = false

    init(authority: String) {
        self.authority = authority
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
        failAll("the connection to the node was closed")
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        active = true
        startWaiting()
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll("the connection to the node was closed")
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failAll("the connection to the node failed: \(error)")
        context.close(promise: nil)
    }

    /// Sends `request`, or queues it while as many streams as the node allows are open.
    func send(_ request: ForwardingRequest) {
        guard !isClosed, let context else {
            return request.completion(.failure(ForwardingFailure(description: "the connection to the node is closed")))
        }
        let deadline = context.eventLoop.now + request.timeout
        if !active || inFlight.count >= Self.maximumInFlight {
            waiting.append((request, deadline))
        } else {
            start(request, deadline: deadline)
        }
    }

    private func start(_ request: ForwardingRequest, deadline: NIODeadline) {
        guard let context else {
            return request.completion(.failure(ForwardingFailure(description: "the connection to the node is closed")))
        }
        let id = nextStreamID
        if Int32(id) >= Int32.max - 2 {
            // Stream ids used up: this one is the last; the owner opens a new connection for the next.
            isClosed = true
        } else {
            nextStreamID = HTTP2StreamID(Int32(id) + 2)
        }
        var headers = HPACKHeaders()
        headers.reserveCapacity(request.headers.count + 5)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: authority)
        headers.add(name: ":path", value: request.path, indexing: .nonIndexable)
        for (name, value) in request.headers { headers.add(name: name, value: value, indexing: .nonIndexable) }
        headers.add(name: "content-length", value: String(request.body.readableBytes), indexing: .nonIndexable)
        inFlight[id] = InFlight(request: request, deadline: deadline)
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers)))), promise: nil)
        context.write(
            wrapOutboundOut(
                HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(request.body), endStream: true)))),
            promise: nil)
        scheduleFlush(context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            // Taken out while it is worked on, and put back unless the answer is whole.
            guard var entry = inFlight.removeValue(forKey: frame.streamID) else { return }
            if let status = headers.headers.first(name: ":status").flatMap(Int.init), status >= 200 {
                entry.status = status
            }
            if headers.endStream {
                finish(entry)
            } else {
                inFlight[frame.streamID] = entry
            }
        case .data(let payload):
            guard var entry = inFlight.removeValue(forKey: frame.streamID) else { return }
            if case .byteBuffer(let bytes) = payload.data, entry.body.utf8.count < Self.bodyLimit {
                entry.body += String(buffer: bytes).prefix(Self.bodyLimit)
            }
            if payload.endStream {
                finish(entry)
            } else {
                inFlight[frame.streamID] = entry
            }
        case .rstStream(let code):
            fail(frame.streamID, "the node reset the stream (\(code))")
        case .goAway(let last, let code, _):
            // Streams after `last` were not taken; those up to it are still answered.
            isClosed = true
            for id in inFlight.keys where id > last { fail(id, "the node is going away (\(code))") }
            while let (request, _) = waiting.popFirst() {
                request.completion(.failure(ForwardingFailure(description: "the node is going away (\(code))")))
            }
        default:
            break
        }
    }

    private func finish(_ entry: InFlight) {
        entry.request.completion(.success(ForwardingAnswer(status: entry.status ?? 0, body: entry.body)))
        startWaiting()
    }

    private func fail(_ id: HTTP2StreamID, _ why: String) {
        guard let entry = inFlight.removeValue(forKey: id) else { return }
        entry.request.completion(.failure(ForwardingFailure(description: why)))
        startWaiting()
    }

    private func startWaiting() {
        while active, !isClosed, inFlight.count < Self.maximumInFlight, let (request, deadline) = waiting.popFirst() {
            start(request, deadline: deadline)
        }
    }

    /// Fails the requests whose deadline passed and resets their streams.
    func expire() {
        guard let context else { return }
        let now = context.eventLoop.now
        let late = inFlight.filter { $0.value.deadline <= now }.map(\.key)
        for id in late {
            fail(id, "no answer from the node in time")
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.cancel))), promise: nil)
        }
        if !late.isEmpty { scheduleFlush(context) }
        let waitingLate = waiting.filter { $0.deadline <= now }
        if !waitingLate.isEmpty {
            waiting.removeAll { $0.deadline <= now }
            for (request, _) in waitingLate {
                request.completion(.failure(ForwardingFailure(description: "no stream free on the node in time")))
            }
        }
    }

    private func failAll(_ why: String) {
        isClosed = true
        let open = inFlight
        inFlight = [:]
        for entry in open.values { entry.request.completion(.failure(ForwardingFailure(description: why))) }
        while let (request, _) = waiting.popFirst() {
            request.completion(.failure(ForwardingFailure(description: why)))
        }
    }

    /// One flush per turn of the event loop, however many requests were written in it.
    private func scheduleFlush(_ context: ChannelHandlerContext) {
        turnFlush.request(on: context.eventLoop) { [self] in self.context?.flush() }
    }
}
