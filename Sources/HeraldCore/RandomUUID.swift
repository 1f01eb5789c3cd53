#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation
import Synchronization

/// New UUIDs as lowercase text, the form APNs uses for `apns-id` and `apns-unique-id`: random
/// (version 4) or time-ordered (version 7).
///
/// The gateway makes one or two per push. Foundation's `UUID()` asks the kernel for 16 bytes each
/// time (on Linux it opens `/dev/urandom`); this draws them from a 4 KiB pool that the kernel's
/// generator (`arc4random_buf`, which is `getrandom`) refills, so a UUID costs a lock and a copy.
/// The bytes are laid out as RFC 9562 numbers them: byte 0 is the most significant.
public enum RandomUUID {
    private struct Pool {
        var bytes = [UInt8](repeating: 0, count: 4096)
        var next = 4096
    }
    private static let pool = Mutex(Pool())

    /// A new random (version 4) UUID, `8-4-4-4-12` lowercase hex digits.
    public static func lowercaseString() -> String {
        format(randomBytes(), version: 4)
    }

    /// A new time-ordered (version 7, RFC 9562) UUID: the first 48 bits are `time` in UNIX
    /// milliseconds, the rest random. Identifiers made later sort later (to the millisecond), so
    /// an index on them grows at one end instead of everywhere.
    public static func timeOrderedLowercaseString(at time: Date) -> String {
        var raw = randomBytes()
        let milliseconds = UInt64(max(0, (time.timeIntervalSince1970 * 1000).rounded(.down)))
        withUnsafeMutableBytes(of: &raw) { b in
            for i in 0..<6 { b[i] = UInt8(truncatingIfNeeded: milliseconds >> (40 - 8 * UInt64(i))) }
        }
        return format(raw, version: 7)
    }

    private static func randomBytes() -> (UInt64, UInt64) {
        var raw: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &raw) { draw(into: $0) }
        return raw
    }

    /// `count` random bytes (at most 4,096) from the same pool: a device link's challenge and a
    /// resumption ticket's secret take theirs here rather than a system call per eight bytes.
    public static func bytes(_ count: Int) -> Data {
        precondition(count <= 4096, "at most 4,096 random bytes at a time")
        var data = Data(count: count)
        data.withUnsafeMutableBytes { draw(into: $0) }
        return data
    }

    /// Fills `out` from the pool, refilling it from the kernel's generator first when it holds too few.
    private static func draw(into out: UnsafeMutableRawBufferPointer) {
        pool.withLock { pool in
            if pool.next + out.count > pool.bytes.count {
                pool.bytes.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
                pool.next = 0
            }
            pool.bytes.withUnsafeBytes { src in
                out.copyMemory(from: UnsafeRawBufferPointer(rebasing: src[pool.next..<pool.next + out.count]))
            }
            pool.next += out.count
        }
    }

    private static func format(_ raw: (UInt64, UInt64), version: UInt8) -> String {
        var raw = raw
        return withUnsafeMutableBytes(of: &raw) { b in
            b[6] = (b[6] & 0x0F) | version << 4
            b[8] = (b[8] & 0x3F) | 0x80  // RFC 9562 variant
            return String(unsafeUninitializedCapacity: 36) { out in
                let digits: StaticString = "0123456789abcdef"
                var o = 0
                for i in 0..<16 {
                    if i == 4 || i == 6 || i == 8 || i == 10 {
                        out[o] = UInt8(ascii: "-")
                        o += 1
                    }
                    out[o] = digits.utf8Start[Int(b[i] >> 4)]
                    out[o + 1] = digits.utf8Start[Int(b[i] & 0x0F)]
                    o += 2
                }
                return o
            }
        }
    }
}
