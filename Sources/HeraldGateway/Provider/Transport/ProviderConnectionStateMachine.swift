import Foundation
import HeraldCore
import NIOCore
import NIOHPACK
import NIOHTTP2

/// One provider HTTP/2 connection's state, as a value: its request streams, the answers it waits
/// on, the connection's flow-control window, draining and GOAWAY, its idle, incomplete-request and
/// stall deadlines, and the provider's authentication on it (``ProviderConnectionState``).
///
/// ``ProviderHTTP2Handler`` feeds it what happens on the channel (a frame read, an answer ready, a
/// timer fired, a shutdown asked for), with the event loop's time, and carries out what each event
/// returns. The machine touches no channel, loop or clock, so its tests feed events and look at the
/// actions. An event returns one ``Action``, an enum (nothing is allocated for it), and a request is
/// moved, never copied, from its stream to ``decide(_:with:now:)``.
struct ProviderConnectionStateMachine {
    /// A request stream whose request has not arrived whole yet.
    struct Stream {
        var request: ProviderRequest
        var bodyLimitExceeded = false
        var answered = false
        /// The request's `content-length`, which the DATA must match (``RequestHeaderCheck``).
        var contentLength: Int?
        /// The DATA bytes received (padding aside), kept or not.
        var received = 0
        /// When its HEADERS came: a request must arrive whole within the stall deadline.
        var openedAt = NIODeadline.uptimeNanoseconds(0)

        /// Ends with fewer DATA bytes than its content-length said (none answered yet).
        var missesItsLength: Bool { !answered && contentLength.map { received < $0 } == true }
    }

    /// What ``decide(_:with:now:)`` leaves to do.
    enum Decided {
        /// Answer now, within the read that completed the request (flushed with the rest of it).
        case answer(ProviderResponse)
        /// Carry the decision out (``PushRouter/carryOut(_:on:answer:)``); its answer comes back
        /// through ``answerReady(on:at:)``. It counts as in flight until then.
        case carryOut(ProviderAPI.Decision)
    }

    /// A GOAWAY to write (and flush) on the root stream.
    struct GoAway: Equatable {
        var lastStreamID: HTTP2StreamID
        var errorCode: HTTP2ErrorCode
        var debugData: String

        /// The frame, its debug data in a buffer from `allocator`.
        func frame(_ allocator: ByteBufferAllocator) -> HTTP2Frame {
            let debug = allocator.buffer(string: debugData)
            return HTTP2Frame(
                streamID: .rootStream,
                payload: .goAway(lastStreamID: lastStreamID, errorCode: errorCode, opaqueData: debug))
        }
    }

    /// The connection's timers: the handler arms them when told, and reports when they are due.
    enum Timer: Int { case idle, incomplete, stall }

    /// What an event leaves the handler to do.
    enum Action {
        case none
        /// The request on the stream is whole: decide it (``decide(_:with:now:)``) and answer.
        case decide(ProviderRequest, on: HTTP2StreamID)
        /// The body went past ``bodyCap``: answer 413 now (the client may be blocked on flow control
        /// and never finish), and reset the stream (NO_ERROR) once that answer is out.
        case refuseTooLarge(ProviderRequest, on: HTTP2StreamID)
        /// Arm `timer` for this long.
        case arm(Timer, in: TimeAmount)
        /// Reset the stream with this code (flushed with the rest of the read).
        case reset(HTTP2StreamID, HTTP2ErrorCode)
        /// Stop the idle timer and write the GOAWAY; then, when `close`, flush and close (nothing is
        /// left in flight).
        case goAway(GoAway, close: Bool)
        /// An answer has waited the whole stall deadline for the client's flow-control window: log
        /// `reason` as why the connection closes, write the GOAWAY (ENHANCE_YOUR_CALM: the client
        /// holds the gateway's memory without reading), and, when `closeOutput`, close our side.
        case giveUp(GoAway, reason: String, closeOutput: Bool)
    }

    /// What the incomplete-request timer found.
    struct IncompleteAction: Equatable {
        /// Streams to reset (CANCEL), then flush and log, if any.
        var reset: [HTTP2StreamID] = []
        /// Whether the connection is drained after those resets: flush and close.
        var close = false
        /// When to look again, at the oldest stream left.
        var lookAgainIn: TimeAmount?
    }

