#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import NIOCore
import NIOPosix

/// Listening sockets a gateway was handed when it started, by name: systemd's socket activation
/// (`LISTEN_PID`, `LISTEN_FDS`, `LISTEN_FDNAMES`; docs/listeners.md, "Sockets handed over"). A
/// listener with sockets here takes its connections from them instead of binding its address, so
/// that they outlive the gateway's restarts: connections made while no gateway runs wait in a
/// socket's queue instead of being refused. A listener may have several (a socket unit with more
/// than one `ListenStream=`, such as an IPv4 and an IPv6 address, names each the same).
public struct InheritedSockets: Sendable, Equatable {
    /// The names a socket may have, one per listener, and whether that listener speaks cleartext
    /// to whoever connects (its socket must then be bound to a loopback address).
    public static let listeners: [(name: String, cleartext: Bool)] = [
        ("provider", false), ("development", true), ("link", false), ("binary", false), ("feedback", false),
        ("channels", false), ("channels-development", true),
    ]

    /// The first descriptor handed over (`SD_LISTEN_FDS_START`).
    public static let firstDescriptor: CInt = 3

    /// The descriptors of each listener's sockets, by listener name, in the order handed over.
    public private(set) var descriptors: [String: [CInt]]

    /// No sockets: every listener binds its address.
    public init() { descriptors = [:] }

    /// These descriptors, by listener name (for tests: the variables always number them from 3).
    init(descriptors: [String: [CInt]]) { self.descriptors = descriptors }

    /// The sockets `environment` hands to the process `processID`. Nothing when `LISTEN_PID` is
    /// absent or names another process (the variables were meant for a parent). Throws when the
    /// variables are malformed, or a socket is unnamed or has a name no listener has. The
    /// descriptors themselves are not looked at (``check()``).
    public init(environment: [String: String], processID: Int32) throws {
        descriptors = [:]
        guard let pid = environment["LISTEN_PID"] else { return }
        guard let owner = Int32(pid), owner > 0 else {
            throw InheritedSocketError("LISTEN_PID must be a process id, not \"\(pid)\"")
        }
        guard owner == processID else { return }
        let countText = environment["LISTEN_FDS"] ?? ""
        guard let count = Int(countText), count >= 0, count <= 64 else {
            throw InheritedSocketError("LISTEN_FDS must be the number of sockets handed over, not \"\(countText)\"")
        }
        if count == 0 { return }
        let known = Self.listeners.map(\.name).joined(separator: ", ")
        let names = (environment["LISTEN_FDNAMES"] ?? "").split(separator: ":", omittingEmptySubsequences: false)
            .map(String.init)
        guard names.count == count, environment["LISTEN_FDNAMES"] != nil else {
            throw InheritedSocketError(
                "LISTEN_FDNAMES must name each of the \(count) sockets handed over, separated by colons, each one "
                    + "of: \(known) (FileDescriptorName= in a systemd socket unit)")
        }
        for (index, name) in names.enumerated() {
            guard Self.listeners.contains(where: { $0.name == name }) else {
                throw InheritedSocketError(
                    "the socket handed over as \"\(name)\" (descriptor \(Self.firstDescriptor + CInt(index))) names "
                        + "no listener; a name is one of: \(known)")
            }
            descriptors[name, default: []].append(Self.firstDescriptor + CInt(index))
        }
    }

    /// The sockets handed over for `listener` (one of ``listeners``' names); none: it binds its own.
    public subscript(_ listener: String) -> [CInt] { descriptors[listener] ?? [] }

    /// Every socket handed over, with its listener's name, in the order of their descriptors.
    public var all: [(name: String, descriptor: CInt)] {
        descriptors.flatMap { name, list in list.map { (name, $0) } }.sorted { $0.descriptor < $1.descriptor }
    }

    /// Whether any socket was handed over.
    public var isEmpty: Bool { descriptors.isEmpty }

    /// Checks each socket: an IPv4 or IPv6 stream socket, already listening, and for a cleartext
    /// listener bound to a loopback address. Marks each close-on-exec, so that no process the
    /// gateway starts holds it.
    public func check() throws {
        for (name, descriptor) in all {
            let what = "the socket handed over as \"\(name)\" (descriptor \(descriptor))"
            guard Self.option(descriptor, SO_TYPE) == Int32(SOCK_STREAM.rawValue) else {
                throw InheritedSocketError("\(what) is not a stream socket (ListenStream= in a systemd socket unit)")
            }
            guard Self.option(descriptor, SO_ACCEPTCONN) == 1 else {
                throw InheritedSocketError("\(what) is not listening")
            }
            guard let address = Self.localAddress(descriptor) else {
                throw InheritedSocketError("\(what) is not bound to an IPv4 or IPv6 address")
            }
            if Self.listeners.contains(where: { $0.name == name && $0.cleartext }), !Self.isLoopback(address) {
                throw InheritedSocketError(
                    "\(what) is bound to \(address), but that listener speaks cleartext and is served on loopback only")
            }
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        }
    }

    /// The address a socket is bound to, if it is an IPv4 or IPv6 socket.
    static func localAddress(_ descriptor: CInt) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let bound = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard bound == 0 else { return nil }
        switch CInt(storage.ss_family) {
        case AF_INET:
            return withUnsafeBytes(of: &storage) {
                SocketAddress($0.load(as: sockaddr_in.self), host: "")
            }
        case AF_INET6:
            return withUnsafeBytes(of: &storage) {
                SocketAddress($0.load(as: sockaddr_in6.self), host: "")
            }
        default:
            return nil
        }
    }

    static func isLoopback(_ address: SocketAddress) -> Bool {
        guard let ip = address.ipAddress else { return false }
        return ip.hasPrefix("127.") || ip == "::1"
    }

    static func option(_ descriptor: CInt, _ name: CInt) -> Int32? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, name, &value, &length) == 0 else { return nil }
        return value
    }
}

/// Sockets handed over that the gateway cannot use; the message names the variable or the socket.
public struct InheritedSocketError: Error, CustomStringConvertible, Sendable {
    /// What is wrong.
    public var description: String

    init(_ description: String) { self.description = description }
}

/// The server channels of one listener: the one it bound, or one for each socket handed over.
struct ListeningChannels: Sendable {
    let all: [any Channel]

    /// The first channel's address (the listener's, when it bound its own).
    var localAddress: SocketAddress? { all.first?.localAddress }

    /// Stops accepting on every channel.
    func close() async throws {
        for channel in all { try? await channel.close() }
    }
}

extension ServerBootstrap {
    /// Binds `host:port`, or with `sockets` takes those listening sockets instead (their addresses
    /// are what they were bound to). NIO listens on a socket it is handed with a queue of 128; the
    /// queue is set to `backlog` again, as when the listener binds its own.
    func bind(host: String, port: Int, sockets: [CInt], backlog: Int32) async throws -> ListeningChannels {
        guard !sockets.isEmpty else { return ListeningChannels(all: [try await bind(host: host, port: port).get()]) }
        var channels: [any Channel] = []
        do {
            for socket in sockets {
                let channel = try await withBoundSocket(socket).get()
                channels.append(channel)
                try await channel.eventLoop.submit {
                    guard listen(socket, backlog) == 0 else {
                        throw InheritedSocketError(
                            "listening on the socket handed over (descriptor \(socket)) failed: errno \(errno)")
                    }
                }.get()
            }
        } catch {
            for channel in channels { try? await channel.close() }
            throw error
        }
        return ListeningChannels(all: channels)
    }
}
