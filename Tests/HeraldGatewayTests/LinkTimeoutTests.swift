import Foundation
import HeraldCore
import HeraldRuntime
import Logging
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

@testable import HeraldGateway

/// One device's link on a test event loop whose time moves only when the test moves it: the
/// acknowledgement deadlines and the QoS run on that time, so a timeout is a step, not a wait.
/// The provider side is real (the provider API's logic, the router, the SQLite store).
struct VirtualLink {
    static let device = "device-1"

    let f: Fixture
    let router: PushRouter
    let channel: NIOAsyncTestingChannel

    init(acknowledgementTimeout: TimeAmount, offline: OfflinePolicy = OfflinePolicy()) async throws {
        f = try await Fixture(now: Date())
        router = PushRouter(committer: GroupCommitter(store: f.store, policy: offline))
        var configuration = DeviceLinkServer.Configuration()
        configuration.acknowledgementTimeout = acknowledgementTimeout
        configuration.qos = .init(batchWindow: 60)
        configuration.idleTimeout = nil
        let service = DeviceLinkService(
            directory: f.directory, links: router.links, offline: router.offline, configuration: configuration,
            logger: Logger(label: "test"), log: ListenerLog(logger: Logger(label: "test")), clock: SystemClock())
        channel = NIOAsyncTestingChannel()
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1))
        let channel = self.channel
        try await channel.testingEventLoop.executeInContext {
            let handler = DeviceLinkHandler(service: service)
            try channel.pipeline.syncOperations.addHandler(handler)
            // As if device-1 had just said hello and its (empty) backlog were read.
            handler.machine.phase = .online(device: Self.device)
            handler.machine.backlogLoaded = true
            _ = service.links.attach(
                Self.device,
                DeviceLinks.Handle(
                    loop: channel.eventLoop,
                    handler: NIOLoopBound<any DeviceConnection>(handler, eventLoop: channel.eventLoop),
                    key: ObjectIdentifier(handler)))
        }
        _ = try await channel.waitForOutboundWrite(as: WebSocketFrame.self)  // the challenge
    }

    /// Sends a push through the provider API's logic and the router; the answer comes later.
    func push(body: String = #"{"aps":{"alert":"hi"}}"#, headers: [(String, String)] = []) -> Task<
        ProviderResponse, any Error
    > {
        let f = self.f
        let router = self.router
        return Task {
            var connection = ProviderConnectionState(defaultEnvironment: .development)
            let request = f.request(token: f.token.hex, body: body, headers: headers)
            switch f.api.handle(request, connection: &connection, now: Date()) {
            case .respond(let response, _):
                return response
            case .accept(let push, _):
                return await withCheckedContinuation { continuation in
                    router.route(push) { continuation.resume(returning: $0) }
                }
            case .perform(let work):
                return await work()
            }
        }
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

    /// The device acknowledges.
    func acknowledge(_ ids: [String]) async throws {
        var data = ByteBuffer()
        data.writeBytes(LinkMessage.ack(ids).encoded())
        try await channel.writeInbound(WebSocketFrame(fin: true, opcode: .text, data: data))
    }

    /// Moves the link's time on; the timers that come due fire, in order.
    func advance(by amount: TimeAmount) async {
        await channel.testingEventLoop.advanceTime(by: amount)
    }

    func storedCount() async throws -> Int { try await f.store.storedCount() }

    func stored() async throws -> [String] {
        try await f.store.pending(device: Self.device, now: Date()).map(\.apnsID)
    }
}

/// Acknowledgement deadlines as a value, in plain instants.
@Suite struct AcknowledgementDeadlinesTests {
    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    @Test func deadlinesComeInTheOrderPushesWereWritten() {
        var deadlines = AcknowledgementDeadlines(timeout: .seconds(2))
        #expect(deadlines.next == nil)
        deadlines.written(apnsID: "a", ticket: 1, now: t0)
        deadlines.written(apnsID: "b", ticket: 2, now: t0 + .milliseconds(500))
        deadlines.written(apnsID: "a", ticket: 3, now: t0 + .seconds(1))  // an apns-id used again
        #expect(deadlines.next == t0 + .seconds(2))
        #expect(deadlines.expired(now: t0 + .milliseconds(1999)).isEmpty)
        #expect(deadlines.expired(now: t0 + .milliseconds(2500)).map(\.ticket) == [1, 2])
        #expect(deadlines.next == t0 + .seconds(3))
        #expect(deadlines.expired(now: t0 + .seconds(60)).map { "\($0.apnsID)\($0.ticket)" } == ["a3"])
        #expect(deadlines.next == nil && deadlines.count == 0)
    }

    @Test func aLongRunKeepsOnlyWhatIsStillToCome() {
        var deadlines = AcknowledgementDeadlines(timeout: .seconds(1))
        for i in 0..<5000 {
            deadlines.written(apnsID: "\(i)", ticket: i, now: t0 + .milliseconds(Int64(i)))
            if i % 100 == 99 {
                // Everything written more than a second ago has expired, exactly once.
                let due = deadlines.expired(now: t0 + .milliseconds(Int64(i)))
                #expect(due.allSatisfy { $0.at <= t0 + .milliseconds(Int64(i)) })
            }
        }
        #expect(deadlines.count == 1000)
        #expect(deadlines.expired(now: t0 + .seconds(10)).map(\.ticket) == Array(4000..<5000))
    }

    @Test func removingAllLeavesNothing() {
        var deadlines = AcknowledgementDeadlines(timeout: .seconds(1))
        deadlines.written(apnsID: "a", ticket: 1, now: t0)
        deadlines.removeAll()
        #expect(deadlines.next == nil && deadlines.expired(now: t0 + .seconds(5)).isEmpty)
    }
}

/// The link's acknowledgement timeouts, in the link's virtual time.
@Suite struct LinkTimeoutTests {
    @Test func anAcknowledgementThatComesTooLateStillRemovesTheStoredCopy() async throws {
        let link = try await VirtualLink(acknowledgementTimeout: .seconds(2))
        let id = "22222222-2222-2222-2222-222222222222"
        let answer = link.push(headers: [("apns-id", id)])
        #expect(try await link.written(1).map(\.apnsID) == [id])
        await link.advance(by: .milliseconds(1999))
        await link.advance(by: .milliseconds(1))
        let response = try await answer.value
        #expect(response.status == 200)
        #expect(try await link.storedCount() == 1)
        try await link.acknowledge([id])
        try await waitUntil("the stored copy to be removed") { try await link.storedCount() == 0 }
    }

    @Test func anExpirationZeroPushIsDiscardedWhenNotAcknowledged() async throws {
        let link = try await VirtualLink(acknowledgementTimeout: .seconds(2))
        let id = "33333333-3333-3333-3333-333333333333"
        let answer = link.push(headers: [("apns-expiration", "0"), ("apns-id", id)])
        _ = try await link.written(1)
        await link.advance(by: .seconds(2))
        #expect(try await answer.value.status == 200)
        #expect(try await link.storedCount() == 0)
        try await waitUntil("the delivery log") {
            try await link.f.store.deliveryLog(id: id).map(\.kind) == [.accepted, .delivered, .discarded]
        }
    }

    /// A provider may send two pushes under one `apns-id`: each waits for the acknowledgement on its
    /// own, each is stored when it does not come in time, and the late acknowledgement settles both.
    @Test func twoPushesUnderOneAPNsIDAreEachTimedOutAndSettledTogether() async throws {
        let link = try await VirtualLink(acknowledgementTimeout: .seconds(2))
        let id = "55555555-5555-5555-5555-555555555555"
        let first = link.push(headers: [("apns-id", id)])
        #expect(try await link.written(1).map(\.apnsID) == [id])
        let second = link.push(body: #"{"aps":{"alert":"again"}}"#, headers: [("apns-id", id)])
        #expect(try await link.written(1).map(\.apnsID) == [id])
        await link.advance(by: .seconds(2))
        #expect(try await first.value.status == 200)
        #expect(try await second.value.status == 200)
        // Both were written and neither acknowledged: stored (the newest per device and topic).
        #expect(try await link.storedCount() == 1)
        try await link.acknowledge([id])
        try await waitUntil("the stored copy to be removed") { try await link.storedCount() == 0 }
    }

    /// A push left unacknowledged among acknowledged ones still times out (its answer comes
    /// without an acknowledgement) and is stored, and the acknowledged ones are not, also after
    /// more than a thousand deadlines have passed.
    @Test func anUnacknowledgedPushAmongAcknowledgedOnesStillTimesOut() async throws {
        // Every push is kept while offline, so that what is stored is exactly what timed out.
        let link = try await VirtualLink(acknowledgementTimeout: .seconds(2), offline: OfflinePolicy(depth: 10_000))

        /// Sends `count` pushes and acknowledges all but the `skip`th written, then lets the
        /// acknowledgement time pass; returns the answers and the skipped push's `apns-id`.
        func round(_ count: Int, skip: Int?) async throws -> (answers: [ProviderResponse], skipped: String?) {
            let answers = (0..<count).map { _ in link.push() }
            let written = try await link.written(count).map(\.apnsID)
            try await link.acknowledge(written.enumerated().filter { $0.offset != skip }.map(\.element))
            await link.advance(by: .seconds(2))
            var results: [ProviderResponse] = []
            for answer in answers { results.append(try await answer.value) }
            return (results, skip.map { written[$0] })
        }

        let first = try await round(3, skip: 1)
        #expect(first.answers.map(\.status) == [200, 200, 200])
        let skipped = try #require(first.skipped)
        #expect(try await link.stored() == [skipped])

        // Over a thousand more, all acknowledged, in between.
        for _ in 0..<9 { #expect(try await round(120, skip: nil).answers.count == 120) }
        let last = try await round(3, skip: 2)
        #expect(last.answers.map(\.status) == [200, 200, 200])
        let third = try #require(last.skipped)
        #expect(try await Set(link.stored()) == [skipped, third])
        try await link.acknowledge([skipped, third])
        try await waitUntil("the stored copies to be removed") { try await link.storedCount() == 0 }
    }
}
