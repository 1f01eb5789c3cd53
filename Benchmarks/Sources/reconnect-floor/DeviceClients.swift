import Crypto
import Foundation
import HeraldCore
import HeraldDevice
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Synchronization

import Glibc

// The device side's layers, each a client of the floor's resumed gateway: the same connections,
// requests and answers as `connectAll` (the kernel's floor of a client: epoll and no framework),
// made with SwiftNIO as the device makes them.
//
//   nio       NIO's ClientBootstrap with the device's socket options (TCP_NODELAY, the source address
//             bound with IP_BIND_ADDRESS_NO_PORT) and one handler that writes the request and reads
//             the whole answer
//   nio-http  NIO's HTTP/1.1 encoder and decoder write the request and read the `101`; its
//             `Sec-WebSocket-Accept` is checked; the encoder and decoder are replaced by NIO's
//             WebSocket frame decoder and encoder, and the first frame read (as the device's
//             `LinkClientHandshake` does, without Herald's link handler)
//   herald    `GatewayLinkClient.connect` with the device's ticket, what `herald test-device` does
//             for each device it holds, on NIO's loops as the test device runs them (the executor
//             taken over: `takeOverExecutor()`)
//
// All run on one event loop: `herald test-device` puts every link of its process on one.

/// A client layer of the device side.
enum DeviceClient: String {
    case nio
    case nioHTTP = "nio-http"
    case herald
}

/// Runs Swift concurrency's jobs on NIO's event loops, as `herald test-device` does; called once,
/// from the main thread, before any task starts.
func takeOverExecutor() {
    _ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
}

/// Opens `count` connections with `client` (`nio` or `nio-http`), at most `inFlight` at a time, from
/// `sources` in turn; connection `index` carries `resume[index]`. Prints the same JSON line as
/// `connectAll` once every one has its answer, then holds them until standard input closes.
func connectWithNIO(
    _ client: DeviceClient, host: String, port: Int, count: Int, inFlight: Int, sources: [String], resume: [String]
) -> Never {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let clients = NIOClients(
        client, loop: group.next(), host: host, port: port, count: count, sources: sources, resume: resume)
    let clock = ContinuousClock()
    let begin = clock.now
    let cpuAtStart = processCPU()
    clients.loop.execute {
        for _ in 0..<min(inFlight, count) { clients.startNext() }
    }
    do {
        try clients.finished.futureResult.wait()
    } catch {
        stop("\(client.rawValue): \(error)")
    }
    let cpu = processCPU() - cpuAtStart
    let seconds = clock.now - begin
    guard let (retried, welcomed) = try? clients.loop.submit({ (clients.retried, clients.welcomed) }).wait() else {
        stop("\(client.rawValue): the event loop is gone")
    }
    report(connections: count, seconds: seconds, cpu: cpu, retried: retried, welcomed: welcomed)
}

/// Opens `count` connections with `GatewayLinkClient`, at most `inFlight` at a time, from `sources`
/// in turn; connection `index` is device `devices[index]` presenting its ticket. An answer is a
/// resumption only: a refused ticket would make the device sign with a key the gateway does not
/// know, and the connection fail. Prints the JSON line of `connectAll`, then holds the links.
func connectWithHerald(host: String, port: Int, count: Int, inFlight: Int, sources: [String], devices: [Device])
    -> Never
{
    let url = "ws://\(host):\(port)\(DeviceLink.path)"
    let key = P256.Signing.PrivateKey()
    let identities = devices.map { device in
        let identity = DeviceIdentity(deviceID: device.id, privateKey: key)
        identity.resumption.keep(device.ticket)
        return identity
    }
    let done = DispatchSemaphore(value: 0)
    let outcome = Mutex<(held: [GatewayLinkClient], retried: Int, failure: String?)>(([], 0, nil))
    let clock = ContinuousClock()
    let begin = clock.now
    let cpuAtStart = processCPU()
    Task {
        defer { done.signal() }
        await withTaskGroup(of: (Int, Result<GatewayLinkClient, any Error>).self) { group in
            var next = 0
            var held: [GatewayLinkClient] = []
            var retried = 0
            held.reserveCapacity(count)
            func connect(_ index: Int) async -> (Int, Result<GatewayLinkClient, any Error>) {
                // The device's identity, kept across reconnections as the test device keeps it: made
                // before the measuring starts, all with one key (never used: every ticket is accepted).
                let identity = identities[index]
                do {
                    return (
                        index,
                        .success(
                            try await GatewayLinkClient.connect(
                                url: url, identity: identity, sourceAddress: sources[index % sources.count]))
                    )
                } catch {
                    return (index, .failure(error))
                }
            }
            while next < min(inFlight, count) {
                let index = next
                group.addTask { await connect(index) }
                next += 1
            }
            while let (index, result) = await group.next() {
                switch result {
                case .success(let client):
                    held.append(client)
                    if next < count {
                        let index = next
                        group.addTask { await connect(index) }
                        next += 1
                    }
                case .failure(let error):
                    retried += 1
                    guard retried <= count else {
                        outcome.withLock { $0.failure = "device \(index): \(error)" }
                        return
                    }
                    group.addTask { await connect(index) }
                }
            }
            let kept = held
            outcome.withLock {
                $0.held = kept
                $0.retried = retried
            }
        }
    }
    done.wait()
    let (held, retried, failure) = outcome.withLock { $0 }
    if let failure { stop("herald: \(failure)") }
    report(
        connections: held.count, seconds: clock.now - begin, cpu: processCPU() - cpuAtStart, retried: retried,
        welcomed: held.count)
}