    /// Bodies beyond this are answered 413 without reading further.
    static let bodyCap = 5120
    /// The connection's flow-control window is refilled in steps of this many bytes.
    static let connectionWindowRefill = 32 * 1024

    /// The provider's authentication on this connection (its token, its team), which
    /// ``ProviderAPI/handle(_:connection:now:)`` reads and updates.
    private(set) var connection: ProviderConnectionState
    /// How long a request may take to arrive whole, and an answer wait for the client's window.
    let stallDeadline: TimeAmount
    private(set) var streams: [HTTP2StreamID: Stream] = [:]
    /// Requests decided whose answer has not been written yet (waiting on the router or a delay).
    private(set) var inFlight = 0
    /// The streams of those requests: a reset of one of them cut off work under way.
    private var carriedOut: Set<HTTP2StreamID> = []
    /// The client's resets of streams the gateway had not answered (the rapid-reset defence).
    var unansweredResets = UnansweredResets()
    private(set) var highestStreamID = HTTP2StreamID(0)
    private var unacknowledgedBytes = 0
    /// Whether something was written since the last flush.
    private var needsFlush = false
    private(set) var draining = false
    /// A fault rule answered a request of the read under way (``readComplete(at:)`` counts it).
    private var faultAnswered = false
    /// Whether the connection is on its way out after a GOAWAY for an error.
    private(set) var closingAfterGoAway = false
    /// Whether the first-bytes watch has been told the connection is up.
    private var established = false
    private var idle: IdleDeadline
    private var incompleteTimerArmed = false
    /// Whether this connection's HPACK dynamic table has had `apns-id` / `apns-unique-id` entered.
    private var idNameIndexed = false
    private var uniqueIDNameIndexed = false
    /// Answers with a body not yet passed to the socket (the client's flow-control window holds
    /// them back), by when they were written.
    private(set) var unsentBodies: [HTTP2StreamID: NIODeadline] = [:]
    private var stallTimerArmed = false

    /// A connection with `idleTimeout` (`nil`: never idle) and `stallDeadline`.
    init(connection: ProviderConnectionState, idleTimeout: TimeAmount?, stallDeadline: TimeAmount) {
        self.connection = connection
        self.idle = IdleDeadline(timeout: idleTimeout)
        self.stallDeadline = stallDeadline
    }

    /// Whether the connection is draining and has nothing left (no request open or carried out, no
    /// answer's body waiting for the client's window): it can close.
    var isDrained: Bool { draining && inFlight == 0 && streams.isEmpty && unsentBodies.isEmpty }

    // MARK: Lifetime

    /// The handler is in the pipeline at `now`: the idle timer is armed, unless there is no timeout.
    mutating func started(at now: NIODeadline) -> Action {
        guard let delay = idle.start(at: now) else { return .none }
        return .arm(.idle, in: delay)
    }

    /// The handler left the pipeline: nothing is armed any more (it cancels its timers).
    mutating func removed() {
        idle.stop()
        stallTimerArmed = false
        incompleteTimerArmed = false
    }

    /// A frame arrived: `true` for the first (the client's SETTINGS after the preface), when the
    /// first-bytes watch is to be told the connection is up.
    mutating func frameReceived() -> Bool {
        if established { return false }
        established = true
        return true
    }

    /// A read ended: activity for the idle deadline once the connection has authenticated
    /// (``ProviderConnectionState/hasAuthenticated``), or when a fault rule answered one of the
    /// read's requests (`now` is read only then); and whether to flush what the read made us write.
    /// Before a provider has shown who it is, nothing else it sends counts: a connection that only
    /// pings, or only sends requests that are refused, is closed when the idle deadline has run from
    /// its start.
    mutating func readComplete(at now: @autoclosure () -> NIODeadline) -> Bool {
        if idle.isWatching, connection.hasAuthenticated || faultAnswered { idle.touch(at: now()) }
        faultAnswered = false
        if !needsFlush { return false }
        needsFlush = false
        return true
    }

    // MARK: Requests

