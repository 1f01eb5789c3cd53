#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import Foundation
import Synchronization
import Testing

@testable import HeraldRuntime

/// A loopback socket that listens on a port of the kernel's choice until closed: a port taken.
private struct TakenPort: ~Copyable {
    let fd: Int32
    let port: Int

    init() throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = fd
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, 1) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        try #require(fd >= 0 && listening, "a listening loopback socket: \(String(cString: strerror(errno)))")
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}

/// The tests' and `herald up`'s private PostgreSQL server.
struct PrivatePostgresTests {
    /// A free port can be taken before the server binds it (the kernel gives the same ephemeral
    /// range to outgoing connections): the server is started on another one. A port the caller
    /// named is not replaced, and the failure says what the server logged.
    @Test func aChosenPortThatIsTakenIsReplacedAndANamedOneFailsWithTheServersReason() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-private-pg-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data")
        let taken = try TakenPort()
        let chosen = Mutex([taken.port])
        let server = try PrivatePostgres.start(
            dataDirectory: data, port: nil, settings: ["fsync": "off"],
            choosePort: {
                try chosen.withLock { ports in
                    ports.isEmpty ? try PrivatePostgres.freeLoopbackPort() : ports.removeFirst()
                }
            })
        defer { server.destroy() }
        #expect(server.port != taken.port)
        #expect(try server.sql("SELECT 40 + 2").trimmingCharacters(in: .whitespacesAndNewlines) == "42")
        try server.stop()

        let failure = #expect(throws: PrivatePostgres.Failure.self) {
            _ = try PrivatePostgres.start(dataDirectory: data, port: taken.port, settings: ["fsync": "off"])
        }
        #expect(failure?.description.contains("Address already in use") == true, "\(String(describing: failure))")
        #expect(failure?.portWasTaken == true)
    }
}