/// Prints a client's report (the line `connectAll` prints) and holds its connections until
/// standard input closes.
private func report(connections: Int, seconds duration: Duration, cpu: Double, retried: Int, welcomed: Int) -> Never {
    let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    say(
        "{\"connections\":\(connections),\"seconds\":\(seconds),\"cpu\":\(cpu),\"retried\":\(retried),"
            + "\"welcomed\":\(welcomed)}")
    while getchar() != EOF {}
    exit(0)
}

/// The NIO clients' connections, all on `loop` (every property is read and written there only).
final class NIOClients: @unchecked Sendable {
    let client: DeviceClient
    let loop: any EventLoop
    let host: String
    let port: Int
    let count: Int
    let destination: SocketAddress
    let sources: [SocketAddress]
    let resume: [String]
    let finished: EventLoopPromise<Void>
    var started = 0
    var answered = 0
    var welcomed = 0
    var retried = 0
    var held: [any Channel] = []

    init(
        _ client: DeviceClient, loop: any EventLoop, host: String, port: Int, count: Int, sources: [String],
        resume: [String]
    ) {
        self.client = client
        self.loop = loop
        self.host = host
        self.port = port
        self.count = count
        do {
            destination = try SocketAddress(ipAddress: host, port: port)
            self.sources = try sources.map { try SocketAddress(ipAddress: $0, port: 0) }
        } catch {
            stop("\(error)")
        }
        self.resume = resume
        finished = loop.makePromise()
        held.reserveCapacity(count)
    }

    /// Opens the next connection not yet begun.
    func startNext() {
        open(started)
        started += 1
    }

    /// Opens connection `index`, with the device's socket options and handlers.
    func open(_ index: Int) {
        let (client, key, resumeValue, host, port) = (client, Wire.key(index), resume[index], host, port)
        ClientBootstrap(group: loop)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .bind(to: sources[index % sources.count])
            .channelOption(
                ChannelOptions.Types.SocketOption(
                    level: NIOBSDSocket.OptionLevel(rawValue: CInt(IPPROTO_IP)),
                    name: NIOBSDSocket.Option(rawValue: CInt(IP_BIND_ADDRESS_NO_PORT))),
                value: 1
            )
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    switch client {
                    case .nio:
                        let request = Wire.request(host: host, port: port, key: key, resume: resumeValue)
                        try sync.addHandler(AnswerReader(request: request) { self.answered(channel, welcome: $0) })
                    default:
                        let encoder = HTTPRequestEncoder()
                        let decoder = ByteToMessageHandler(HTTPResponseDecoder(leftOverBytesStrategy: .forwardBytes))
                        try sync.addHandlers(encoder, decoder)
                        try sync.addHandler(
                            UpgradeClient(
                                authority: "\(host):\(port)", key: key, resume: resumeValue, encoder: encoder,
                                decoder: decoder
                            ) { self.answered(channel, welcome: $0) })
                    }
                }
            }
            .connect(to: destination)
            .whenFailure { [self] _ in
                retried += 1
                open(index)
            }
    }

    /// A connection has its whole answer (`welcome`: its first frame is the link's `welcome`).
    func answered(_ channel: any Channel, welcome: Bool) {
        answered += 1
        if welcome { welcomed += 1 }
        held.append(channel)
        if started < count {
            startNext()
        } else if answered == count {
            finished.succeed()
        }
    }
}

