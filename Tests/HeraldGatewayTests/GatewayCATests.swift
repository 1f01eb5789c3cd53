import Crypto
import Foundation
import HeraldCore
import Testing
import X509

@testable import HeraldGateway

/// The gateway's CA: the app certificates it issues and the grants they carry.
@Suite struct GatewayCATests {
    @Test func appCertificatesCarryUIDEnvironmentAndTopics() throws {
        let ca = try GatewayCA.generate()
        let key = P256.Signing.PrivateKey()
        let cert = try ca.issueAppCertificate(
            bundleID: "com.example.demo", environments: [.production],
            topics: ["com.example.demo", "com.example.demo.voip"],
            key: key)
        let grant = ca.grant(for: cert)
        #expect(grant.problem == nil)
        #expect(grant.bundleID == "com.example.demo")
        #expect(grant.environments == [.production])
        #expect(grant.topics == ["com.example.demo", "com.example.demo.voip"])
        #expect(grant.covers("com.example.demo.voip") && !grant.covers("com.example.demo.complication"))
        // A certificate from another CA, or expired, is unusable.
        let stranger = try GatewayCA.generate(name: "Herald Development CA")
        #expect(
            ca.grant(
                for: try stranger.issueAppCertificate(
                    bundleID: "com.example.demo", environments: [.development], key: key)
            ).problem != nil)
        #expect(ca.grant(for: cert, now: Date().addingTimeInterval(400 * 86400)).problem != nil)
    }
}
