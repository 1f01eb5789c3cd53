import Foundation
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// The connections a node keeps to the other nodes for forwarding (docs/cluster.md): HTTP/2 over
/// TLS, one per other node and event loop, opened on first use and again after one closes. A
/// request sent from a provider connection's loop goes out on that loop's connection, so forwarded
/// pushes spread over the threads as the providers' connections do.
final class ForwardingClient: Sendable {
    let tls: NIOSSLContext
    let group: any EventLoopGroup
    let connectTimeout: TimeAmount
    private let connections = Mutex<[Key: ForwardingConnection]>([:])
    private let stopped = Mutex(false)
    /// The group's loops: a request from any other loop goes out on one of these.
    private let loops: Set<ObjectIdentifier>

    struct Key: Hashable {
        var address: String
        var loop: ObjectIdentifier
    }

    /// A client on `group` whose TLS is `tls`.
    init(tls: NIOSSLContext, group: any EventLoopGroup, connectTimeout: TimeAmount) {
        self.tls = tls
        self.group = group
        self.connectTimeout = connectTimeout
        var loops = Set<ObjectIdentifier>()
        for loop in group.makeIterator() { loops.insert(ObjectIdentifier(loop)) }
        self.loops = loops
    }

    /// Sends `request` to the node at `address` (`https://host:port`), on `loop`'s connection when
    /// it is one of the group's, else on any.
    func send(_ request: ForwardingRequest, to address: String, on loop: (any EventLoop)?) {
        if stopped.withLock({ $0 }) {
            return request.completion(.failure(ForwardingFailure(description: "forwarding has stopped")))
        }
        let loop = loop.flatMap { loops.contains(ObjectIdentifier($0)) ? $0 : nil } ?? group.next()
        let key = Key(address: address, loop: ObjectIdentifier(loop))
        let connection = connections.withLock { connections in
            if let existing = connections[key] { return existing }
            let created = ForwardingConnection(address: address, loop: loop, tls: tls, connectTimeout: connectTimeout)
            connections[key] = created
            return created
        }
        if loop.inEventLoop {
            connection.send(request)
        } else {
            loop.execute { connection.send(request) }
        }
    }

    /// Closes every connection (what is in flight fails) and refuses what comes next.
    func shutdown() async {
        stopped.withLock { $0 = true }
        let all = connections.withLock { connections in
            defer { connections = [:] }
            return Array(connections.values)
        }
        for connection in all {
            try? await connection.loop.submit { connection.close() }.get()
        }
    }
}

/// One connection to one node on one event loop, touched only on that loop: opened when a request
/// needs it, and again after it closed. Requests that come while it opens wait for it.
final class ForwardingConnection: @unchecked Sendable {
    enum State {
        case idle
        case connecting([ForwardingRequest])
        case ready(ForwardingHandler, any Channel)
    }

    let address: String
    let loop: any EventLoop
    let tls: NIOSSLContext
    let connectTimeout: TimeAmount
    private var state = State.idle

    init(address: String, loop: any EventLoop, tls: NIOSSLContext, connectTimeout: TimeAmount) {
        self.address = address
        self.loop = loop
        self.tls = tls
        self.connectTimeout = connectTimeout
    }

    func send(_ request: ForwardingRequest) {
        loop.preconditionInEventLoop()
        switch state {
        case .ready(let handler, _) where !handler.isClosed:
            handler.send(request)
        case .connecting(var queued):
            queued.append(request)
            state = .connecting(queued)
        case .idle, .ready:
            state = .connecting([request])
            connect()
        }
    }

    func close() {
        loop.preconditionInEventLoop()
        switch state {
        case .ready(_, let channel): channel.close(promise: nil)
        case .connecting(let queued):
            for request in queued {
                request.completion(.failure(ForwardingFailure(description: "forwarding has stopped")))
            }
        case .idle: break
        }
        state = .idle
    }

    private func connect() {
        guard let url = URL(string: address), url.scheme == "https", let host = url.host, let port = url.port else {
            return failQueued("not an https://host:port address: \(address)")
        }
        let tls = self.tls
        let authority = "\(host.contains(":") ? "[\(host)]" : host):\(port)"
        let handler = ForwardingHandler(authority: authority)
        // The bootstrap's group is this loop: the channel is set up on it.
        let bound = NIOLoopBound(handler, eventLoop: loop)
        ClientBootstrap(group: loop)
            .connectTimeout(connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: nil))
                    try sync.addHandler(NIOHTTP2Handler(mode: .client))
                    try sync.addHandler(bound.value)
                }
            }
            .connect(host: host, port: port)
            .assumeIsolated()
            .whenComplete { [self] result in
                switch result {
                case .success(let channel):
                    guard case .connecting(let queued) = state else {
                        // Closed meanwhile (the gateway is stopping).
                        channel.close(promise: nil)
                        return
                    }
                    state = .ready(handler, channel)
                    channel.closeFuture.assumeIsolated().whenComplete { [self] _ in
                        if case .ready(let current, _) = state, current === handler { state = .idle }
                    }
                    for request in queued { handler.send(request) }
                case .failure(let error):
                    failQueued("could not connect to \(address): \(error)")
                }
            }
    }

    private func failQueued(_ why: String) {
        guard case .connecting(let queued) = state else { return }
        state = .idle
        for request in queued { request.completion(.failure(ForwardingFailure(description: why))) }
    }
}
