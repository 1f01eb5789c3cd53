import Foundation
import HeraldNIO
import HeraldRuntime
import NIOCore
import NIOHTTP1
import NIOHTTP2

/// What the provider API's HTTP/2 and HTTP/1.1 pipelines are made from.
struct ProviderPipeline: Sendable {
    /// SETTINGS the provider API advertises.
    static let settings: HTTP2Settings = [
        HTTP2Setting(parameter: .maxConcurrentStreams, value: 1000),
        HTTP2Setting(parameter: .initialWindowSize, value: 65535),
        HTTP2Setting(parameter: .maxHeaderListSize, value: 16384),
    ]

    /// swift-nio-http2 counts every RST_STREAM frame, 200 in 30 s by default, and closes the
    /// connection past that: it would cut off a client that resets streams after their answers (curl
    /// resets every one, APNSwift some; docs/listeners.md). The gateway counts the resets that cost it
    /// work itself (``UnansweredResets``); the codec's count stays as a backstop against a flood of
    /// frames, set where no well-behaved client can reach it: 5,000 within 10 ms. A client's resets of
    /// answered streams cannot outnumber the answers, and a connection has at most 1,000 streams open
    /// and gets at most some 100,000 answers a second (1,000 per 10 ms).
    static let streamConfiguration: NIOHTTP2Handler.StreamConfiguration = {
        var configuration = NIOHTTP2Handler.StreamConfiguration()
        configuration.streamResetFrameRateLimit.maximumCount = 5_000
        configuration.streamResetFrameRateLimit.windowLength = .milliseconds(10)
        return configuration
    }()

    let api: ProviderAPI
    let router: PushRouter
    let clock: any WallClock
    /// How long a started HTTP/1.1 request may take to arrive whole, and how long an HTTP/2 answer
    /// may wait for the client's flow-control window (the first-bytes deadline).
    var requestDeadline: TimeAmount = .seconds(10)
    /// Where a connection closed for a missed deadline is logged.
    var log: ListenerLog? = nil

    /// Adds the HTTP/2 handlers.
    func http2(_ pipeline: ChannelPipeline.SynchronousOperations, _ connection: ProviderConnectionState) throws {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.initialSettings = Self.settings
        // Requests' header blocks are checked in the pass that reads them (RequestHeaderCheck); the
        // answers are the gateway's own. The codec's check would be a second pass over every field.
        configuration.headerBlockValidation = .disabled
        // The same for content-length: the connection's state machine holds each request's body to
        // it. The codec would parse it again on every stream, and count every answer's too.
        configuration.contentLengthValidation = .disabled
        // One write below per turn of the loop, however often the handlers above flush: an answer
        // with a body is flushed on its own (ProviderHTTP2Handler.writeAnswer).
        try pipeline.addHandler(WriteCoalescingHandler(flushOncePerLoopTurn: true))
        try pipeline.addHandler(
            NIOHTTP2Handler(
                mode: .server, connectionConfiguration: configuration, streamConfiguration: Self.streamConfiguration))
        let machine = ProviderConnectionStateMachine(
            connection: connection, idleTimeout: api.idleTimeout, stallDeadline: requestDeadline)
        try pipeline.addHandler(
            ProviderHTTP2Handler(api: api, router: router, machine: machine, clock: clock, log: log))
    }

    /// Adds the HTTP/1.1 handlers. NIO's pipelining assistance hands on the next request as soon as
    /// an answer is written, not once it has left, so a client that sends requests and reads no
    /// answers would have them pile up in memory; NIO's `BackPressureHandler` stops reading while the
    /// connection's unsent answers are above its high-water mark (HTTP/2 has its flow control and
    /// the stall deadline instead).
    func http1(_ pipeline: ChannelPipeline.SynchronousOperations, _ connection: ProviderConnectionState) throws {
        try pipeline.addHandler(BackPressureHandler())
        try pipeline.configureHTTPServerPipeline(withPipeliningAssistance: true, withErrorHandling: true)
        try pipeline.addHandler(
            ProviderHTTP1Handler(
                api: api, router: router, connection: connection, clock: clock, requestDeadline: requestDeadline,
                log: log))
    }

    /// A sniffer that picks one of the two by the first bytes.
    func sniffer(listener: String, log: ListenerLog, connection: ProviderConnectionState) -> ProtocolSniffer {
        ProtocolSniffer(
            listener: listener, log: log, http1: { try http1($0, connection) }, http2: { try http2($0, connection) })
    }
}
