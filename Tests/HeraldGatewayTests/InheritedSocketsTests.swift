#if canImport(Glibc)
    import Glibc
#endif
import NIOCore
import Testing

@testable import HeraldGateway

/// Sockets handed over by systemd's socket activation: what the variables say, and which sockets a
/// listener can take. `SocketActivationEndToEndTests` restarts a real gateway on one.
@Suite struct InheritedSocketsTests {
    static let me: Int32 = 4242

    static func parse(_ environment: [String: String]) throws -> InheritedSockets {
        try InheritedSockets(environment: environment, processID: me)
    }

    static func message(_ environment: [String: String]) -> String {
        do {
            _ = try parse(environment)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test func socketsAreNamedAndNumberedFromThree() throws {
        let sockets = try Self.parse(["LISTEN_PID": "4242", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "link:provider"])
        #expect(sockets.descriptors == ["link": [3], "provider": [4]])
        #expect(sockets["link"] == [3] && sockets["binary"].isEmpty)
        #expect(sockets.all.map(\.name) == ["link", "provider"])
    }

    /// A socket unit with two `ListenStream=` lines (an IPv4 and an IPv6 address, say) names both alike.
    @Test func aListenerMayTakeSeveralSockets() throws {
        let sockets = try Self.parse([
            "LISTEN_PID": "4242", "LISTEN_FDS": "3", "LISTEN_FDNAMES": "link:provider:link",
        ])
        #expect(sockets["link"] == [3, 5] && sockets["provider"] == [4])
        #expect(sockets.all.map(\.descriptor) == [3, 4, 5])
    }

    @Test func variablesMeantForAnotherProcessOrAbsentHandNothingOver() throws {
        #expect(try Self.parse([:]).isEmpty)
        #expect(try Self.parse(["LISTEN_PID": "17", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "link"]).isEmpty)
        #expect(try Self.parse(["LISTEN_PID": "4242", "LISTEN_FDS": "0"]).isEmpty)
    }

    @Test func malformedVariablesAreRefusedByName() {
        #expect(Self.message(["LISTEN_PID": "me"]).contains("LISTEN_PID must be a process id, not \"me\""))
        #expect(Self.message(["LISTEN_PID": "4242", "LISTEN_FDS": "x"]).contains("LISTEN_FDS must be the number"))
        #expect(Self.message(["LISTEN_PID": "4242"]).contains("LISTEN_FDS must be the number"))
        let unnamed = Self.message(["LISTEN_PID": "4242", "LISTEN_FDS": "1"])
        #expect(unnamed.contains("LISTEN_FDNAMES must name each of the 1 sockets"), "\(unnamed)")
        #expect(unnamed.contains("provider, development, link, binary, feedback, channels, channels-development"))
        let short = Self.message(["LISTEN_PID": "4242", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "link"])
        #expect(short.contains("LISTEN_FDNAMES must name each of the 2 sockets"), "\(short)")
        let unknown = Self.message(["LISTEN_PID": "4242", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "link:admin"])
        #expect(unknown.contains("\"admin\" (descriptor 4) names no listener"), "\(unknown)")
    }

    /// A socket of `type` bound to 127.0.0.1 on a free port, listening or not.
    static func socketOnLoopback(type: Int32 = Int32(SOCK_STREAM.rawValue), listening: Bool) throws -> CInt {
        let descriptor = socket(AF_INET, type, 0)
        try #require(descriptor >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(bound == 0)
        if listening { try #require(listen(descriptor, 16) == 0) }
        return descriptor
    }

    static func checking(_ name: String, _ descriptor: CInt) -> String {
        do {
            try InheritedSockets(descriptors: [name: [descriptor]]).check()
            return "accepted"
        } catch {
            return "\(error)"
        }
    }

    @Test func aListeningStreamSocketIsTakenAndClosedOnExec() throws {
        let descriptor = try Self.socketOnLoopback(listening: true)
        defer { close(descriptor) }
        #expect(fcntl(descriptor, F_GETFD) & FD_CLOEXEC == 0)
        #expect(Self.checking("development", descriptor) == "accepted", "cleartext on loopback is fine")
        #expect(fcntl(descriptor, F_GETFD) & FD_CLOEXEC != 0, "no process the gateway starts inherits it")
    }

    @Test func aSocketThatIsNotListeningOrNotAStreamIsRefused() throws {
        let bound = try Self.socketOnLoopback(listening: false)
        defer { close(bound) }
        #expect(
            Self.checking("link", bound) == "the socket handed over as \"link\" (descriptor \(bound)) is not listening")
        let datagram = try Self.socketOnLoopback(type: Int32(SOCK_DGRAM.rawValue), listening: false)
        defer { close(datagram) }
        #expect(Self.checking("link", datagram).contains("(descriptor \(datagram)) is not a stream socket"))
        let file = open("/dev/null", O_RDONLY)
        defer { close(file) }
        #expect(Self.checking("binary", file).contains("is not a stream socket"))
    }

    @Test func cleartextListenersTakeLoopbackSocketsOnly() throws {
        #expect(InheritedSockets.isLoopback(try SocketAddress(ipAddress: "127.0.0.2", port: 1)))
        #expect(InheritedSockets.isLoopback(try SocketAddress(ipAddress: "::1", port: 1)))
        #expect(!InheritedSockets.isLoopback(try SocketAddress(ipAddress: "0.0.0.0", port: 1)))
        #expect(!InheritedSockets.isLoopback(try SocketAddress(ipAddress: "10.1.2.3", port: 1)))
        #expect(InheritedSockets.listeners.filter(\.cleartext).map(\.name) == ["development", "channels-development"])
    }
}
