import Foundation
import HeraldCore
import HeraldRuntime
import HeraldTesting
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import HeraldGateway

/// A TCP proxy on loopback whose reading from the gateway can be paused: the device behind it then
/// reads nothing of what the gateway writes, as a device that stops reading does. Both sides of a
/// connection run on one event loop; the proxy's socket toward the gateway has a small receive
/// buffer, so that the kernel holds little of what the gateway sends.
final class PausingProxy: Sendable {
    private let server: any Channel
    /// The proxy's connections toward the gateway, added as devices connect.
    private final class Upstreams: Sendable {
        let channels = Mutex<[any Channel]>([])
    }
    private let upstreams: Upstreams

    /// Copies what one side reads to the other.
    private final class Glue: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let partner: any Channel
        init(_ partner: any Channel) { self.partner = partner }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            partner.writeAndFlush(unwrapInboundIn(data), promise: nil)
        }
        func channelInactive(context: ChannelHandlerContext) {
            partner.close(promise: nil)
            context.fireChannelInactive()
        }
    }

    private init(server: any Channel, upstreams: Upstreams) {
        self.server = server
        self.upstreams = upstreams
    }

    /// A proxy to `target`, listening on a free loopback port.
    static func start(to target: SocketAddress) async throws -> PausingProxy {
        let upstreams = Upstreams()
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton.next())
            .childChannelInitializer { device in
                ClientBootstrap(group: device.eventLoop)
                    .channelOption(.socketOption(.so_rcvbuf), value: 4096)
                    .connect(to: target)
                    .flatMapThrowing { gateway in
                        upstreams.channels.withLock { $0.append(gateway) }
                        try gateway.pipeline.syncOperations.addHandler(Glue(device))
                        try device.pipeline.syncOperations.addHandler(Glue(gateway))
                    }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return PausingProxy(server: server, upstreams: upstreams)
    }

    var port: Int { server.localAddress?.port ?? 0 }

    /// Stops (or starts again) reading what the gateway writes.
    func reading(_ on: Bool) async throws {
        for channel in upstreams.channels.withLock({ $0 }) { try await channel.setOption(.autoRead, value: on).get() }
    }

    func close() async {
        try? await server.close()
        for channel in upstreams.channels.withLock({ $0 }) { try? await channel.close() }
    }
}