    /// HEADERS on `id`: a new request, or trailers (nothing in them matters to APNs) that may end
    /// one. `now` is read only when a request stays open.
    mutating func headersReceived(
        _ headers: HPACKHeaders, endStream: Bool, on id: HTTP2StreamID, at now: @autoclosure () -> NIODeadline
    ) -> Action {
        // Streams are taken out of the table while they are worked on (and put back unless
        // complete): a copy would retain and release every field of the request.
        if var stream = streams.removeValue(forKey: id) {
            // Trailers: only their form matters.
            var check = RequestHeaderCheck(trailers: true)
            for (name, value, _) in headers where !check.accept(name: name, value: value) { return malformed(id) }
            if endStream {
                guard !stream.missesItsLength else { return malformed(id) }
                return Self.complete(&stream, on: id)
            }
            streams[id] = stream
            return .none
        }
        if id > highestStreamID { highestStreamID = id }
        // The request is read straight into its stream, and the stream taken out of an optional
        // into the table: a request built apart and moved in, or a local stream assigned to the
        // table, is copied (a retain and a release of each of its strings).
        var stream: Stream? = Stream(request: ProviderRequest(method: "", path: ""))
        var check = RequestHeaderCheck()
        for (name, value, _) in headers {
            guard check.accept(name: name, value: value) else { return malformed(id) }
            switch name {
            case ":method": stream!.request.method = value
            case ":path": stream!.request.path = value
            case ":authority": stream!.request.authority = value
            case ":scheme": break
            default: stream!.request.addHeader(name: name, value: value)
            }
        }
        guard check.isComplete else { return malformed(id) }
        stream!.contentLength = check.contentLength
        if endStream {
            guard !stream!.missesItsLength else { return malformed(id) }
            return Self.complete(&stream!, on: id)
        }
        stream!.openedAt = now()
        streams[id] = stream.take()
        if incompleteTimerArmed { return .none }
        incompleteTimerArmed = true
        return .arm(.incomplete, in: stallDeadline)
    }

    /// A request that is not well formed (its header block by ``RequestHeaderCheck``, or DATA that
    /// do not add up to its content-length): the stream is reset with PROTOCOL_ERROR (RFC 9113,
    /// section 8.1.1) and forgotten; the connection goes on.
    private mutating func malformed(_ id: HTTP2StreamID) -> Action {
        needsFlush = true
        return .reset(id, .protocolError)
    }

    /// DATA bytes on `id` (the flow-controlled bytes are counted by ``bytesReceived(_:)``).
    mutating func dataReceived(_ bytes: ByteBuffer, endStream: Bool, on id: HTTP2StreamID) -> Action {
        guard var stream = streams.removeValue(forKey: id) else { return .none }
        var bytes = bytes
        stream.received += bytes.readableBytes
        // More than its content-length, or less at its end: malformed (RFC 9113, section 8.1.1).
        if !stream.answered, let length = stream.contentLength, stream.received > length { return malformed(id) }
        if endStream, stream.missesItsLength { return malformed(id) }
        if stream.request.body.readableBytes + bytes.readableBytes > Self.bodyCap {
            stream.bodyLimitExceeded = true
        } else if stream.request.body.readableBytes == 0 {
            stream.request.body = bytes
        } else {
            stream.request.body.writeBuffer(&bytes)
        }
        var action = Action.none
        if stream.bodyLimitExceeded && !stream.answered {
            stream.answered = true
            action = .refuseTooLarge(stream.request, on: id)
        }
        guard endStream else {
            streams[id] = stream
            return action
        }
        if case .none = action { return Self.complete(&stream, on: id) }
        return action
    }

    /// The client reset stream `id` at `now`. Only a reset of a stream the gateway had not answered
    /// (its request still arriving, or being carried out) counts against ``UnansweredResets``:
    /// a reset after the answer costs nothing. Too many within the window, and the connection is
    /// given up with ENHANCE_YOUR_CALM (docs/listeners.md, "HTTP/2 abuse").
    mutating func streamReset(_ id: HTTP2StreamID, at now: NIODeadline) -> Action {
        let arriving = streams.removeValue(forKey: id).map { !$0.answered } ?? false
        guard arriving || carriedOut.contains(id), !closingAfterGoAway else { return .none }
        guard unansweredResets.record(at: now) else { return .none }
        let goAway = GoAway(
            lastStreamID: highestStreamID, errorCode: .enhanceYourCalm,
            debugData: "too many streams reset before their answers")
        let reason =
            "more than \(unansweredResets.limit) streams reset before their answers within \(unansweredResets.window.secondsText)"
        return .giveUp(goAway, reason: reason, closeOutput: closeAfterGoAway())
    }

