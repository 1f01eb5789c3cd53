import Foundation
import HeraldCore
import HeraldRuntime
import NIOCore
import NIOPosix
import Testing

@testable import HeraldDevice
@testable import HeraldGateway

/// Resuming in the upgrade request (docs/device-link.md; docs/security.md): the link server on a
/// real loopback port, a device's ticket from a real signed connection, and requests written by
/// hand. An accepted resumption gets its `welcome` right behind the `101`; a copy of a request, a
/// time outside the window or a proof over another key gets the challenge, as a request without
/// one, and the device signs or resumes over it.
@Suite struct LinkUpgradeResumeTests {
    struct Bench {
        let h: LinkBench
        let server: DeviceLinkServer
        let clock: ManualClock
        let port: Int

        /// The gateway's clock, in UNIX seconds.
        var seconds: Int64 { Int64(clock.now().timeIntervalSince1970.rounded(.down)) }

        var upgradeResumptions: String {
            let text = String(decoding: h.router.metrics.emit(devicesOnline: 0, storedPushes: 0), as: UTF8.self)
            return text.split(separator: "\n").first { $0.hasPrefix("herald_link_upgrade_resumptions_total ") }
                .map(String.init) ?? "none"
        }
    }

    func bench() async throws -> Bench {
        let h = try await LinkBench()
        let clock = ManualClock(now: Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down)))
        let server = try await DeviceLinkServer.start(
            host: "127.0.0.1", port: 0, tls: nil, directory: h.f.directory, links: h.router.links,
            offline: h.router.offline, configuration: h.service.configuration,
            group: MultiThreadedEventLoopGroup.singleton, logger: .silent, clock: clock)
        return Bench(h: h, server: server, clock: clock, port: server.localAddress?.port ?? 0)
    }

    /// A fresh `Sec-WebSocket-Key`.
    static func newKey() -> String { Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString() }

    /// An upgrade request with `key`, and `resume` in its header.
    static func request(key: String, resume: DeviceLink.UpgradeResume?) -> String {
        var text = "GET /device/v1 HTTP/1.1\r\nhost: gateway\r\nupgrade: websocket\r\nconnection: upgrade\r\n"
        text += "sec-websocket-key: \(key)\r\nsec-websocket-version: 13\r\n"
        if let resume { text += "herald-resume: \(resume.headerValue)\r\n" }
        return text + "\r\n"
    }

    /// What the gateway answers `request` with: what it wrote until it wrote a `welcome` or a
    /// `challenge` (or closed), and whether the first read already held it all.
    static func answer(to request: String, port: Int) async throws -> (text: String, inFirstRead: Bool) {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: request))
            var text = ""
            var reads = 0
            for try await chunk in inbound {
                reads += 1
                text += String(decoding: chunk.readableBytesView, as: UTF8.self)
                if text.contains(#""type":"welcome""#) || text.contains(#""type":"challenge""#) { break }
            }
            return (text, reads == 1)
        }
    }

    /// A device registered by a signed connection, holding the ticket its welcome gave.
    func signedDevice(_ b: Bench, _ id: String) async throws -> (DeviceIdentity, LinkTicket) {
        let identity = DeviceIdentity(deviceID: id)
        let client = try await GatewayLinkClient.connect(
            url: "ws://127.0.0.1:\(b.port)/device/v1", identity: identity)
        await client.close()
        return (identity, try #require(identity.resumption.ticket))
    }

    @Test func anAcceptedResumptionIsWelcomedRightBehindTheSwitchAndACopyGetsTheChallenge() async throws {
        let b = try await bench()
        let (_, ticket) = try await signedDevice(b, "phone-u1")
        let key = Self.newKey()
        let resume = DeviceLink.UpgradeResume(device: "phone-u1", ticket: ticket, webSocketKey: key, time: b.seconds)
        let request = Self.request(key: key, resume: resume)

        let accepted = try await Self.answer(to: request, port: b.port)
        #expect(accepted.text.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
        #expect(accepted.text.contains(#""type":"welcome""#), "\(accepted.text)")
        #expect(accepted.text.contains(#""device":"phone-u1""#))
        #expect(accepted.text.contains(#""ticket":""#), "the welcome brings the next ticket")
        #expect(!accepted.text.contains("challenge"))
        #expect(accepted.inFirstRead, "the 101 and the welcome leave in one write")
        #expect(b.upgradeResumptions == "herald_link_upgrade_resumptions_total 1")

        // The same request again, as someone who copied it would send it: the challenge.
        let copy = try await Self.answer(to: request, port: b.port)
        #expect(copy.text.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
        #expect(copy.text.contains(#""type":"challenge""#), "\(copy.text)")
        #expect(!copy.text.contains("welcome"))
        #expect(b.upgradeResumptions == "herald_link_upgrade_resumptions_total 1")
        await b.server.shutdown()
    }

    @Test func aTimeOutsideTheWindowOrAProofOverAnotherKeyGetsTheChallenge() async throws {
        let b = try await bench()
        let (_, ticket) = try await signedDevice(b, "phone-u2")
        func answer(time: Int64, proofKey: String? = nil) async throws -> String {
            let key = Self.newKey()
            let resume = DeviceLink.UpgradeResume(
                device: "phone-u2", ticket: ticket, webSocketKey: proofKey ?? key, time: time)
            return try await Self.answer(to: Self.request(key: key, resume: resume), port: b.port).text
        }
        #expect(try await answer(time: b.seconds - 31).contains(#""type":"challenge""#))
        #expect(try await answer(time: b.seconds + 31).contains(#""type":"challenge""#))
        #expect(try await answer(time: b.seconds, proofKey: Self.newKey()).contains(#""type":"challenge""#))
        #expect(b.upgradeResumptions == "herald_link_upgrade_resumptions_total 0")
        // At the window's edges, accepted.
        #expect(try await answer(time: b.seconds - 30).contains(#""type":"welcome""#))
        #expect(try await answer(time: b.seconds + 30).contains(#""type":"welcome""#))
        #expect(b.upgradeResumptions == "herald_link_upgrade_resumptions_total 2")
        await b.server.shutdown()
    }

    /// A time no device writes (a sign, 19 digits, the lowest `Int64`, whose difference with the
    /// clock overflowed and stopped the process before this check) is answered `400` naming the
    /// time, and the gateway goes on answering. One that parses but is far off gets the challenge.
    @Test func aTimeNoDeviceWritesIsABadRequestAndTheGatewayGoesOn() async throws {
        let b = try await bench()
        let (_, ticket) = try await signedDevice(b, "phone-u4")
        let proof = Data(repeating: 7, count: 32).base64EncodedString()
        for time in ["-9223372036854775808", "9223372036854775807", "-1", "+\(b.seconds)"] {
            let value = "phone-u4 \(time) \(ticket.ticket.base64EncodedString()) \(proof)"
            let request = Self.request(key: Self.newKey(), resume: nil)
                .replacingOccurrences(of: "\r\n\r\n", with: "\r\nherald-resume: \(value)\r\n\r\n")
            let answer = try await Self.answer(to: request, port: b.port).text
            #expect(answer.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(time): \(answer)")
            #expect(answer.contains("Herald-Resume's time"), "\(time): \(answer)")
        }
        // Far off, as a time: the challenge, as for any time outside the window.
        let key = Self.newKey()
        let far = DeviceLink.UpgradeResume(
            device: "phone-u4", ticket: ticket, webSocketKey: key, time: 999_999_999_999_999_999)
        #expect(
            try await Self.answer(to: Self.request(key: key, resume: far), port: b.port).text
                .contains(#""type":"challenge""#))
        // And a good one is still welcomed.
        let goodKey = Self.newKey()
        let good = DeviceLink.UpgradeResume(device: "phone-u4", ticket: ticket, webSocketKey: goodKey, time: b.seconds)
        #expect(
            try await Self.answer(to: Self.request(key: goodKey, resume: good), port: b.port).text
                .contains(#""type":"welcome""#))
        await b.server.shutdown()
    }

    /// The service's own check of the time takes no difference that can overflow, whatever the
    /// header reader let through.
    @Test func theServiceRefusesAnyTimeOutsideTheWindowWithoutOverflowing() async throws {
        let b = try await bench()
        let (_, ticket) = try await signedDevice(b, "phone-u5")
        for time in [Int64.min, Int64.min + 1, Int64.max, -1] {
            let resume = DeviceLink.UpgradeResume(
                device: "phone-u5", ticket: ticket, webSocketKey: Self.newKey(), time: time)
            guard case .failure(let refusal) = b.h.service.resume(resume, webSocketKey: Self.newKey()) else {
                Issue.record("time \(time) was accepted")
                continue
            }
            #expect(refusal.message.contains("from the gateway's clock"), "\(time): \(refusal.message)")
        }
        await b.server.shutdown()
    }

    /// The daemon's client resumes in its request when it holds a ticket; when its clock is off by
    /// more than the window, it is challenged, resumes over the challenge with the same ticket, and
    /// its pushes arrive either way.
    @Test func theDaemonsClientResumesInItsRequestAndOverTheChallengeWhenItsClockIsOff() async throws {
        let b = try await bench()
        let (identity, _) = try await signedDevice(b, "phone-u3")
        let url = "ws://127.0.0.1:\(b.port)/device/v1"

        let client = try await GatewayLinkClient.connect(url: url, identity: identity)
        #expect(b.upgradeResumptions == "herald_link_upgrade_resumptions_total 1")
        let token = try await client.register(topic: Fixture.bundle)
        var events = client.events.makeAsyncIterator()
        #expect(await b.h.push(to: token).status == 200)
        guard case .pushes(let pushes) = await events.next() else { throw TestFailure("no push event") }
        #expect(pushes.map(\.token) == [token])
        await client.close()

        // The gateway's clock a minute ahead of the device's.
        b.clock.advance(to: b.clock.now().addingTimeInterval(60))
        let late = try await GatewayLinkClient.connect(url: url, identity: identity)
        #expect(late.registrations.map(\.token) == [token])
        #expect(b.upgradeResumptions == "herald_link_upgrade_resumptions_total 1")
        let metrics = String(decoding: b.h.router.metrics.emit(devicesOnline: 0, storedPushes: 0), as: UTF8.self)
        #expect(metrics.contains(#"herald_link_authentications_total{method="ticket"} 2"#), "\(metrics)")
        #expect(metrics.contains(#"herald_link_authentications_total{method="signature"} 1"#), "\(metrics)")
        await late.close()
        await b.server.shutdown()
    }
}
