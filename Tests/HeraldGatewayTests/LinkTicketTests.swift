import Crypto
import Foundation
import HeraldCore
import HeraldTesting
import NIOCore
import Testing

@testable import HeraldGateway

/// Resumption tickets (docs/device-link.md, "Resuming"; docs/security.md): sealed, bound to the
/// device, its key and its generation, with an expiry; accepted by any gateway holding the same
/// secret, refused by any other, and never enough without the proof over the fresh challenge.
@Suite struct LinkTicketTests {
    static let secret = [UInt8](repeating: 0x42, count: 32)
    static let issued = Date(timeIntervalSince1970: 1_800_000_000)
    static let nonce = Data(repeating: 7, count: 32)
    static let key = P256.Signing.PrivateKey().publicKey.x963Representation

    static func record(generation: Int = 1, key: Data = key, deleted: Bool = false) -> DeviceRecord {
        var record = DeviceRecord(id: "phone", publicKey: key, generation: generation, createdAt: issued)
        if deleted { record.deletedAt = issued }
        return record
    }

    static func tickets(secret: [UInt8] = secret) -> LinkTickets {
        LinkTickets(issuer: TokenIssuer(secret: secret), lifetime: .seconds(3600))
    }

    /// Checks `ticket` as presented for device `claimed` with a proof over `nonce`, at `now`,
    /// against the device's record `current`; the refusal's message, or nil when accepted.
    static func refusal(
        _ ticket: LinkTicket, tickets: LinkTickets = tickets(), claimed: String = "phone", proofNonce: Data = nonce,
        now: Date = issued, current: DeviceRecord? = record()
    ) -> String? {
        let proof = DeviceLink.resumeProof(secret: ticket.secret, nonce: proofNonce)
        let result = tickets.check(
            claimed: claimed, ticket: ticket.ticket, proof: proof,
            authenticating: DeviceLink.resumedBytes(nonce: nonce),
            now: now, record: { _ in current })
        switch result {
        case .success(let (device, contents)):
            #expect(device == current)
            #expect(contents.secret == ticket.secret && contents.expires == ticket.expires)
            return nil
        case .failure(let refusal): return refusal.message
        }
    }

    @Test func aTicketIsAcceptedWithItsProofUntilItExpires() throws {
        let ticket = try #require(Self.tickets().issue(for: Self.record(), now: Self.issued))
        #expect(ticket.expires == 1_800_003_600)
        #expect(ticket.secret.count == 32)
        #expect(Self.refusal(ticket) == nil)
        #expect(Self.refusal(ticket, now: Self.issued.addingTimeInterval(3599)) == nil)
        #expect(Self.refusal(ticket, now: Self.issued.addingTimeInterval(3600)) == "the ticket has expired")
        // Every ticket has a secret of its own.
        let other = try #require(Self.tickets().issue(for: Self.record(), now: Self.issued))
        #expect(other.secret != ticket.secret)
        #expect(other.ticket != ticket.ticket)
    }

    /// A resumed device gets its own ticket back while more than half of its life is left (no seal
    /// per reconnection); from then on a new one, which moves its expiry on.
    @Test func aResumedDeviceKeepsItsTicketUntilHalfItsLifeIsGone() throws {
        let tickets = Self.tickets()
        let ticket = try #require(tickets.issue(for: Self.record(), now: Self.issued))
        let contents = try tickets.open(ticket.ticket).get()
        func next(after seconds: TimeInterval) -> LinkTicket? {
            tickets.next(
                presented: ticket.ticket, holding: contents, for: Self.record(),
                now: Self.issued.addingTimeInterval(seconds))
        }
        #expect(next(after: 0) == ticket)
        #expect(next(after: 1799) == ticket)
        let renewed = try #require(next(after: 1800))
        #expect(renewed.ticket != ticket.ticket && renewed.secret != ticket.secret)
        #expect(renewed.expires == 1_800_005_400)
        #expect(Self.refusal(renewed, now: Self.issued.addingTimeInterval(5399)) == nil)
    }

