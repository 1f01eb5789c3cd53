import Crypto
import Foundation
import Testing

@testable import HeraldCore

/// The resumption a device carries in its upgrade request (docs/device-link.md, "Resuming in the
/// upgrade request"): its header, and what its proof covers.
@Suite struct UpgradeResumeTests {
    static let ticket = LinkTicket(ticket: Data([1, 2, 3, 4]), secret: Data(repeating: 9, count: 32), expires: 1)
    static let key = "dGhlIHNhbXBsZSBub25jZQ=="

    @Test func theHeaderReadsBackAsWritten() throws {
        let resume = DeviceLink.UpgradeResume(
            device: "phone-1", ticket: Self.ticket, webSocketKey: Self.key, time: 1_800_000_000)
        #expect(resume.headerValue.hasPrefix("phone-1 1800000000 AQIDBA== "))
        #expect(try DeviceLink.UpgradeResume(headerValue: resume.headerValue) == resume)
        // The proof is the HMAC, under the ticket's secret, of the prefix, the key, a line feed and the time.
        let expected = HMAC<SHA256>.authenticationCode(
            for: Data("herald-device-link-resume-upgrade-v1\n\(Self.key)\n1800000000".utf8),
            using: SymmetricKey(data: Self.ticket.secret))
        #expect(resume.proof == Data(expected))
    }

    @Test func theProofCoversTheKeyAndTheTime() {
        let resume = DeviceLink.UpgradeResume(
            device: "phone-1", ticket: Self.ticket, webSocketKey: Self.key, time: 1_800_000_000)
        let otherKey = DeviceLink.UpgradeResume(
            device: "phone-1", ticket: Self.ticket, webSocketKey: "AAAAAAAAAAAAAAAAAAAAAA==", time: 1_800_000_000)
        let otherTime = DeviceLink.UpgradeResume(
            device: "phone-1", ticket: Self.ticket, webSocketKey: Self.key, time: 1_800_000_001)
        #expect(resume.proof != otherKey.proof)
        #expect(resume.proof != otherTime.proof)
    }

    @Test func aTimeIsReadAsTheDeviceWritesIt() throws {
        let proof = Data(repeating: 1, count: 32).base64EncodedString()
        for time: Int64 in [0, 7, 1_800_000_000, 999_999_999_999_999_999] {
            #expect(try DeviceLink.UpgradeResume(headerValue: "phone-1 \(time) AQIDBA== \(proof)").time == time)
        }
    }

    @Test func aMalformedHeaderIsRefusedNamingTheField() {
        let proof = Data(repeating: 1, count: 32).base64EncodedString()
        let cases: [(String, String)] = [
            ("phone-1 1800000000 AQIDBA==", "four fields"),
            ("phone-1  1800000000 AQIDBA== \(proof)", "four fields"),
            ("phone_1 1800000000 AQIDBA== \(proof)", "device"),
            ("\(String(repeating: "a", count: 65)) 1800000000 AQIDBA== \(proof)", "device"),
            ("phone-1 soon AQIDBA== \(proof)", "time"),
            // Only what a device writes: no sign, no leading zero, at most 18 digits (no
            // difference with the gateway's clock can overflow).
            ("phone-1 -9223372036854775808 AQIDBA== \(proof)", "time"),
            ("phone-1 -1 AQIDBA== \(proof)", "time"),
            ("phone-1 +1800000000 AQIDBA== \(proof)", "time"),
            ("phone-1 01800000000 AQIDBA== \(proof)", "time"),
            ("phone-1 9223372036854775807 AQIDBA== \(proof)", "time"),
            ("phone-1 1234567890123456789 AQIDBA== \(proof)", "time"),
            ("phone-1 1800000000 not*base64 \(proof)", "ticket"),
            ("phone-1 1800000000 AQIDBA== AQIDBA==", "proof"),
        ]
        for (value, field) in cases {
            #expect(throws: LinkMessageError.self, "\(value)") { try DeviceLink.UpgradeResume(headerValue: value) }
            do {
                _ = try DeviceLink.UpgradeResume(headerValue: value)
            } catch {
                #expect(error.description.contains(field), "\(value): \(error)")
            }
        }
    }
}
