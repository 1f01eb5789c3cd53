import Crypto
import Foundation

extension DeviceLink {
    /// The request header a device resumes with in its upgrade request (docs/device-link.md,
    /// "Resuming in the upgrade request"): the gateway checks it before it answers, and a device it
    /// accepts gets its `welcome` right behind the `101`, with no challenge in between.
    public static let upgradeResumeHeader = "herald-resume"
    /// How far the time a device puts in ``UpgradeResume`` may be from the gateway's clock, either
    /// way, in seconds.
    public static let upgradeResumeWindow: Int64 = 30
    /// What an upgrade resumption's proof authenticates: these bytes, then the request's
    /// `Sec-WebSocket-Key` as sent, a line feed, and the time in decimal.
    public static let upgradeResumePrefix = Array("herald-device-link-resume-upgrade-v1\n".utf8)

    /// The bytes an upgrade resumption's proof authenticates.
    public static func upgradeResumedBytes(webSocketKey: String, time: Int64) -> Data {
        var bytes = Data(upgradeResumePrefix)
        bytes.append(contentsOf: webSocketKey.utf8)
        bytes.append(UInt8(ascii: "\n"))
        bytes.append(contentsOf: String(time).utf8)
        return bytes
    }

    /// A resumption carried in the upgrade request's ``upgradeResumeHeader``: the device, the time
    /// the device made it (UNIX seconds), the ticket of its last `welcome`, and the proof: the
    /// HMAC-SHA256, under the ticket's secret, of ``upgradeResumedBytes(webSocketKey:time:)``. The
    /// header's value is the four, separated by single spaces: `<device> <time> <ticket> <proof>`,
    /// the ticket and the proof in base64.
    public struct UpgradeResume: Sendable, Equatable {
        /// The device id.
        public var device: String
        /// When the device made it, in UNIX seconds.
        public var time: Int64
        /// The sealed ticket, as the `welcome` gave it.
        public var ticket: Data
        /// The HMAC over the request's key and the time.
        public var proof: Data

        /// A resumption with these parts.
        public init(device: String, time: Int64, ticket: Data, proof: Data) {
            self.device = device
            self.time = time
            self.ticket = ticket
            self.proof = proof
        }

        /// A device's resumption for the request with `webSocketKey`, made at `time`.
        public init(device: String, ticket: LinkTicket, webSocketKey: String, time: Int64) {
            let bytes = DeviceLink.upgradeResumedBytes(webSocketKey: webSocketKey, time: time)
            let proof = HMAC<SHA256>.authenticationCode(for: bytes, using: SymmetricKey(data: ticket.secret))
            self.init(device: device, time: time, ticket: ticket.ticket, proof: Data(proof))
        }

        /// The header's value.
        public var headerValue: String {
            "\(device) \(time) \(ticket.base64EncodedString()) \(proof.base64EncodedString())"
        }

        /// Reads a header's value, or says what is wrong with it (the gateway's `400` names it).
        public init(headerValue: String) throws(LinkMessageError) {
            // Split on the bytes: splitting the string compares characters, which a reconnection
            // storm's profile showed.
            let parts = headerValue.utf8.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
            guard parts.count == 4 else {
                throw LinkMessageError("Herald-Resume must be four fields: <device> <time> <ticket> <proof>")
            }
            guard DeviceLink.isDeviceID(parts[0]) else {
                throw LinkMessageError("Herald-Resume's device must be 1-64 letters, digits or '-'")
            }
            guard let time = Self.unixSeconds(parts[1]) else {
                throw LinkMessageError(
                    "Herald-Resume's time must be UNIX seconds: 1-18 digits, no sign or leading zero")
            }
            guard let ticket = Data(base64Encoded: Data(parts[2])), !ticket.isEmpty else {
                throw LinkMessageError("Herald-Resume's ticket must be base64")
            }
            guard let proof = Data(base64Encoded: Data(parts[3])), proof.count == 32 else {
                throw LinkMessageError("Herald-Resume's proof must be 32 bytes in base64")
            }
            self.init(device: String(decoding: parts[0], as: UTF8.self), time: time, ticket: ticket, proof: proof)
        }

        /// A time as the device writes it (`String(Int64)` of a time after 1970): decimal digits
        /// with no sign and no leading zero, at most 18 of them, so that no difference with the
        /// gateway's clock can overflow. Anything else is nil.
        static func unixSeconds(_ bytes: some Collection<UInt8>) -> Int64? {
            guard (1...18).contains(bytes.count), bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                bytes.count == 1 || bytes.first != 0x30
            else { return nil }
            return bytes.reduce(Int64(0)) { $0 * 10 + Int64($1 - 0x30) }
        }
    }

    /// Whether `bytes` (UTF-8) are a device id: 1–64 ASCII letters, digits or `-`.
    public static func isDeviceID(_ bytes: some Collection<UInt8>) -> Bool {
        (1...64).contains(bytes.count)
            && bytes.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D
            }
    }
}