/// The `nio` layer's handler: writes the request as the connection opens and reads the bytes
/// until the whole answer is there.
final class AnswerReader: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let request: [UInt8]
    let done: (Bool) -> Void
    var received: ByteBuffer?
    var finished = false

    init(request: [UInt8], done: @escaping (Bool) -> Void) {
        self.request = request
        self.done = done
    }

    func channelActive(context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: request)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !finished else { return }
        let bytes = joined(received, unwrapInboundIn(data))
        let welcome: Bool? = bytes.withUnsafeReadableBytes { answer in
            Wire.answerLength(answer) == nil ? nil : Wire.isWelcome(answer)
        }
        guard let welcome else {
            received = bytes
            return
        }
        finished = true
        received = nil
        done(welcome)
    }
}

/// The `nio-http` layer's handler: the device's handshake made of NIO's parts. NIO's encoder writes
/// the request head; at the end of NIO's decoding of the answer its `101` and accept are checked,
/// the encoder and decoder are taken out and NIO's WebSocket frame decoder and encoder put in,
/// with a handler that reads the first frame; what the decoder read past the `101` is replayed.
final class UpgradeClient: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart
    let head: HTTPRequestHead
    let expectedAccept: String
    let encoder: HTTPRequestEncoder
    let decoder: ByteToMessageHandler<HTTPResponseDecoder>
    let done: (Bool) -> Void
    var response: HTTPResponseHead?
    var upgraded = false
    var leftOver: [NIOAny] = []

    init(
        authority: String, key: String, resume: String, encoder: HTTPRequestEncoder,
        decoder: ByteToMessageHandler<HTTPResponseDecoder>, done: @escaping (Bool) -> Void
    ) {
        head = HTTPRequestHead(
            version: .http1_1, method: .GET, uri: DeviceLink.path,
            headers: HTTPHeaders([
                ("host", authority), ("upgrade", "websocket"), ("connection", "upgrade"), ("sec-websocket-key", key),
                ("sec-websocket-version", "13"), ("content-length", "0"), (DeviceLink.upgradeResumeHeader, resume),
            ]))
        expectedAccept = DeviceLink.webSocketAccept(key: key)
        self.encoder = encoder
        self.decoder = decoder
        self.done = done
    }

    func channelActive(context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !upgraded else {
            leftOver.append(data)
            return
        }
        switch unwrapInboundIn(data) {
        case .head(let head): response = head
        case .body: break
        case .end:
            upgraded = true
            guard let response, response.status == .switchingProtocols,
                response.headers["sec-websocket-accept"] == [expectedAccept]
            else {
                stop("nio-http: the answer is no 101 accepting the request's key")
            }
            let sync = context.pipeline.syncOperations
            sync.removeHandler(encoder, promise: nil)
            sync.removeHandler(decoder).assumeIsolated().whenComplete { [self] result in
                do {
                    try result.get()
                    try sync.addHandlers([
                        ByteToMessageHandler(WebSocketFrameDecoder()), WebSocketFrameEncoder(), FirstFrame(done: done),
                    ])
                } catch {
                    stop("nio-http: \(error)")
                }
                let replay = leftOver
                leftOver = []
                for data in replay { context.fireChannelRead(data) }
                if !replay.isEmpty { context.fireChannelReadComplete() }
                sync.removeHandler(context: context, promise: nil)
            }
        }
    }
}

/// Reads an upgraded connection's first frame, then drops what follows.
final class FirstFrame: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    let done: (Bool) -> Void
    var read = false

    init(done: @escaping (Bool) -> Void) { self.done = done }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !read else { return }
        read = true
        let frame = unwrapInboundIn(data)
        let welcome = frame.opcode == .text && frame.data.withUnsafeReadableBytes { Wire.isWelcome($0) }
        done(welcome)
    }
}
