import CFloor
import Foundation

import Glibc

// The devices of the floor: one thread and epoll, `count` connections to `host:port`, at most
// `inFlight` at a time, spread over `sources` loopback addresses of their own (so that the kernel's
// search for a free source port stays short, as `herald test-device --idle-source` does). Each sends
// the upgrade request, reads the whole answer (the head and its first frame), and is then held open.

/// The Linux socket option that defers a bound socket's port until `connect`, when the kernel
/// picks one free for that destination (`IP_BIND_ADDRESS_NO_PORT`, <linux/in.h>).
private let ipBindAddressNoPort: Int32 = 24

/// A connection on its way to being answered.
private struct Pending {
    var index: Int
    var received: [UInt8] = []
    var sent = false
}

/// Opens the connections; prints one JSON line when every one has its answer (with how many were
/// the link's `welcome`), then holds them until standard input closes. With `resume`, connection
/// `index` carries `resume[index]`, a device's `Herald-Resume` for the key ``Wire/key(_:)`` of
/// `index`.
func connectAll(host: String, port: Int, count: Int, inFlight: Int, sources: [String], resume: [String]? = nil)
    -> Never
{
    let epoll = Epoll()
    let destination = ipv4(host, port)
    let sourceAddresses = sources.map { ipv4($0, 0) }
    var pending: [Int32: Pending] = [:]
    var held: [Int32] = []
    held.reserveCapacity(count)
    var started = 0
    var failed = 0
    var welcomed = 0
    var buffer = [UInt8](repeating: 0, count: 16_384)
    var events = [epoll_event](repeating: epoll_event(), count: 512)
    let clock = ContinuousClock()
    let begin = clock.now
    let cpuAtStart = processCPU()

    /// Opens connection `index` and waits for it to be writable.
    func open(_ index: Int) {
        let fd = tcpSocket()
        setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY)
        setOption(fd, Int32(IPPROTO_IP), ipBindAddressNoPort)
        bind(fd, sourceAddresses[index % sourceAddresses.count])
        var address = destination
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 || errno == EINPROGRESS else { fail("connect") }
        pending[fd] = Pending(index: index)
        epoll.add(fd, epollOut)
    }

    /// Opens the next connection not yet begun.
    func startNext() {
        open(started)
        started += 1
    }

    /// A connection that failed is closed and made again under the same index.
    func retry(_ fd: Int32, _ connection: Pending) {
        failed += 1
        epoll.remove(fd)
        close(fd)
        pending[fd] = nil
        open(connection.index)
    }

    while started < min(inFlight, count) { startNext() }
    while held.count < count {
        let ready = epoll.wait(into: &events)
        for event in events[0..<ready] {
            let fd = event.data.fd
            guard var connection = pending[fd] else { continue }
            if event.events & epollHangUp != 0 && event.events & epollIn == 0 {
                retry(fd, connection)
                continue
            }
            if !connection.sent {
                let request = Wire.request(
                    host: host, port: port, key: Wire.key(connection.index), resume: resume?[connection.index])
                let wrote = request.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                guard wrote == request.count else {
                    retry(fd, connection)
                    continue
                }
                connection.sent = true
                pending[fd] = connection
                epoll.modify(fd, epollIn)
                continue
            }
            let read = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if read <= 0 {
                if read < 0 && (errno == EAGAIN || errno == EINTR) { continue }
                retry(fd, connection)
                continue
            }
            connection.received.append(contentsOf: buffer[0..<read])
            let whole = connection.received.withUnsafeBytes { Wire.answerLength($0) != nil }
            guard whole else {
                pending[fd] = connection
                continue
            }
            if connection.received.withUnsafeBytes({ Wire.isWelcome($0) }) { welcomed += 1 }
            pending[fd] = nil
            epoll.remove(fd)
            held.append(fd)
            if started < count { startNext() }
        }
    }
    let elapsed = (clock.now - begin).components
    let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    say(
        "{\"connections\":\(held.count),\"seconds\":\(seconds),\"cpu\":\(processCPU() - cpuAtStart),\"retried\":\(failed),"
            + "\"welcomed\":\(welcomed)}"
    )
    while getchar() != EOF {}
    exit(0)
}
