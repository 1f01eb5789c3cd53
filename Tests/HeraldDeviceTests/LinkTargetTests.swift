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
}