    /// `length` flow-controlled bytes (a DATA frame's, padding included) arrived: the WINDOW_UPDATE
    /// increment to send for the connection once enough has come, else `nil`.
    mutating func bytesReceived(_ length: Int) -> Int? {
        unacknowledgedBytes += length
        guard unacknowledgedBytes >= Self.connectionWindowRefill else { return nil }
        defer { unacknowledgedBytes = 0 }
        needsFlush = true
        return unacknowledgedBytes
    }

    /// A stream's request is whole; the caller has taken it out of `streams` and gives it up here.
    private static func complete(_ stream: inout Stream, on id: HTTP2StreamID) -> Action {
        if stream.answered { return .none }
        // A body past the cap has always been answered by the DATA frame that passed it. The
        // request is swapped out, not copied (which would retain and release each of its strings).
        var request = ProviderRequest(method: "", path: "")
        swap(&request, &stream.request)
        return .decide(request, on: id)
    }

    // MARK: Answers

    /// Decides a whole request with the provider API, on this connection's authentication.
    mutating func decide(_ request: ProviderRequest, on id: HTTP2StreamID, with api: ProviderAPI, now: Date) -> Decided
    {
        let decision = api.handle(request, connection: &connection, now: now)
        if case .respond(let response, nil) = decision {
            // A fault rule's answer is activity even before authentication (only the operator sets
            // fault rules; a test bench's connection whose pushes they answer is busy), counted at
            // the read's end.
            if response.injected { faultAnswered = true }
            return .answer(response)
        }
        inFlight += 1
        carriedOut.insert(id)
        return .carryOut(decision)
    }

    /// An answer carried out came back (the handler writes it next): activity for the idle
    /// deadline once the connection has authenticated, or when a fault rule gave it (`injected`;
    /// `now` is read only then). Then, if ``isDrained``, the connection closes.
    mutating func answerReady(on id: HTTP2StreamID, at now: @autoclosure () -> NIODeadline, injected: Bool = false) {
        inFlight -= 1
        carriedOut.remove(id)
        if idle.isWatching, connection.hasAuthenticated || injected { idle.touch(at: now()) }
    }

    /// An answer carried out came back after the handler left the pipeline: it is dropped.
    mutating func answerDropped(on id: HTTP2StreamID) {
        inFlight -= 1
        carriedOut.remove(id)
    }

    /// The loop-turn flush ran.
    mutating func flushed() { needsFlush = false }

    /// The HEADERS of `response`, whose ``ProviderResponse/body`` is `body`, about to be written (a
    /// flush is due after it).
    mutating func answerHeaders(for response: ProviderResponse, body: String?) -> HPACKHeaders {
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
        if !response.warnings.isEmpty {
            // Few values, repeated (a long body warns on every push of a campaign): indexed, so that
            // after the first they cost a byte or two, not a Huffman-coded string each.
            headers.add(name: Self.warningsHeader, value: response.warnings.headerValue, indexing: .indexable)
        }
        if let body {
            headers.add(name: "content-type", value: "application/json")
            headers.add(name: "content-length", value: String(body.utf8.count), indexing: .nonIndexable)
        }
        needsFlush = true
        return headers
    }

    /// An answer's body was written on `id` at `now`. A body is flow-controlled: it is watched until
    /// it leaves (``bodySent(on:)``), since a client whose window never opens would otherwise hold
    /// the stream, and its memory, for as long as the connection lasts.
    mutating func bodyWritten(on id: HTTP2StreamID, at now: NIODeadline) -> Action {
        unsentBodies[id] = now
        return armStallTimer(now)
    }

    /// The body on `id` has left (or failed to).
    mutating func bodySent(on id: HTTP2StreamID) { unsentBodies[id] = nil }

    /// The stall timer fired at `now`.
    mutating func stallTimerFired(at now: NIODeadline) -> Action {
        stallTimerArmed = false
        guard let oldest = unsentBodies.values.min() else { return .none }
        guard now - oldest >= stallDeadline else { return armStallTimer(now) }
        let goAway = GoAway(
            lastStreamID: highestStreamID, errorCode: .enhanceYourCalm,
            debugData: "answers waited for a flow-control window that never opened")
        let reason = "\(unsentBodies.count) answers waited \(stallDeadline.secondsText) for a flow-control window"
        return .giveUp(goAway, reason: reason, closeOutput: closeAfterGoAway())
    }

