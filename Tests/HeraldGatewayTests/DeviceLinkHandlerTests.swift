import Crypto
import Foundation
import HeraldCore
import HeraldRuntime
import Logging
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Synchronization
import Testing

@testable import HeraldGateway

/// The handler carries out its machine's actions on a real channel: the timers run on the event
/// loop (here an embedded one, whose time moves only when the test moves it) and the frames are
/// written. What the link decides is tested as values in `DeviceLinkStateMachineTests`.
@Suite struct DeviceLinkHandlerTests {
    @Test func theLivenessTimerRunsOnTheLoopAndItsPingAndCloseAreWritten() async throws {
        let f = try await Fixture(now: Date())
        var configuration = DeviceLinkServer.Configuration()
        configuration.idleTimeout = .seconds(600)
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: .init()))
        let service = DeviceLinkService.quiet(f, router: router, configuration: configuration)
        let (channel, handler, challenge) = try await DeviceLinkHandler.onTestChannel(service)
        #expect(challenge?.opcode == .text)
        // As if the device had just been authenticated.
        handler.machine.phase = .online(device: "phone")
        handler.run(handler.machine.startLiveness(now: channel.embeddedEventLoop.now))

        channel.embeddedEventLoop.advanceTime(by: .seconds(299))
        #expect(try channel.readOutbound(as: WebSocketFrame.self) == nil)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(try channel.readOutbound(as: WebSocketFrame.self)?.opcode == .ping)
        channel.embeddedEventLoop.advanceTime(by: .seconds(300))
        let close = try #require(try channel.readOutbound(as: WebSocketFrame.self))
        #expect(close.opcode == .connectionClose && close.unmaskedData.getInteger(at: 0, as: UInt16.self) == 1001)
        #expect(!channel.isActive)
        #expect(handler.machine.phase == .closed)
    }

    /// A device that sends requests faster than the store takes them: past
    /// ``DeviceLinkHandler/requestsInFlight`` the link reads nothing more (its requests wait in its
    /// socket, not in the gateway's tasks), and reads again as they are answered. On a testing
    /// channel whose loop the requests' tasks can come back to from their own threads.
    @Test func aLinkReadsNoMoreWhileItsRequestsAreAtTheLimit() async throws {
        let store = GatedStore(try SQLiteGatewayStore(path: nil))
        let directory = try await GatewayDirectory.open(
            store: store, issuer: TokenIssuer(secret: Array(repeating: 7, count: 32)))
        try await directory.putTeam(id: Fixture.team)
        try await directory.putApp(bundleID: Fixture.bundle, teamID: Fixture.team)
        _ = try await directory.registerDevice(id: "phone", now: Date())
        let router = PushRouter(committer: GroupCommitter(store: store, policy: .init()))
        let service = DeviceLinkService(
            directory: directory, links: router.links, offline: router.offline, configuration: .init(),
            logger: .silent, log: ListenerLog(logger: .silent), clock: SystemClock())
        let channel = NIOAsyncTestingChannel()
        let loop = channel.testingEventLoop
        let reads = CountedReads()
        try await channel.pipeline.addHandler(reads)
        try await loop.executeInContext {
            try channel.pipeline.syncOperations.addHandler(DeviceLinkHandler(service: service))
        }
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1))
        _ = try await channel.waitForOutboundWrite(as: WebSocketFrame.self)  // the challenge
        @Sendable func link() throws -> DeviceLinkHandler {
            try channel.pipeline.syncOperations.handler(type: DeviceLinkHandler.self)
        }
        try await loop.executeInContext { try link().machine.phase = .online(device: "phone") }
        defer { store.registrations.open() }
        store.registrations.close()

        let limit = DeviceLinkHandler.requestsInFlight
        func register(_ n: Int) async throws {
            let text = LinkMessage.register(
                request: n, topic: Fixture.bundle, environment: .development, installation: n
            ).encoded()
            try await channel.writeInbound(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(bytes: text)))
        }
        func read() async throws { try await loop.executeInContext { channel.pipeline.read() } }

        for n in 0..<(limit - 1) { try await register(n) }
        let before = reads.count
        try await read()
        #expect(reads.count == before + 1, "below the limit the link reads")
        try await register(limit - 1)
        await store.registrations.arrivals.reached(limit)
        #expect(try await loop.executeInContext { try link().working } == limit)
        try await read()
        try await read()
        #expect(reads.count == before + 1, "at the limit the read waits")

        // Answered: the read held back is made, once.
        store.registrations.open()
        for _ in 0..<limit {
            let frame = try await channel.waitForOutboundWrite(as: WebSocketFrame.self)
            let message = try LinkMessage(json: Data(frame.unmaskedData.readableBytesView))
            guard case .token = message else { throw TestFailure("not a token: \(message)") }
        }
        #expect(try await loop.executeInContext { try link().working } == 0)
        #expect(reads.count == before + 2)
        try await read()
        #expect(reads.count == before + 3, "and reads go on as before")

        // One socket read may bring many requests at once: past the limit they wait, in order, and
        // the link reads no more until they are carried out.
        store.registrations.close()
        let burst = 100..<120
        try await loop.executeInContext {
            for n in burst {
                let text = LinkMessage.register(
                    request: n, topic: Fixture.bundle, environment: .development, installation: n
                ).encoded()
                channel.pipeline.syncOperations.fireChannelRead(
                    NIOAny(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(bytes: text))))
            }
        }
        await store.registrations.arrivals.reached(2 * limit)
        #expect(try await loop.executeInContext { try link().working } == limit)
        #expect(try await loop.executeInContext { try link().heldFrames.count } == burst.count - limit)
        try await read()
        #expect(reads.count == before + 3, "while frames wait the read waits")
        store.registrations.open()
        var answered: Set<Int> = []
        for _ in burst {
            let frame = try await channel.waitForOutboundWrite(as: WebSocketFrame.self)
            let message = try LinkMessage(json: Data(frame.unmaskedData.readableBytesView))
            guard case .token(let request?, _) = message else { throw TestFailure("not a token: \(message)") }
            answered.insert(request)
        }
        #expect(answered == Set(burst))
        #expect(try await loop.executeInContext { try link().working } == 0)
        #expect(try await loop.executeInContext { try link().heldFrames.isEmpty })
        #expect(reads.count == before + 4)
    }

    /// A new device's `hello` whose registration the store does not finish: the link is refused at
    /// the authentication deadline, on the loop's clock, and the registration's late end welcomes
    /// no one. (The deadline's logic is in `DeviceLinkStateMachineTests`.)
    @Test func aHelloTheStoreDoesNotFinishIsRefusedAtTheAuthenticationDeadline() async throws {
        let store = GatedStore(try SQLiteGatewayStore(path: nil))
        let directory = try await GatewayDirectory.open(
            store: store, issuer: TokenIssuer(secret: Array(repeating: 7, count: 32)))
        let router = PushRouter(committer: GroupCommitter(store: store, policy: .init()))
        var configuration = DeviceLinkConfiguration()
        configuration.authenticationTimeout = .seconds(30)
        let service = DeviceLinkService(
            directory: directory, links: router.links, offline: router.offline, configuration: configuration,
            logger: .silent, log: ListenerLog(logger: .silent), clock: SystemClock())
        let channel = NIOAsyncTestingChannel()
        let loop = channel.testingEventLoop
        let link = try await loop.executeInContext {
            let handler = DeviceLinkHandler(service: service)
            try channel.pipeline.syncOperations.addHandler(handler)
            return NIOLoopBound(handler, eventLoop: loop)
        }
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1))
        let challenge = try await channel.waitForOutboundWrite(as: WebSocketFrame.self)
        guard case .challenge(let nonce) = try LinkMessage(json: Data(challenge.unmaskedData.readableBytesView)) else {
            throw TestFailure("no challenge")
        }
        defer { store.devices.open() }
        store.devices.close()
        let key = P256.Signing.PrivateKey()
        let signature = try key.signature(for: DeviceLink.signedBytes(nonce: nonce)).rawRepresentation
        let hello = LinkMessage.hello(
            device: "tablet", publicKey: key.publicKey.x963Representation, signature: signature)
        try await channel.writeInbound(
            WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(bytes: hello.encoded())))
        await store.devices.arrivals.reached(1)

        await loop.advanceTime(by: .seconds(29))
        #expect(try await channel.readOutbound(as: WebSocketFrame.self) == nil)
        #expect(channel.isActive)
        await loop.advanceTime(by: .seconds(1))
        let refusal = try #require(try await channel.readOutbound(as: WebSocketFrame.self))
        let message = try LinkMessage(json: Data(refusal.unmaskedData.readableBytesView))
        #expect(
            message
                == .error(
                    request: nil, code: .internal, message: "the gateway could not check the hello within 30 s"))
        let close = try #require(try await channel.readOutbound(as: WebSocketFrame.self))
        #expect(close.opcode == .connectionClose && close.unmaskedData.getInteger(at: 0, as: UInt16.self) == 1008)

        // The store finishes after all: the device is registered, but this link welcomes no one.
        store.devices.open()
        // The check's task ends on a thread of its own and comes back to the loop.
        try await waitUntil("the late check back on the loop") {
            try await loop.executeInContext { link.value.working == 0 }
        }
        #expect(directory.registry.device("tablet") != nil)
        #expect(try await channel.readOutbound(as: WebSocketFrame.self) == nil)
        #expect(!router.links.isOnline("tablet"))
    }

    @Test func theAcknowledgementDeadlineAndTheQoSWakeUpRunOnTheLoop() async throws {
        let f = try await Fixture(now: Date())
        var configuration = DeviceLinkServer.Configuration()
        configuration.acknowledgementTimeout = .seconds(2)
        configuration.qos = .init(batchWindow: .seconds(1))
        configuration.idleTimeout = nil
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: .init()))
        let service = DeviceLinkService.quiet(f, router: router, configuration: configuration)
        let (channel, handler, _) = try await DeviceLinkHandler.onTestChannel(service)
        handler.machine.phase = .online(device: "phone")
        handler.machine.backlogLoaded = true

        let outcomes = Mutex<[LinkOutcome]>([])
        let push = LinkMachineDriver.push("a", priority: .normal)
        handler.offer(LinkOffer(push: push, expiresAt: Date().addingTimeInterval(60), background: false)) { outcome in
            outcomes.withLock { $0.append(outcome) }
        }
        // Held for its batch window: answered `hold`, written when the window closes.
        #expect(outcomes.withLock { $0 } == [.hold])
        #expect(try channel.readOutbound(as: WebSocketFrame.self) == nil)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        let frame = try #require(try channel.readOutbound(as: WebSocketFrame.self))
        #expect(try LinkMessage(json: Data(frame.unmaskedData.readableBytesView)) == .push(push))

        // A direct one not acknowledged is answered at its deadline, not before.
        let urgent = LinkMachineDriver.push("b")
        handler.offer(LinkOffer(push: urgent, expiresAt: Date().addingTimeInterval(60), background: false)) { outcome in
            outcomes.withLock { $0.append(outcome) }
        }
        channel.embeddedEventLoop.run()  // the flush at the end of the loop's turn
        #expect(try channel.readOutbound(as: WebSocketFrame.self) != nil)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1999))
        #expect(outcomes.withLock { $0.count } == 1)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        guard case .notAcknowledged(let deliveredAt) = outcomes.withLock({ $0.last }) else {
            Issue.record("not answered at the deadline")
            return
        }
        #expect(deliveredAt != nil)
    }

    /// A stopping gateway's `goaway` and close frame leave in one flush (one write to the socket per
    /// link, where there were two), and so do a refusal's `error` and close frame.
    @Test func aGoAwayAndItsCloseFrameLeaveInOneFlush() async throws {
        let f = try await Fixture(now: Date())
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: .init()))
        let service = DeviceLinkService.quiet(f, router: router, configuration: DeviceLinkServer.Configuration())
        for refusal in [false, true] {
            let flushes = FlushCounter()
            let (channel, handler, _) = try await DeviceLinkHandler.onTestChannel(service, below: [flushes])
            handler.machine.phase = .online(device: "phone")
            flushes.log.removeAll()
            if refusal {
                handler.refuse(code: .replaced, message: "the device connected again")
            } else {
                handler.goAway()
            }
            // Both frames were written before the one flush.
            #expect(flushes.log == ["write", "write", "flush"], "\(flushes.log)")
            let message = try #require(try channel.readOutbound(as: WebSocketFrame.self))
            let decoded = try LinkMessage(json: Data(message.unmaskedData.readableBytesView))
            if refusal {
                guard case .error(_, .replaced, _) = decoded else {
                    Issue.record("not an error: \(decoded)")
                    continue
                }
            } else {
                guard case .goAway = decoded else {
                    Issue.record("not a goaway: \(decoded)")
                    continue
                }
            }
            let close = try #require(try channel.readOutbound(as: WebSocketFrame.self))
            #expect(close.opcode == .connectionClose)
            #expect(close.unmaskedData.getInteger(at: 0, as: UInt16.self) == (refusal ? 1008 : 1001))
            #expect(!channel.isActive)
        }
    }

    /// The pushes written in one turn of the loop reach the channel as one write of their frames,
    /// at the turn's flush; anything else written meanwhile goes after the pushes written before it.
    @Test func theTurnsPushesLeaveAsOneWriteInOrder() async throws {
        let f = try await Fixture(now: Date())
        var configuration = DeviceLinkServer.Configuration()
        configuration.idleTimeout = nil
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: .init()))
        let service = DeviceLinkService.quiet(f, router: router, configuration: configuration)
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(WebSocketFrameEncoder())
        let handler = DeviceLinkHandler(service: service)
        try channel.pipeline.syncOperations.addHandler(handler)
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        while try channel.readOutbound(as: ByteBuffer.self) != nil {}  // the challenge
        handler.machine.phase = .online(device: "phone")
        handler.machine.backlogLoaded = true

        func framed(_ push: LinkPush) -> ByteBuffer {
            var writer = JSONWriter(capacity: 256)
            push.writeMessage(to: &writer)
            return DeviceLinkHandler.textFrame(writer.bytes, allocator: channel.allocator)
        }
        let pushes = ["a", "b", "c"].map { LinkMachineDriver.push($0) }
        for push in pushes {
            handler.offer(LinkOffer(push: push, expiresAt: Date().addingTimeInterval(60), background: false)) { _ in }
        }
        // Nothing leaves before the turn's flush.
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        channel.embeddedEventLoop.run()
        var expected = channel.allocator.buffer(capacity: 1024)
        for push in pushes {
            var frame = framed(push)
            expected.writeBuffer(&frame)
        }
        #expect(try channel.readOutbound(as: ByteBuffer.self) == expected)
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)

        // A push, then a message written at once: the push goes first, though its flush is to come.
        let d = LinkMachineDriver.push("d")
        handler.offer(LinkOffer(push: d, expiresAt: Date().addingTimeInterval(60), background: false)) { _ in }
        handler.send(.goAway(reconnectWithin: 5))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == framed(d))
        var message = channel.allocator.buffer(capacity: 64)
        while var part = try channel.readOutbound(as: ByteBuffer.self) { message.writeBuffer(&part) }
        let text = message.getBytes(at: 2, length: message.readableBytes - 2) ?? []
        #expect(message.getInteger(at: 0, as: UInt8.self) == 0x81)
        #expect(try LinkMessage(json: Data(text)) == .goAway(reconnectWithin: 5))
        channel.embeddedEventLoop.run()
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
    }

    /// A `push` is written below the WebSocket encoder, already framed: byte for byte what the
    /// encoder writes for the same text, at every length form (7-bit, 16-bit and 64-bit lengths).
    @Test func aPushFramedByHandIsWhatTheEncoderWrites() throws {
        for count in [0, 1, 125, 126, 127, 65_535, 65_536, 70_000] {
            let payload = (0..<count).map { UInt8(truncatingIfNeeded: $0 % 94 + 33) }
            let channel = EmbeddedChannel(handler: WebSocketFrameEncoder())
            var data = channel.allocator.buffer(capacity: count)
            data.writeBytes(payload)
            try channel.writeOutbound(WebSocketFrame(fin: true, opcode: .text, data: data))
            var encoded = channel.allocator.buffer(capacity: count + 10)
            while var part = try channel.readOutbound(as: ByteBuffer.self) { encoded.writeBuffer(&part) }
            #expect(DeviceLinkHandler.textFrame(payload, allocator: channel.allocator) == encoded, "\(count) bytes")
            _ = try channel.finish()
        }
    }
}

/// Notes the writes and flushes that pass it, in order.
private final class FlushCounter: ChannelOutboundHandler {
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame
    var log: [String] = []

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        log.append("write")
        context.write(data, promise: promise)
    }

    func flush(context: ChannelHandlerContext) {
        log.append("flush")
        context.flush()
    }
}

/// Counts the reads that reach the socket, from any thread.
final class CountedReads: ChannelOutboundHandler, Sendable {
    typealias OutboundIn = NIOAny
    private let reads = Mutex(0)
    var count: Int { reads.withLock { $0 } }
    func read(context: ChannelHandlerContext) {
        reads.withLock { $0 += 1 }
        context.read()
    }
}
