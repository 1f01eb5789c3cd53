import Foundation

/// A device token: opaque bytes naming one app on one device in one environment (docs/device-link.md).
///
/// Herald issues 32-byte tokens (64 hex characters), but a provider may send any even-length hex
/// string; such tokens parse and are simply unknown.
public struct DeviceToken: Hashable, Sendable, CustomStringConvertible {
    /// The token's bytes.
    public let bytes: [UInt8]

    /// Wraps raw bytes.
    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// Hashes the bytes in one piece (the synthesized hash feeds them to the hasher one at a time,
    /// and a registry lookup runs for every push).
    public func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    /// Parses hex in either case. Returns `nil` for an empty, odd-length or non-hex string.
    public init?(hex: some StringProtocol) {
        let parsed = hex.utf8.withContiguousStorageIfAvailable(Self.parse) ?? Self.parse(Array(hex.utf8))
        guard let parsed else { return nil }
        self.bytes = parsed
    }

    /// Whether `hex` is a token ``init(hex:)`` accepts (non-empty, even length, hex digits in either
    /// case), checked without making the token: a bulk send checks every one before it goes.
    public static func isHex(_ hex: some StringProtocol) -> Bool {
        func check(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
            guard !text.isEmpty, text.count % 2 == 0 else { return false }
            return text.allSatisfy { nibble($0) != nil }
        }
        return hex.utf8.withContiguousStorageIfAvailable(check) ?? Array(hex.utf8).withUnsafeBufferPointer(check)
    }

    /// Parses hex given as UTF-8 bytes (a JSON string as it stands in a message).
    init?(hexUTF8 text: UnsafeRawBufferPointer) {
        guard let parsed = Self.parse(text.assumingMemoryBound(to: UInt8.self)) else { return nil }
        self.bytes = parsed
    }

    /// The value of one hex digit in either case; `nil` for anything else.
    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c &- 0x30
        case 0x41...0x46: return c &- 0x41 &+ 10
        case 0x61...0x66: return c &- 0x61 &+ 10
        default: return nil
        }
    }

    private static func parse(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard !text.isEmpty, text.count % 2 == 0 else { return nil }
        var valid = true
        let bytes = [UInt8](unsafeUninitializedCapacity: text.count / 2) { out, count in
            for i in 0..<text.count / 2 {
                guard let high = nibble(text[2 * i]), let low = nibble(text[2 * i + 1]) else {
                    valid = false
                    break
                }
                out[i] = high << 4 | low
                count = i + 1
            }
        }
        return valid ? bytes : nil
    }

    private static func parse(_ text: [UInt8]) -> [UInt8]? { text.withUnsafeBufferPointer(parse) }

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
