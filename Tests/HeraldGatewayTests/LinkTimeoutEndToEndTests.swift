import Foundation
import HeraldCore
import HeraldRuntime
import Logging
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

@testable import HeraldGateway

/// One device's link through the real ``DeviceLinkHandler`` on a testing channel whose event loop's
/// time moves only when the test moves it: the acknowledgement deadlines and the QoS run on that
/// time, so a timeout is a step, not a wait. The provider side is real (the provider API's logic,
/// the router, the group committer and the SQLite store).
struct VirtualLink {
    static let device = "device-1"

    let f: Fixture
    let router: PushRouter
    let channel: NIOAsyncTestingChannel

    /// A link whose acknowledgement timeout is two seconds. (The pushes here are priority 10,
    /// which the QoS writes at once: its batch window does not come into it.)
    init() async throws {
        f = try await Fixture(now: Date())
        router = PushRouter(committer: GroupCommitter(store: f.store, policy: OfflinePolicy()))
        var configuration = DeviceLinkServer.Configuration()
        configuration.acknowledgementTimeout = .seconds(2)
        configuration.idleTimeout = nil
        let service = DeviceLinkService.quiet(f, router: router, configuration: configuration)
        channel = NIOAsyncTestingChannel()
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1))
        let channel = self.channel
        try await channel.testingEventLoop.executeInContext {
            let handler = DeviceLinkHandler(service: service)
            try channel.pipeline.syncOperations.addHandler(handler)
            // As if device-1 had just said hello and its (empty) backlog were read: its machine is
            // online, and the handler registers the link as the device's, as it does then.
            handler.machine.phase = .online(device: Self.device)
            handler.machine.backlogLoaded = true
            handler.run(.attach(device: Self.device, at: Date()))
        }
        _ = try await channel.waitForOutboundWrite(as: WebSocketFrame.self)  // the challenge
    }

    /// Sends a push through the provider API's logic and the router; the answer comes later.
    func push(body: String = #"{"aps":{"alert":"hi"}}"#, headers: [(String, String)] = []) -> Task<
        ProviderResponse, any Error
    > {
        let f = self.f
        let router = self.router
        return Task { await f.push(through: router, token: f.token, body: body, headers: headers) }
    }

    /// The next `count` pushes written to the device.
    func written(_ count: Int) async throws -> [LinkPush] {
        var pushes: [LinkPush] = []
        while pushes.count < count {
            let frame = try await channel.waitForOutboundWrite(as: WebSocketFrame.self)
            if case .push(let push) = try LinkMessage(json: Data(frame.unmaskedData.readableBytesView)) {
                pushes.append(push)
            }
        }
        return pushes
    }

    /// The device acknowledges; the handler has handed what that settles to the store's committer
    /// when this returns.
    func acknowledge(_ ids: [String]) async throws {
        var data = ByteBuffer()
        data.writeBytes(LinkMessage.ack(ids).encoded())
        try await channel.writeInbound(WebSocketFrame(fin: true, opcode: .text, data: data))
    }

    /// Waits until every batch handed to the committer so far is durable: the committer writes its
    /// batches in the order they came, so an empty one committed now is done only after them.
    func settled() async throws {
        _ = try await router.offline.committer.commit(StoreBatch())
    }

    /// Moves the link's time on; the timers that come due fire, in order.
    func advance(by amount: TimeAmount) async {
        await channel.testingEventLoop.advanceTime(by: amount)
    }

    func storedCount() async throws -> Int { try await f.store.storedCount() }
}

/// The link's acknowledgement timeouts end to end: the real handler carries out its machine's
/// actions on the testing channel, and the router and the store do what its answers ask. (What the
/// link decides is tested as values in `LinkTimeoutTests`.)
@Suite struct LinkTimeoutEndToEndTests {
    @Test func anAcknowledgementThatComesTooLateStillRemovesTheStoredCopy() async throws {
        let link = try await VirtualLink()
        let id = "22222222-2222-2222-2222-222222222222"
        let answer = link.push(headers: [("apns-id", id)])
        #expect(try await link.written(1).map(\.apnsID) == [id])
        await link.advance(by: .milliseconds(1999))
        await link.advance(by: .milliseconds(1))
        let response = try await answer.value
        #expect(response.status == 200)
        #expect(try await link.storedCount() == 1)
        try await link.acknowledge([id])
        try await link.settled()
        #expect(try await link.storedCount() == 0)
    }

    @Test func anExpirationZeroPushIsDiscardedWhenNotAcknowledged() async throws {
        let link = try await VirtualLink()
        let id = "33333333-3333-3333-3333-333333333333"
        let answer = link.push(headers: [("apns-expiration", "0"), ("apns-id", id)])
        _ = try await link.written(1)
        await link.advance(by: .seconds(2))
        #expect(try await answer.value.status == 200)
        #expect(try await link.storedCount() == 0)
        // The 200 waits for the log lines of a discarded push to be durable.
        #expect(try await link.f.store.deliveryLog(id: id).map(\.kind) == [.accepted, .delivered, .discarded])
    }
}
