import Foundation
import HeraldCore
import HeraldTesting
import Logging
import NIOCore
import Testing

@testable import HeraldGateway

/// Provider connections and device links run on separate event-loop groups: a push is read on
/// a provider loop, written to the device on a link loop, and answered back on the provider loop.
@Suite struct EventLoopGroupsTests {
    @Test func deviceLinksRunOnTheirOwnLoopsAndAPushCrossesToThemAndBack() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("loops-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = Gateway.Configuration.testing(directory: directory)
        configuration.providerThreads = 1
        configuration.linkThreads = 2
        // What is asserted is the route, not the timeout: a loaded machine must not turn the
        // acknowledgement into a timed-out, stored push.
        configuration.link.acknowledgementTimeout = .seconds(30)
        let gateway = try await Gateway.open(configuration, logger: .testGateway)
        #expect(Array(gateway.group.makeIterator()).count == 1)
        #expect(Array(gateway.linkGroup.makeIterator()).count == 2)
        _ = try await gateway.directory.putTeam(id: Fixture.team)
        let (_, pem) = try await gateway.directory.generateKey(teamID: Fixture.team, id: Fixture.keyID)
        _ = try await gateway.directory.putApp(bundleID: Fixture.bundle, teamID: Fixture.team)
        let (ready, readyContinuation) = AsyncStream.makeStream(of: [String: String].self)
        let run = Task { try await gateway.run { readyContinuation.yield($0) } }
        // Stop the gateway however the test ends, then report what went wrong.
        var failure: (any Error)?
        do { try await deliverAcross(gateway, ready: ready, key: pem) } catch { failure = error }
        run.cancel()
        _ = await run.result
        if let failure { throw failure }
    }

    func deliverAcross(_ gateway: Gateway, ready: AsyncStream<[String: String]>, key pem: String) async throws {
        var started: [String: String]?
        for await i in ready {
            started = i
            break
        }
        let info = try #require(started)

        let device = try await GatewayLinkClient.connect(
            url: try #require(info["linkDevelopmentURL"]), identity: DeviceIdentity(deviceID: "tablet"))
        defer { Task { await device.close() } }
        var events = device.events.makeAsyncIterator()
        let token = try await device.register(topic: Fixture.bundle)
        let linkLoop = try #require(gateway.router.links.loop(of: "tablet"))
        #expect(gateway.linkGroup.makeIterator().contains { $0 === linkLoop })
        #expect(!gateway.group.makeIterator().contains { $0 === linkLoop })

        // Over HTTP/2 and TLS: read on the provider loop, delivered and acknowledged on the link
        // loop, answered on the provider loop.
        let client = try APNsClient(
            configuration: .init(
                server: APNsServer(url: try #require(info["providerURL"])),
                authentication: .token(
                    try APNsSigningKey(p8: pem, keyID: Fixture.keyID, teamID: Fixture.team)),
                trustedCAPEM: try String(contentsOfFile: try #require(info["caCertificate"]), encoding: .utf8),
                // The route is asserted, not the time: a loaded machine (the whole suite, browsers
                // among it) must not turn a slow first TLS request into a failure.
                timeout: .seconds(60), retry: .never))
        do {
            let payload = Data(#"{"aps":{"alert":"across"}}"#.utf8)
            let delivery = try await client.send(
                APNsNotification(payload: payload, topic: Fixture.bundle, pushType: .alert), to: token.hex)
            #expect(delivery.attempts == 1)
            // A 200 for a connected device comes after its acknowledgement: nothing was stored.
            #expect(try await gateway.router.offline.store.pending(device: "tablet", now: Date()).isEmpty)
            // The client read the push before it acknowledged it: its event is already in the stream.
            guard case .pushes(let pushes) = await events.next() else { throw TestFailure("no push event") }
            #expect(pushes.map(\.apnsID) == [delivery.apnsID])
            #expect(pushes.first?.payload == payload)
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }
}
