import Foundation
import HeraldCore
import HeraldDevice
import HeraldTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The app link holds at most ``AppLinkServer/maximumBacklog`` bytes for an app that does not read:
/// each unreadable line it sends is answered with a failure about fifty times its size, so a client
/// that writes and never reads once made the daemon's memory grow without end.
struct AppLinkBacklogTests {
    /// A plain client of the app link's Unix socket.
    final class UnixClient {
        let fd: Int32

        init(path: String) throws {
            fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                raw.copyBytes(from: Array(path.utf8.prefix(raw.count - 1)) + [0])
            }
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard connected == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        }

        /// Writes all of `bytes`; false once the peer has closed (no SIGPIPE).
        func write(_ bytes: [UInt8]) -> Bool {
            var offset = 0
            while offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard n > 0 else { return false }
                offset += n
            }
            return true
        }

        /// Reads until the peer closes or `limit` seconds pass without a byte: how many bytes came,
        /// and whether it was closed.
        func readToEnd(limit: Int = 20) -> (bytes: Int, closed: Bool) {
            var timeout = timeval(tv_sec: limit, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var total = 0
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = recv(fd, &buffer, buffer.count, 0)
                if n > 0 {
                    total += n
                    continue
                }
                return (total, n == 0 || errno == ECONNRESET)
            }
        }

        /// Sends one line and reads one line back.
        func exchange(_ line: String) -> String {
            _ = write(Array((line + "\n").utf8))
            var received: [UInt8] = []
            var byte: UInt8 = 0
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            while recv(fd, &byte, 1, 0) == 1, byte != UInt8(ascii: "\n") { received.append(byte) }
            return String(decoding: received, as: UTF8.self)
        }

        deinit { close(fd) }
    }

    @Test func aClientThatWritesAndNeverReadsIsClosedOnceItsBacklogIsFull() async throws {
        let device = try await TestDevice.start(gatewayURL: nil, apps: [])
        let greedy = try UnixClient(path: device.appLinkPath)
        // Each line "x" is answered with a protocol failure of about a hundred bytes: writing what
        // makes twice the limit in answers, never reading, passes the limit on the way.
        let lines = Array(repeating: Array("x\n".utf8), count: 4096).flatMap { $0 }
        var written = 0
        while written < 2 * AppLinkServer.maximumBacklog / 50, greedy.write(lines) { written += lines.count }
        // The daemon closed the link: what was written to the socket before it did, and its end.
        let (received, closed) = greedy.readToEnd()
        #expect(closed)
        #expect(received < AppLinkServer.maximumBacklog, "the link closed before the limit was written: \(received)")
        // The daemon serves the next app as before.
        let next = try UnixClient(path: device.appLinkPath)
        #expect(next.exchange("x").contains(#""failure""#))
        await device.stop()
    }
}
