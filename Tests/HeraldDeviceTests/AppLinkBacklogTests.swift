import Foundation
import HeraldCore
import HeraldDevice
import HeraldTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The app link holds at most its `maximumBacklog` bytes for an app that does not read:
/// each unreadable line it sends is answered with a failure about seventy times its size, so a
/// client that writes and never reads once made the daemon's memory grow without end. The clients'
/// socket calls block: they run off Swift concurrency's threads (``offThread(_:)``), which the
/// server they talk to, and every other test in the process, need.
struct AppLinkBacklogTests {
    /// A plain client of the app link's Unix socket; reads and writes give up after 20 s.
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
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            for option in [SO_RCVTIMEO, SO_SNDTIMEO] {
                setsockopt(fd, SOL_SOCKET, option, &timeout, socklen_t(MemoryLayout<timeval>.size))
            }
        }

        /// Writes all of `bytes`; false once the peer has closed or 20 s pass (no SIGPIPE).
        func write(_ bytes: [UInt8]) -> Bool {
            var offset = 0
            while offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return false }
                offset += n
            }
            return true
        }

        /// Reads until the peer closes, `lines` line ends have come, or 20 s pass without a byte:
        /// how many bytes and line ends came, and whether it was closed.
        func read(lines: Int = .max) -> (bytes: Int, lines: Int, closed: Bool) {
            var bytes = 0
            var ends = 0
            var buffer = [UInt8](repeating: 0, count: 65536)
            while ends < lines {
                let n = recv(fd, &buffer, buffer.count, 0)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return (bytes, ends, n == 0 || errno == ECONNRESET) }
                bytes += n
                ends += buffer[0..<n].lazy.filter { $0 == UInt8(ascii: "\n") }.count
            }
            return (bytes, ends, false)
        }

        deinit { close(fd) }
    }

    /// `count` unreadable lines, each answered with a protocol failure.
    static func lines(_ count: Int) -> [UInt8] { Array(repeating: Array("x\n".utf8), count: count).flatMap { $0 } }

    /// The limit these tests use: small, so that passing it is quick and leaves the process's other
    /// tests their threads (the default's 16 MiB is about 120,000 answers).
    static let limit = 64 * 1024

    /// A real app link server over a device service, with ``limit``.
    final class Server {
        let directory = URL(fileURLWithPath: "/tmp/hb-\(UUID().uuidString.prefix(8))")
        let service: DeviceService
        let server: AppLinkServer
        let task: Task<Void, Never>

        init() async throws {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var configuration = DeviceService.Configuration()
            configuration.stateDirectory = directory.path
            service = try await DeviceService(configuration: configuration)
            server = try await AppLinkServer.bind(path: configuration.appLinkPath, maximumBacklog: limit)
            task = Task { [server, service] in await server.run(service: service) }
        }

        var path: String { server.path }

        func stop() async {
            await server.close()
            await task.value
            await service.close()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    @Test func aClientThatWritesAndNeverReadsIsClosedOnceItsBacklogIsFull() async throws {
        let server = try await Server()
        let path = server.path
        let (received, written, closed, nextAnswered) = try await offThread {
            let greedy = try UnixClient(path: path)
            // Until the daemon closes the link, or 64 KiB of lines (answered with about seventy times
            // that, far past the limit and the sockets' buffers) are written.
            let chunk = Self.lines(1024)
            var written = 0
            while written < 64 * 1024, greedy.write(chunk) { written += chunk.count }
            let (received, _, closed) = greedy.read()
            // The daemon serves the next app as before.
            let next = try UnixClient(path: path)
            let nextAnswered = next.write(Array("x\n".utf8)) && next.read(lines: 1).lines == 1
            return (received, written, closed, nextAnswered)
        }
        #expect(closed, "\(received) bytes received after \(written) written, and the link still open")
        #expect(nextAnswered)
        await server.stop()
    }

    /// What waits is counted until it is written, not for ever: an app that reads is sent many
    /// times the limit over one link, which stays open.
    @Test func aClientThatReadsIsSentMoreThanTheLimitInAll() async throws {
        let server = try await Server()
        let path = server.path
        let (received, problem, stillOpen) = try await offThread { () throws -> (Int, String?, Bool) in
            let reader = try UnixClient(path: path)
            // 128 calls at a time: their answers (about 18 KB) fit in the limit even if all wait at once.
            let chunk = Self.lines(128)
            var received = 0
            while received <= 8 * Self.limit {
                let answers = reader.write(chunk) ? reader.read(lines: 128) : (bytes: 0, lines: 0, closed: true)
                guard answers.lines == 128 else { return (received, "then \(answers)", false) }
                received += answers.bytes
            }
            return (received, nil, reader.write(Array("x\n".utf8)) && reader.read(lines: 1).lines == 1)
        }
        #expect(problem == nil, "after \(received) bytes: \(problem ?? "")")
        #expect(stillOpen, "the link is still open after \(received) bytes")
        await server.stop()
    }
}
