import Foundation
import HeraldCore

/// The delivery-log record of a push delivered and acknowledged at once (``DeliveredPush``), as
/// both stores keep it: a few dozen bytes instead of the JSON run of its events (about 240 bytes
/// for a typical push). Nearly every row of the log is one, so this is most of the log's size on
/// disk and most of the bytes its writer pushes through SQLite's WAL or PostgreSQL's.
///
/// The layout, version 1 (every integer a LEB128 varint, signed ones zigzag-encoded first; times in
/// milliseconds since 1970, as the JSON records have them):
///
/// | field | encoding |
/// |---|---|
/// | marker | the byte `0x01` (a JSON record starts with `[` or `{`) |
/// | accepted | signed |
/// | delivered − accepted | signed |
/// | acknowledged − delivered | signed |
/// | binary interface identifier | `0`, or `1` followed by the identifier |
/// | warnings | their count, then each name as length and UTF-8 |
/// | device id | length and UTF-8 |
/// | topic | length and UTF-8 |
///
/// It reads back as the same events as the JSON run (docs/admin-api.md, the delivery log).
enum DeliveredRecord {
    /// The first byte of a record in this layout.
    static let marker: UInt8 = 0x01

    /// Writes `push`'s record.
    static func write(_ push: DeliveredPush, to w: inout JSONWriter) {
        let accepted = milliseconds(push.acceptedAt)
        let delivered = milliseconds(push.deliveredAt)
        let acknowledged = milliseconds(push.acknowledgedAt)
        w.byte(marker)
        signed(accepted, to: &w)
        signed(delivered &- accepted, to: &w)
        signed(acknowledged &- delivered, to: &w)
        if let identifier = push.binaryIdentifier {
            w.byte(1)
            unsigned(UInt64(identifier), to: &w)
        } else {
            w.byte(0)
        }
        unsigned(UInt64(push.warnings.rawValue.nonzeroBitCount), to: &w)
        for warning in push.warnings { text(warning.rawValue, to: &w) }
        text(push.deviceID, to: &w)
        text(push.topic, to: &w)
    }

    /// The events of a record in this layout (its first byte is ``marker``), with the row's
    /// identifiers; a record cut short or otherwise malformed throws ``CorruptLogRecord``.
    static func events(_ record: Data, apnsID: String, uniqueID: String?) throws -> [DeliveryEvent] {
        try record.withUnsafeBytes { bytes in
            var r = Reader(bytes: bytes)
            guard try r.byte() == marker else { throw CorruptLogRecord(reason: "not a delivered push's record") }
            let accepted = try r.signed()
            let delivered = accepted &+ (try r.signed())
            let acknowledged = delivered &+ (try r.signed())
            var binaryIdentifier: UInt32?
            switch try r.byte() {
            case 0: break
            case 1:
                guard let identifier = UInt32(exactly: try r.unsigned()) else {
                    throw CorruptLogRecord(reason: "a binary interface identifier over 32 bits")
                }
                binaryIdentifier = identifier
            default: throw CorruptLogRecord(reason: "an unknown flag")
            }
            let count = try r.unsigned()
            // Each warning takes at least its length byte.
            guard count <= UInt64(r.remaining) else { throw CorruptLogRecord(reason: "more warnings than bytes") }
            var warnings: [String] = []
            for _ in 0..<count { warnings.append(try r.text()) }
            let deviceID = try r.text()
            let topic = try r.text()
            guard r.remaining == 0 else { throw CorruptLogRecord(reason: "bytes after the topic") }
            return DeliveredPush.events(
                apnsID: apnsID, uniqueID: uniqueID, deviceID: deviceID, topic: topic,
                binaryIdentifier: binaryIdentifier, acceptedAt: date(accepted), deliveredAt: date(delivered),
                acknowledgedAt: date(acknowledged), warnings: warnings)
        }
    }

    private static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }

    private static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    private static func unsigned(_ value: UInt64, to w: inout JSONWriter) {
        var value = value
        while value >= 0x80 {
            w.byte(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        w.byte(UInt8(value))
    }

    private static func signed(_ value: Int64, to w: inout JSONWriter) {
        unsigned(UInt64(bitPattern: (value << 1) ^ (value >> 63)), to: &w)
    }

    private static func text(_ s: String, to w: inout JSONWriter) {
        unsigned(UInt64(s.utf8.count), to: &w)
        w.text(s)
    }

    /// Reads a record's fields in order, each checked against the bytes left.
    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        var remaining: Int { bytes.count - offset }

        mutating func byte() throws -> UInt8 {
            guard offset < bytes.count else { throw CorruptLogRecord(reason: "cut short") }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func unsigned() throws -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let b = try byte()
                guard shift < 64, shift < 63 || b <= 1 else { throw CorruptLogRecord(reason: "a number over 64 bits") }
                value |= UInt64(b & 0x7F) << shift
                if b < 0x80 { return value }
                shift += 7
            }
        }

        mutating func signed() throws -> Int64 {
            let raw = try unsigned()
            return Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
        }

        mutating func text() throws -> String {
            let length = try unsigned()
            guard length <= UInt64(remaining) else { throw CorruptLogRecord(reason: "a text longer than the record") }
            let start = offset
            offset += Int(length)
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<offset]), as: UTF8.self)
        }
    }
}

/// A delivery-log record that cannot be read.
struct CorruptLogRecord: Error, CustomStringConvertible {
    /// What is wrong with it.
    var reason: String

    var description: String { "a delivery-log record could not be read: \(reason)" }
}
