import Foundation
import HeraldCore
import Testing

@testable import HeraldDevice

/// Where a device's link goes (`GatewayLinkClient.Target`), and whether its upgrade request may
/// carry the ticket (docs/security.md, "A ticket in the upgrade request"): over TLS, or in
/// cleartext to this machine only. A cleartext request to another machine crosses the network
/// before the gateway refuses it, so it carries no proof that someone who saw it could present.
@Suite struct LinkTargetTests {
    @Test(arguments: [
        ("ws://127.0.0.1:5223/device/v1", true),
        ("ws://127.0.1.7:5223/device/v1", true),
        ("ws://localhost:5223/device/v1", true),
        ("ws://[::1]:5223/device/v1", true),
        ("wss://10.0.0.7:5223/device/v1", true),
        ("wss://gateway.example/device/v1", true),
        ("ws://10.0.0.7:5223/device/v1", false),
        ("ws://gateway.example/device/v1", false),
        ("ws://127.gateway.example/device/v1", false),
        ("ws://[2001:db8::1]:5223/device/v1", false),
    ])
    func theTicketRidesInTheRequestOverTLSOrToThisMachineOnly(url: String, inRequest: Bool) throws {
        let target = try GatewayLinkClient.Target(url: url, caCertificatePEM: nil, sourceAddress: nil)
        #expect(target.resumesInRequest == inRequest, "\(url)")
    }

    /// What the request carries: the held ticket with the time in whole seconds; nothing without
    /// a device id, with an expired ticket (which is then forgotten), or before 1970, whose time no
    /// header can carry (the gateway would answer `400`).
    @Test func theRequestCarriesAnUnexpiredTicketAndATimeAfter1970() throws {
        let identity = DeviceIdentity(deviceID: "phone-1")
        let key = "dGhlIHNhbXBsZSBub25jZQ=="
        let now = Date(timeIntervalSince1970: 1_800_000_000.75)
        #expect(GatewayLinkClient.upgradeResume(identity: identity, webSocketKey: key, now: now) == nil)
        let ticket = LinkTicket(ticket: Data([1, 2, 3]), secret: Data(repeating: 7, count: 32), expires: 1_800_000_100)
        identity.resumption.keep(ticket)

        let resume = try #require(GatewayLinkClient.upgradeResume(identity: identity, webSocketKey: key, now: now))
        #expect(
            resume
                == DeviceLink.UpgradeResume(device: "phone-1", ticket: ticket, webSocketKey: key, time: 1_800_000_000))

        #expect(
            GatewayLinkClient.upgradeResume(
                identity: identity, webSocketKey: key, now: Date(timeIntervalSince1970: -0.5)) == nil)
        #expect(identity.resumption.ticket == ticket, "a clock before 1970 keeps the ticket for a later attempt")
        // A ticket held without a device id (it cannot have come from a welcome): still the challenge.
        let anonymous = DeviceIdentity()
        anonymous.resumption.keep(ticket)
        #expect(
            GatewayLinkClient.upgradeResume(identity: anonymous, webSocketKey: key, now: now) == nil,
            "no device id: the challenge")

        #expect(
            GatewayLinkClient.upgradeResume(
                identity: identity, webSocketKey: key, now: Date(timeIntervalSince1970: 1_800_000_100)) == nil)
        #expect(identity.resumption.ticket == nil, "an expired ticket is forgotten")
    }
}
