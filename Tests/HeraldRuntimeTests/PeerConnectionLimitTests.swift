@testable import HeraldRuntime
import Logging
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

/// The count of open connections per address behind `--max-connections-per-address`.
@Suite struct PeerConnectionLimitTests {
    @Test func anAddressHoldsAtMostTheLimitAndClosingFreesAPlace() {
        let limit = PeerConnectionLimit(limit: 2)
        #expect(limit.admit("10.0.0.1") == .admitted)
        #expect(limit.admit("10.0.0.1") == .admitted)
        // A third from the same address is refused and not counted; another address is not affected.
        #expect(limit.admit("10.0.0.1") == .refused)
        #expect(limit.count(of: "10.0.0.1") == 2)
        #expect(limit.admit("10.0.0.2") == .admitted)
        // One closes: one more is taken, and no more.
        limit.release("10.0.0.1")
        #expect(limit.count(of: "10.0.0.1") == 1)
        #expect(limit.admit("10.0.0.1") == .admitted)
        #expect(limit.admit("10.0.0.1") == .refused)
        // Releasing what was never admitted changes nothing.
        limit.release("10.0.0.9")
        #expect(limit.count(of: "10.0.0.9") == 0)
    }

    @Test func zeroIsNoLimit() {
        #expect(PeerConnectionLimit.of(0) == nil)
        #expect(PeerConnectionLimit.of(3)?.limit == 3)
    }

    /// A channel is counted by its peer's IP address, whatever its port (an IPv4 address mapped
    /// into IPv6 as the IPv4 one), until it closes.
    @Test func aChannelIsCountedByItsAddressUntilItCloses() throws {
        let limit = PeerConnectionLimit(limit: 1)
        let first = EmbeddedChannel()
        try first.connect(to: SocketAddress(ipAddress: "192.0.2.7", port: 4000)).wait()
        let second = EmbeddedChannel()
        try second.connect(to: SocketAddress(ipAddress: "::ffff:192.0.2.7", port: 4001)).wait()
        #expect(limit.admit(first) == .admitted)
        #expect(limit.admit(second) == .refused)
        _ = try first.finish()
        #expect(limit.count(of: "192.0.2.7") == 0)
        #expect(limit.admit(second) == .admitted)
    }

    /// An IPv6 peer is counted by the /64 prefix its address is in: another address in the same
    /// prefix counts with it, one in the next prefix does not. The prefix is what the refusal line
    /// names.
    @Test func anIPv6PeerIsCountedByItsSlash64Prefix() throws {
        let limit = PeerConnectionLimit(limit: 1)
        let held = EmbeddedChannel()
        try held.connect(to: SocketAddress(ipAddress: "2001:db8:0:1::7", port: 4000)).wait()
        let samePrefix = EmbeddedChannel()
        try samePrefix.connect(to: SocketAddress(ipAddress: "2001:db8:0:1:a:b:c:d", port: 4001)).wait()
        let nextPrefix = EmbeddedChannel()
        try nextPrefix.connect(to: SocketAddress(ipAddress: "2001:db8:0:2::7", port: 4002)).wait()
        #expect(limit.admit(held) == .admitted)
        #expect(limit.admit(samePrefix) == .refused)
        #expect(limit.admit(nextPrefix) == .admitted)
        #expect(limit.count(of: "2001:db8:0:1::/64") == 1)
        #expect(
            limit.refusalLine(for: samePrefix.remoteAddress, at: .uptimeNanoseconds(0))
                == "2001:db8:0:1::/64 holds 1 connection already (the limit per address)")
        _ = try held.finish()
        #expect(limit.count(of: "2001:db8:0:1::/64") == 0)
        #expect(limit.admit(samePrefix) == .admitted)
    }

    /// The prefixes are written as RFC 5952 writes them, zero groups at the end folded into `::`.
    @Test(arguments: [
        ("2001:db8::1", "2001:db8::/64"),
        ("2001:db8:0:0:ffff::1", "2001:db8::/64"),
        ("2001:0:0:5::1", "2001:0:0:5::/64"),
        ("fe80::1", "fe80::/64"),
        ("::1", "::/64"),
        ("0:1:2:3:4:5:6:7", "0:1:2:3::/64"),
        ("2001:DB8:ABCD:12::", "2001:db8:abcd:12::/64"),
        ("::ffff:10.1.2.3", "10.1.2.3"),
        ("10.1.2.3", "10.1.2.3"),
    ])
    func theKeyOfAnAddress(address: String, key: String) throws {
        #expect(PeerConnectionLimit.key(try SocketAddress(ipAddress: address, port: 1)) == key)
    }

    /// Refusals are logged at most once per interval, on the loop's time, whatever the peers do
    /// meanwhile (connecting and closing in a loop included); the next line says how many went
    /// without one.
    @Test func refusalsAreLoggedAtMostOncePerInterval() throws {
        let limit = PeerConnectionLimit(limit: 1, logInterval: .seconds(10))
        let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
        let peer = try SocketAddress(ipAddress: "192.0.2.7", port: 4000)
        #expect(limit.refusalLine(for: peer, at: t0) == "192.0.2.7 holds 1 connection already (the limit per address)")
        #expect(limit.refusalLine(for: peer, at: t0 + .seconds(3)) == nil)
        limit.release("192.0.2.7")
        #expect(limit.refusalLine(for: peer, at: t0 + .seconds(9)) == nil)
        #expect(
            limit.refusalLine(for: peer, at: t0 + .seconds(10))
                == "192.0.2.7 holds 1 connection already (the limit per address); "
                + "2 more refused on this listener without a line since the last one")
        #expect(limit.refusalLine(for: peer, at: t0 + .seconds(19)) == nil)
    }

    /// A refused connection is closed when it becomes active, and counted; the first is logged, the
    /// one right after it only counted.
    @Test func aRefusedConnectionIsClosedCountedAndLoggedAtMostOncePerInterval() throws {
        let counted = Mutex<[String]>([])
        let lines = LogLines()
        let log = ListenerLog(logger: Logger(label: "test", factory: { _ in CapturingLogHandler(lines) })) { listener in
            counted.withLock { $0.append(listener) }
        }
        let limit = PeerConnectionLimit(limit: 1)
        let held = EmbeddedChannel()
        try held.connect(to: SocketAddress(ipAddress: "192.0.2.7", port: 4000)).wait()
        #expect(ConnectionRefusal.of(held, limit: limit, listener: "provider API", log: log) == nil)
        for port in [4001, 4002] {
            let over = EmbeddedChannel()
            try over.connect(to: SocketAddress(ipAddress: "192.0.2.7", port: port)).wait()
            let refusal = try #require(ConnectionRefusal.of(over, limit: limit, listener: "provider API", log: log))
            try over.pipeline.syncOperations.addHandler(refusal)
            over.pipeline.fireChannelActive()
            #expect(!over.isActive)
        }
        #expect(counted.withLock { $0 } == ["provider API", "provider API"])
        #expect(lines.all.count == 1)
        #expect(lines.all.first?.hasPrefix("connection closed listener=provider API peer=") == true, "\(lines.all)")
        #expect(lines.all.first?.contains("reason=192.0.2.7 holds 1 connection already") == true, "\(lines.all)")
        #expect(ConnectionRefusal.of(held, limit: nil, listener: "provider API", log: log) == nil)
    }
}
