import CFloor
import Foundation

import Glibc

// The system calls the kernel's floor and the client are made of: a listening socket, non-blocking
// connected sockets, and epoll. Errors end the benchmark with the call that failed.

/// Stops the benchmark: `call` failed with `errno`.
func fail(_ call: String) -> Never {
    FileHandle.standardError.write(Data("reconnect-floor: \(call): \(String(cString: strerror(errno)))\n".utf8))
    exit(1)
}

/// Writes `line` to standard output at once, for the harness that waits for it.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// A socket address for `host` (an IPv4 address) and `port`.
func ipv4(_ host: String, _ port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { fail("inet_pton \(host)") }
    return address
}

/// Sets an integer socket option.
func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32 = 1) {
    var value = value
    guard setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 else { fail("setsockopt") }
}

/// A non-blocking TCP socket.
func tcpSocket() -> Int32 {
    let fd = socket(
        AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { fail("socket") }
    return fd
}

/// Binds `fd` to `address`.
func bind(_ fd: Int32, _ address: sockaddr_in) {
    var address = address
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard result == 0 else { fail("bind") }
}

/// A listening socket on `host:port` with a queue of 4,096 and the options its connections inherit
/// (TCP_NODELAY, SO_KEEPALIVE), as the gateway's device link has.
func listeningSocket(host: String, port: Int) -> Int32 {
    let fd = tcpSocket()
    setOption(fd, SOL_SOCKET, SO_REUSEADDR)
    setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY)
    setOption(fd, SOL_SOCKET, SO_KEEPALIVE)
    bind(fd, ipv4(host, port))
    guard listen(fd, 4096) == 0 else { fail("listen") }
    return fd
}

/// An epoll instance and the calls made on it.
struct Epoll {
    let fd: Int32

    init() {
        fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard fd >= 0 else { fail("epoll_create1") }
    }

    /// Watches `socket` for `events`.
    func add(_ socket: Int32, _ events: UInt32) { control(EPOLL_CTL_ADD, socket, events) }
    /// Watches `socket` for `events` instead.
    func modify(_ socket: Int32, _ events: UInt32) { control(EPOLL_CTL_MOD, socket, events) }
    /// No longer watches `socket` (it stays open).
    func remove(_ socket: Int32) { control(EPOLL_CTL_DEL, socket, 0) }

    private func control(_ operation: Int32, _ socket: Int32, _ events: UInt32) {
        var event = epoll_event()
        event.events = events
        event.data.fd = socket
        guard epoll_ctl(fd, operation, socket, &event) == 0 else { fail("epoll_ctl") }
    }

    /// Waits for events; returns how many `events` now holds.
    func wait(into events: inout [epoll_event], timeout: Int32 = -1) -> Int {
        let count = epoll_wait(fd, &events, Int32(events.count), timeout)
        if count < 0 {
            if errno == EINTR { return 0 }
            fail("epoll_wait")
        }
        return Int(count)
    }
}

let epollIn = UInt32(EPOLLIN.rawValue)
let epollOut = UInt32(EPOLLOUT.rawValue)
let epollHangUp = UInt32(EPOLLRDHUP.rawValue) | UInt32(EPOLLHUP.rawValue) | UInt32(EPOLLERR.rawValue)

/// The CPU time this process has used, user and system, in seconds.
func processCPU() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