    /// Renewals carry the time of the signature on and end four lifetimes after it: a ticket and
    /// its secret, stolen, open the link that long at most; then the device signs again.
    @Test func renewalsEndFourLifetimesAfterTheSignature() throws {
        let tickets = Self.tickets()
        var ticket = try #require(tickets.issue(for: Self.record(), now: Self.issued))
        #expect(try tickets.open(ticket.ticket).get().authenticated == 1_800_000_000)
        // Renewed each time half its life is gone, as a device that comes back every half hour.
        var at: TimeInterval = 0
        var expiries: [Int64] = []
        while at < 6 * 3600 {
            at += 1800
            guard Self.refusal(ticket, now: Self.issued.addingTimeInterval(at)) == nil else { break }
            let contents = try tickets.open(ticket.ticket).get()
            #expect(contents.authenticated == 1_800_000_000, "the signature's time is carried on")
            let next = try #require(
                tickets.next(
                    presented: ticket.ticket, holding: contents, for: Self.record(),
                    now: Self.issued.addingTimeInterval(at)))
            if next != ticket { expiries.append(next.expires) }
            ticket = next
        }
        // Renewed up to the end of its renewals (four hours after the signature), and not past it.
        #expect(expiries.last == 1_800_014_400, "\(expiries)")
        #expect(expiries.allSatisfy { $0 <= 1_800_014_400 })
        #expect(Self.refusal(ticket, now: Self.issued.addingTimeInterval(14399)) == nil)
        #expect(Self.refusal(ticket, now: Self.issued.addingTimeInterval(14400)) == "the ticket has expired")
        // A signature begins a new chain.
        let signed = try #require(tickets.issue(for: Self.record(), now: Self.issued.addingTimeInterval(14400)))
        #expect(signed.expires == 1_800_018_000)
        #expect(Self.refusal(signed, now: Self.issued.addingTimeInterval(14400)) == nil)
    }

    /// A node whose lifetime is shorter (the lifetime lowered, or another node set higher) refuses
    /// a ticket that would outlast its own lifetime, and one whose renewals would have ended by its
    /// count; a few minutes of another node's clock are allowed.
    @Test func aShorterLifetimeTakesEffectAtOnce() throws {
        let long = LinkTickets(issuer: TokenIssuer(secret: Self.secret), lifetime: .seconds(7200))
        let ticket = try #require(long.issue(for: Self.record(), now: Self.issued))
        #expect(Self.refusal(ticket, tickets: long) == nil)
        #expect(Self.refusal(ticket) == "the ticket outlasts this gateway's ticket lifetime")
        // Issued by a node whose clock ran four minutes ahead: accepted.
        let ahead = try #require(Self.tickets().issue(for: Self.record(), now: Self.issued.addingTimeInterval(240)))
        #expect(Self.refusal(ahead) == nil)
        // A chain begun ten hours ago under a ten-hour lifetime: over by this node's four hours.
        let chained = try #require(
            LinkTickets(issuer: TokenIssuer(secret: Self.secret), lifetime: .seconds(36000)).issue(
                for: Self.record(), now: Self.issued, authenticated: 1_800_000_000 - 36000))
        let short = LinkTickets(issuer: TokenIssuer(secret: Self.secret), lifetime: .seconds(36000 + 300))
        #expect(Self.refusal(chained, tickets: short) == nil)
        let shorter = LinkTickets(issuer: TokenIssuer(secret: Self.secret), lifetime: .seconds(9000))
        #expect(
            Self.refusal(chained, tickets: shorter, now: Self.issued.addingTimeInterval(36000 - 9000 + 1))
                == "the ticket's renewals have ended: the device signs again")
    }

    /// The proof is checked before anything about the device: without the secret, a ticket tells
    /// nothing of whether its device was reset, deleted or rekeyed, or whose it is.
    @Test func withoutItsSecretATicketTellsNothingOfItsDevice() throws {
        let ticket = try #require(Self.tickets().issue(for: Self.record(), now: Self.issued))
        let guessed = LinkTicket(ticket: ticket.ticket, secret: Data(repeating: 1, count: 32), expires: ticket.expires)
        for current in [Self.record(generation: 2), Self.record(deleted: true), nil] {
            #expect(Self.refusal(guessed, current: current) == "the proof does not match the ticket")
        }
        #expect(Self.refusal(guessed, claimed: "tablet") == "the proof does not match the ticket")
        #expect(
            Self.refusal(guessed, now: Self.issued.addingTimeInterval(7200)) == "the proof does not match the ticket")
    }

    /// A ticket of the first format (no time of the signature) is refused: its device signs once.
    @Test func aTicketOfTheFirstFormatIsRefused() throws {
        var plain = Data([1])
        for value in [Int64(1_800_003_600), 1] { withUnsafeBytes(of: value.bigEndian) { plain.append(contentsOf: $0) } }
        plain.append(LinkTickets.keyDigest(Self.key))
        plain.append(Data(repeating: 9, count: 32))
        plain.append(contentsOf: "phone".utf8)
        let key = TokenIssuer(secret: Self.secret).derivedKey(label: LinkTickets.label)
        let sealed = try AES.GCM.seal(plain, using: key, authenticating: LinkTickets.label)
        let old = LinkTicket(ticket: try #require(sealed.combined), secret: Data(repeating: 9, count: 32), expires: 1)
        #expect(Self.refusal(old) == "the ticket is of an older format")
    }

    @Test func anotherNodeWithTheSameSecretAcceptsItAndAGatewayWithAnotherRefusesIt() throws {
        let ticket = try #require(Self.tickets().issue(for: Self.record(), now: Self.issued))
        // A second instance over the same secret: another node of the cluster, or this one restarted.
        #expect(Self.refusal(ticket, tickets: Self.tickets()) == nil)
        let elsewhere = Self.tickets(secret: [UInt8](repeating: 0x43, count: 32))
        #expect(Self.refusal(ticket, tickets: elsewhere) == "the ticket was not issued by this gateway")
    }

    @Test func aTicketIsVoidOnceTheDeviceIsResetDeletedOrRekeyed() throws {
        let ticket = try #require(Self.tickets().issue(for: Self.record(), now: Self.issued))
        #expect(
            Self.refusal(ticket, current: Self.record(generation: 2))
                == "the device was reset since the ticket was issued")
        #expect(Self.refusal(ticket, current: Self.record(deleted: true)) == "device phone is not registered")
        #expect(Self.refusal(ticket, current: nil) == "device phone is not registered")
        let otherKey = P256.Signing.PrivateKey().publicKey.x963Representation
        #expect(
            Self.refusal(ticket, current: Self.record(key: otherKey))
                == "the device's key changed since the ticket was issued")
    }

    @Test func aTicketNeedsItsProofOverThisChallengeAndItsOwnDevice() throws {
        let ticket = try #require(Self.tickets().issue(for: Self.record(), now: Self.issued))
        // A proof over another challenge: a `resume` seen on the wire and replayed.
        #expect(
            Self.refusal(ticket, proofNonce: Data(repeating: 8, count: 32)) == "the proof does not match the ticket")
        // Without the secret, a proof made with another.
        let guessed = LinkTicket(ticket: ticket.ticket, secret: Data(repeating: 1, count: 32), expires: ticket.expires)
        #expect(Self.refusal(guessed) == "the proof does not match the ticket")
        #expect(Self.refusal(ticket, claimed: "tablet") == "the ticket is another device's")
        // One bit changed anywhere in the sealed ticket.
        var tampered = ticket
        tampered.ticket[20] ^= 1
        #expect(Self.refusal(tampered) == "the ticket was not issued by this gateway")
        let cut = LinkTicket(ticket: ticket.ticket.prefix(10), secret: ticket.secret, expires: ticket.expires)
        #expect(Self.refusal(cut) == "the ticket was not issued by this gateway")
    }

    // MARK: On the link, with the real handler

    @Test func aDeviceComesBackWithItsTicketInsteadOfASignature() async throws {
        let h = try await LinkBench()
        let identity = DeviceIdentity(deviceID: "phone-t1")
        let first = try await h.connect(identity)
        #expect(!first.resumed)
        let token = try await first.register(topic: Fixture.bundle)
        let ticket = try #require(identity.resumption.ticket)
        try await first.close()

        let second = try await h.connect(identity)
        #expect(second.resumed)
        #expect(second.ticketRefusal == nil)
        #expect(second.deviceID == "phone-t1")
        #expect(second.registrations.map(\.token) == [token])
        // The welcome hands the same ticket back: it has most of its life left.
        #expect(identity.resumption.ticket == ticket)
        // The link works as after a signature.
        async let answer = h.push(to: token)
        #expect(try await second.pushes(1).count == 1)
        #expect(await answer.status == 200)
        let metrics = String(decoding: h.router.metrics.emit(devicesOnline: 0, storedPushes: 0), as: UTF8.self)
        #expect(metrics.contains(#"herald_link_authentications_total{method="ticket"} 1"#))
        #expect(metrics.contains(#"herald_link_authentications_total{method="signature"} 1"#))
    }

    @Test func aTicketFromBeforeAResetIsRefusedAndTheDeviceSignsOnTheSameLink() async throws {
        let h = try await LinkBench()
        let identity = DeviceIdentity(deviceID: "phone-t2")
        let first = try await h.connect(identity)
        let old = try await first.register(topic: Fixture.bundle)
        // The ticket held is the welcome's, from generation 1.
        #expect(try await first.reset() == 2)
        try await first.close()

        let second = try await h.connect(identity)
        #expect(second.ticketRefusal == "the device was reset since the ticket was issued")
        #expect(!second.resumed)
        #expect(second.generation == 2)
        #expect(try await second.register(topic: Fixture.bundle) != old)
    }

    @Test func aDeletedDeviceCannotResumeAndIsRefusedWhenItSigns() async throws {
        let h = try await LinkBench()
        let identity = DeviceIdentity(deviceID: "phone-t3")
        try await h.connect(identity).close()
        #expect(identity.resumption.ticket != nil)
        try await h.f.directory.deleteDevice("phone-t3", now: Date())
        await #expect(throws: GatewayLinkFailure(code: .deviceDeleted, message: "device phone-t3 was deleted")) {
            _ = try await h.connect(identity)
        }
    }

    @Test func aGatewayWithoutTicketsGivesNoneAndRefusesOne() async throws {
        var configuration = DeviceLinkServer.Configuration()
        configuration.ticketLifetime = nil
        let plain = try await LinkBench(configuration: configuration)
        let identity = DeviceIdentity(deviceID: "phone-t4")
        try await plain.connect(identity).close()
        #expect(identity.resumption.ticket == nil)

        // A ticket from a gateway that gives them, presented to this one.
        let giving = try await LinkBench()
        try await giving.connect(identity).close()
        #expect(identity.resumption.ticket != nil)
        let device = try await plain.connect(identity)
        #expect(device.ticketRefusal == "this gateway gives no tickets")
        #expect(!device.resumed)
    }
}