/// A device that stops reading, over real sockets (docs/device-link.md, "A device that does not
/// read"): the gateway's link backs up at its high-water mark and then writes nothing more to it,
/// so the bytes it holds for the device stop growing, and what providers send meanwhile is stored.
/// Once the device reads again, it gets everything written and the newest stored push. The link's
/// decisions are tested as values in `LinkBackPressureMachineTests`.
@Suite(.timeLimit(.minutes(3))) struct LinkBackPressureSocketTests {
    static func id(_ n: Int) -> String { String(format: "55555555-5555-5555-5555-%012d", n) }
    static let body = #"{"aps":{"alert":"hi"},"padding":""# + String(repeating: "x", count: 3000) + #""}"#

    /// A gateway's device link server, a device connected to it through a ``PausingProxy`` that no
    /// longer reads, and the gateway's end of that link.
    struct Stalled {
        let h: LinkBench
        let server: DeviceLinkServer
        let proxy: PausingProxy
        let client: GatewayLinkClient
        let token: DeviceToken
        let accepted: any Channel

        init() async throws {
            h = try await LinkBench(acknowledgementTimeout: .seconds(120))
            server = try await DeviceLinkServer.start(
                host: "127.0.0.1", port: 0, tls: nil, directory: h.f.directory, links: h.router.links,
                offline: h.router.offline, configuration: h.service.configuration,
                group: MultiThreadedEventLoopGroup.singleton, logger: .silent)
            proxy = try await PausingProxy.start(to: try #require(server.localAddress))
            client = try await GatewayLinkClient.connect(
                url: "ws://127.0.0.1:\(proxy.port)/device/v1", identity: DeviceIdentity(deviceID: "slow"))
            token = try await client.register(topic: Fixture.bundle)
            accepted = try #require(server.channels.all.first)
            // The kernel holds little of what the gateway writes, so what piles up is the gateway's.
            try await accepted.setOption(.socketOption(.so_sndbuf), value: 4096).get()
            try await proxy.reading(false)
        }

        /// The link as its loop sees it: backed up, the pushes offered to it, its unsent bytes.
        func link() async throws -> (backedUp: Bool, offered: Int, unsent: Int) {
            let accepted = self.accepted
            return try await accepted.eventLoop.submit {
                let handler = try accepted.pipeline.syncOperations.handler(type: DeviceLinkHandler.self)
                let unsent = try accepted.syncOptions!.getOption(.bufferedWritableBytes)
                return (handler.machine.backedUp, handler.machine.nextTicket, unsent)
            }.get()
        }

        /// Sends pushes in waves of 20 until the link backs up, each wave taken by the link before
        /// the next is sent (it polls the link's loop, which gives no signal when an offer arrives),
        /// so that the link crosses its high-water mark by at most a wave's bytes. Returns their
        /// answers, which come once the device acknowledges them.
        func backUp() async throws -> [Task<ProviderResponse, Never>] {
            var answers: [Task<ProviderResponse, Never>] = []
            while try await !link().backedUp {
                guard answers.count < 2000 else { throw TestFailure("the link never backed up") }
                for _ in 0..<20 {
                    let headers = [
                        ("apns-id", LinkBackPressureSocketTests.id(answers.count + 1)), ("apns-push-type", "alert"),
                    ]
                    let (h, token) = (self.h, self.token)
                    answers.append(
                        Task { await h.push(to: token, body: LinkBackPressureSocketTests.body, headers: headers) })
                }
                let sent = answers.count
                try await waitUntil("the link to take \(sent) pushes") { try await link().offered == sent }
            }
            return answers
        }

        func stop() async {
            await client.close()
            await proxy.close()
            await server.shutdown()
        }
    }

    @Test func aDeviceThatStopsReadingHoldsNoMoreOfTheGatewaysMemory() async throws {
        let stalled = try await Stalled()
        let h = stalled.h
        var events = stalled.client.events.makeAsyncIterator()
        let answers = try await stalled.backUp()
        let unsent = try await stalled.link().unsent
        #expect(unsent >= 1 << 20 && unsent < (1 << 20) + 20 * 4096)

        // Backed up, it writes nothing more: what providers send now is stored, answered at once,
        // and the link's unsent bytes stay as they are.
        let first = answers.count + 1
        for n in first..<first + 200 {
            let response = await h.push(
                to: stalled.token, body: Self.body, headers: [("apns-id", Self.id(n)), ("apns-push-type", "alert")])
            #expect(response.status == 200)
        }
        #expect(try await stalled.link().unsent == unsent)
        // APNs keeps one push per app for a device it cannot reach: the newest.
        #expect(try await h.storedCount() == 1)
        let replaced = try await h.log(Self.id(first))
        #expect(replaced == [.accepted, .stored, .replaced])
        let last = Self.id(first + 199)
        let stored = try await h.f.store.deliveryLog(id: last).first { $0.kind == .stored }
        #expect(stored?.detail?.contains("the device's link is backed up") == true)

        // The device reads again: it gets what was written (and acknowledges it), then the newest
        // stored push, read again from the store once the link has caught up.
        try await stalled.proxy.reading(true)
        var received: [String] = []
        while received.last != last {
            guard case .pushes(let pushes) = await events.next() else { throw TestFailure("no push event") }
            received += pushes.map(\.apnsID)
        }
        #expect(received.count == Set(received).count)
        for answer in answers { #expect(await answer.value.status == 200) }
        // Of the waves, those the link took after it backed up (the last wave's rest, at most) were
        // stored and replaced; the device has every other.
        let notWritten = answers.count - (received.count - 1)
        #expect(notWritten >= 0 && notWritten < 20)
        try await waitUntil("the acknowledged push to leave the store") { try await h.storedCount() == 0 }
        let delivered = try await h.log(last)
        #expect(delivered == [.accepted, .stored, .delivered, .acknowledged])
        await stalled.stop()
    }

    /// A link that is refused while backed up (its device connected again, say, from a network
    /// that works) closes at once: its close frame would wait behind what the device does not read.
    @Test func aBackedUpLinkThatIsRefusedClosesAtOnce() async throws {
        let stalled = try await Stalled()
        let answers = try await stalled.backUp()
        let accepted = stalled.accepted
        try await accepted.eventLoop.submit {
            try accepted.pipeline.syncOperations.handler(type: DeviceLinkHandler.self)
                .refuse(code: .replaced, message: "the device connected again")
        }.get()
        // (Polled: a link that never closes would leave an await of its close future hanging.)
        try await waitUntil("the refused link to close", within: .seconds(5)) { !accepted.isActive }
        // The providers of the pushes written to it are answered: stored, as the link closed first.
        for answer in answers { #expect(await answer.value.status == 200) }
        #expect(try await stalled.h.storedCount() == 1)
        await stalled.stop()
    }
}
