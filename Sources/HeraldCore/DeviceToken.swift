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

extension DeviceToken: Codable {
    /// Decodes from hex.
    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        let hex = try container.decode(String.self)
        guard let token = DeviceToken(hex: hex) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a hex device token")
        }
        self = token
    }

    /// Encodes as lowercase hex.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }
}

/// The two APNs environments. Each has its own token space: a development token is unknown in
/// production (`BadDeviceToken`) and the other way round.
public enum APNsEnvironment: String, Sendable, Codable, CaseIterable {
    /// The sandbox (`api.sandbox.push.apple.com`): answers carry `apns-unique-id`.
    case development
    /// Production (`api.push.apple.com`).
    case production
}
