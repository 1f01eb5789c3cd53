import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL

/// One connection to one endpoint on one event loop, touched only on that loop: opened when a request
/// needs it, and again after it closed. Requests that come while it opens wait for it; requests a
/// connection going away did not take go to its successor.
final class HTTP2ClientConnection: @unchecked Sendable {
    enum State {
        case idle
        case connecting([PendingRequest])
        case ready(HTTP2ClientHandler, any Channel)
        case stopped
    }

    /// How many connections may refuse one request (GOAWAY) before it fails.
    static let maximumOffers = 3

    let endpoint: HTTP2Endpoint
    let loop: any EventLoop
    let tls: NIOSSLContext?
    let connectTimeout: TimeAmount
    let serverNameIndication: Bool
    private var state = State.idle

    init(
        endpoint: HTTP2Endpoint, loop: any EventLoop, tls: NIOSSLContext?, connectTimeout: TimeAmount,
        serverNameIndication: Bool
    ) {
        self.endpoint = endpoint
        self.loop = loop
        self.tls = tls
        self.connectTimeout = connectTimeout
        self.serverNameIndication = serverNameIndication
    }

    func send(_ pending: PendingRequest) {
        loop.preconditionInEventLoop()
        switch state {
        case .ready(let handler, _) where !handler.isClosed:
            handler.send(pending)
        case .connecting(var queued):
            queued.append(pending)
            state = .connecting(queued)
        case .idle, .ready:
            state = .connecting([pending])
            connect()
        case .stopped:
            // Never from inside `send`: a caller that sends again from its completion would recurse.
            loop.execute { pending.completion(.failure(HTTP2ClientFailure(.stopped, "the client has shut down"))) }
        }
    }

    /// A request a connection of this one's did not take: offered again, to a new connection.
    private func offerAgain(_ pending: PendingRequest) {
        var pending = pending
        pending.offers += 1
        guard pending.offers <= Self.maximumOffers else {
            return pending.completion(
                .failure(
                    HTTP2ClientFailure(.refused, "\(endpoint) went away \(Self.maximumOffers) times before taking it")))
        }
        send(pending)
    }

    func close() {
        loop.preconditionInEventLoop()
        switch state {
        case .ready(_, let channel): channel.close(promise: nil)
        case .connecting(let queued):
            for pending in queued {
                pending.completion(.failure(HTTP2ClientFailure(.stopped, "the client has shut down")))
            }
        case .idle, .stopped: break
        }
        state = .stopped
    }

    private func connect() {
        guard endpoint.tls == false || tls != nil else {
            return failQueued(.connect, "no TLS configured for \(endpoint)")
        }
        let tls = endpoint.tls ? self.tls : nil
        let endpoint = self.endpoint
        // SNI names a host, never an address.
        let hostname = serverNameIndication && !Self.isAddress(endpoint.host) ? endpoint.host : nil
        let bound = NIOLoopBound(self, eventLoop: loop)
        let handler = HTTP2ClientHandler(endpoint: endpoint) { pending in bound.value.offerAgain(pending) }
        let boundHandler = NIOLoopBound(handler, eventLoop: loop)
        // The bootstrap's group is this loop: the channel is set up on it.
        ClientBootstrap(group: loop)
            .connectTimeout(connectTimeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if let tls { try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: hostname)) }
                    // A turn's requests, two frames each, reach TLS as one buffer per 8 KiB, not two
                    // records per request, though the client flushes each request
                    // (HTTP2ClientHandler.start); the first 8 KiB leave while the rest are made.
                    try sync.addHandler(WriteCoalescingHandler(flushOncePerLoopTurn: true))
                    // The requests are the client's own, built well formed (their content-length is
                    // their body's); of the answers only a few fields are read, and a body is read as
                    // it comes, up to the request's limit. The codec's checks would be a pass over
                    // every field each way and a content-length parsed and tracked on every stream.
                    try sync.addHandler(
                        NIOHTTP2Handler(
                            mode: .client, headerBlockValidation: .disabled, contentLengthValidation: .disabled))
                    try sync.addHandler(boundHandler.value)
                }
            }
            .connect(host: endpoint.host, port: endpoint.port)
            .assumeIsolated()
            .whenComplete { [self] result in
                switch result {
                case .success(let channel):
                    guard case .connecting(let queued) = state else {
                        // Shut down meanwhile.
                        channel.close(promise: nil)
                        return
                    }
                    state = .ready(handler, channel)
                    channel.closeFuture.assumeIsolated().whenComplete { [self] _ in
                        if case .ready(let current, _) = state, current === handler { state = .idle }
                    }
                    for pending in queued { handler.send(pending) }
                case .failure(let error):
                    failQueued(.connect, "could not connect to \(endpoint): \(ConnectFailure.describe(error))")
                }
            }
    }

    private func failQueued(_ kind: HTTP2ClientFailure.Kind, _ why: String) {
        guard case .connecting(let queued) = state else { return }
        state = .idle
        for pending in queued { pending.completion(.failure(HTTP2ClientFailure(kind, why))) }
    }

    static func isAddress(_ host: String) -> Bool {
        host.contains(":") || host.split(separator: ".").count == 4 && host.allSatisfy { $0.isNumber || $0 == "." }
    }
}