    private mutating func armStallTimer(_ now: NIODeadline) -> Action {
        guard !stallTimerArmed, let oldest = unsentBodies.values.min() else { return .none }
        stallTimerArmed = true
        return .arm(.stall, in: oldest + stallDeadline - now)
    }

    /// The answer header naming a push's ``PushWarning``s (docs/provider-api.md).
    static let warningsHeader = "herald-warnings"

    static func statusText(_ status: Int) -> String {
        switch status {
        case 200: "200"
        case 400: "400"
        case 403: "403"
        case 410: "410"
        default: String(status)
        }
    }

    // MARK: Requests that never finish

    /// The incomplete-request timer fired at `now`: streams whose request has not arrived whole
    /// within the deadline are reset (CANCEL): a client cannot hold streams, and the gateway's
    /// memory, by opening them and never finishing.
    mutating func incompleteTimerFired(at now: NIODeadline) -> IncompleteAction {
        incompleteTimerArmed = false
        var oldestLeft: NIODeadline?
        var action = IncompleteAction()
        for (id, stream) in streams {
            if now - stream.openedAt >= stallDeadline {
                action.reset.append(id)
            } else if oldestLeft.map({ stream.openedAt < $0 }) ?? true {
                oldestLeft = stream.openedAt
            }
        }
        for id in action.reset { streams[id] = nil }
        action.close = !action.reset.isEmpty && isDrained
        if let oldestLeft {
            incompleteTimerArmed = true
            action.lookAgainIn = oldestLeft + stallDeadline - now
        }
        return action
    }

    // MARK: Draining and the idle timeout

    /// The gateway is stopping: GOAWAY `{"reason":"Shutdown"}`, finish the streams in flight, close.
    mutating func shutdownRequested() -> Action { beginDrain(reason: .shutdown) }

    /// A fault rule's GOAWAY (docs/admin-api.md): like a drain, with the rule's error code and debug
    /// data; streams after the highest seen are refused, the others answered, then the connection closes.
    mutating func faultGoAway(errorCode: UInt32, debugData: String) -> Action {
        guard !draining else { return .none }
        draining = true
        idle.stop()
        let goAway = GoAway(
            lastStreamID: highestStreamID, errorCode: HTTP2ErrorCode(networkCode: Int(errorCode)), debugData: debugData)
        return .goAway(goAway, close: isDrained)
    }

    /// The idle timer fired at `now`: GOAWAY `{"reason":"IdleTimeout"}` once the client has sent
    /// nothing for the whole timeout and no request is in flight; else when to look again. Before
    /// the connection has authenticated, requests under way do not keep it either (a client could
    /// otherwise keep a stream open all the time, each reset at the request deadline), and the
    /// GOAWAY lets them finish: the connection closes when the last has ended (``isDrained``).
    mutating func idleTimerFired(at now: NIODeadline) -> Action {
        guard !draining else { return .none }
        let busy = connection.hasAuthenticated && (inFlight > 0 || !streams.isEmpty)
        switch idle.timerFired(at: now, busy: busy) {
        case .idle: return beginDrain(reason: .idleTimeout)
        case .lookAgain(let delay): return .arm(.idle, in: delay)
        case .notWatching: return .none
        }
    }

    private mutating func beginDrain(reason: APNsReason) -> Action {
        guard !draining else { return .none }
        draining = true
        idle.stop()
        let goAway = GoAway(
            lastStreamID: highestStreamID, errorCode: .noError, debugData: #"{"reason":"\#(reason.rawValue)"}"#)
        return .goAway(goAway, close: isDrained)
    }

    /// A connection error from the HTTP/2 codec (which has sent its GOAWAY already): `true` when it
    /// is to be logged and our side closed after that GOAWAY, `false` when that is under way.
    mutating func protocolErrorCaught() -> Bool { closeAfterGoAway() }

    /// Marks the connection on its way out after a GOAWAY for an error: `true` the first time.
    private mutating func closeAfterGoAway() -> Bool {
        if closingAfterGoAway { return false }
        closingAfterGoAway = true
        return true
    }
}
