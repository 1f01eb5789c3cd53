import Crypto
import Foundation

/// A device token: opaque bytes naming one app on one device in one environment (spec/APNS.md §5).
///
/// Herald issues 32-byte tokens (64 hex characters), but a provider may send any even-length hex
/// string; such tokens parse and are simply unknown.
public struct DeviceToken: Hashable, Sendable, CustomStringConvertible {
    /// The token's bytes.
    public let bytes: [UInt8]

    /// Wraps raw bytes.
    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// Parses hex in either case. Returns `nil` for an empty, odd-length or non-hex string.
    public init?(hex: some StringProtocol) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.utf8.count / 2)
        var high: UInt8?
        for c in hex.utf8 {
            let v: UInt8
            switch c {
            case 0x30...0x39: v = c &- 0x30
            case 0x41...0x46: v = c &- 0x41 &+ 10
            case 0x61...0x66: v = c &- 0x61 &+ 10
            default: return nil
            }
            if let h = high {
                bytes.append(h << 4 | v)
                high = nil
            } else {
                high = v
            }
        }
        guard high == nil, !bytes.isEmpty else { return nil }
        self.bytes = bytes
    }

    /// Lowercase hex, the form Herald hands out.
    public var hex: String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The hex form.
    public var description: String { hex }
}

/// Issues device tokens: an HMAC-SHA256, under the gateway's secret, over the device, the app's
/// bundle id, the environment and the device's generation. Tokens are therefore stable (the same
/// registration returns the same token), unforgeable without the secret, and change when the
/// device is reset (its generation goes up).
public struct TokenIssuer: Sendable {
    private let key: SymmetricKey

    /// Creates an issuer over a secret of at least 32 bytes.
    public init(secret: [UInt8]) {
        precondition(secret.count >= 32, "the token secret must be at least 32 bytes")
        self.key = SymmetricKey(data: secret)
    }

    /// The token for one app of one device in one environment at the device's current generation.
    public func token(device: String, bundleID: String, environment: APNsEnvironment, generation: Int) -> DeviceToken {
        var message = Data()
        for part in ["herald-token-v1", device, bundleID, environment.rawValue, String(generation)] {
            message.append(contentsOf: part.utf8)
            message.append(0)
        }
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: key)
        return DeviceToken(bytes: Array(mac))
    }
}
