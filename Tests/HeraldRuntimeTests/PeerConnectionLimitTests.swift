import HeraldRuntime
import Logging
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

/// The count of open connections per address behind `--max-connections-per-address`.
@Suite struct PeerConnectionLimitTests {
    @Test func anAddressHoldsAtMostTheLimitAndClosingFreesAPlace() {
        let limit = PeerConnectionLimit(limit: 2)
        #expect(limit.admit("10.0.0.1"))
        #expect(limit.admit("10.0.0.1"))
        // A third from the same address is refused and not counted; another address is not affected.
        #expect(!limit.admit("10.0.0.1"))
        #expect(limit.count(of: "10.0.0.1") == 2)
        #expect(limit.admit("10.0.0.2"))
        // One closes: one more is taken, and no more.
        limit.release("10.0.0.1")
        #expect(limit.count(of: "10.0.0.1") == 1)
        #expect(limit.admit("10.0.0.1"))
        #expect(!limit.admit("10.0.0.1"))
        // Releasing what was never admitted changes nothing.
        limit.release("10.0.0.9")
        #expect(limit.count(of: "10.0.0.9") == 0)
    }

    @Test func zeroIsNoLimit() {
        #expect(PeerConnectionLimit.of(0) == nil)
        #expect(PeerConnectionLimit.of(3)?.limit == 3)
    }

    /// A channel is counted by its peer's IP address, whatever its port, until it closes.
    @Test func aChannelIsCountedByItsAddressUntilItCloses() throws {
        let limit = PeerConnectionLimit(limit: 1)
        let first = EmbeddedChannel()
        try first.connect(to: SocketAddress(ipAddress: "192.0.2.7", port: 4000)).wait()
        let second = EmbeddedChannel()
        try second.connect(to: SocketAddress(ipAddress: "192.0.2.7", port: 4001)).wait()
        #expect(limit.admit(first))
        #expect(!limit.admit(second))
        #expect(
            limit.reason(for: second.remoteAddress) == "192.0.2.7 holds 1 connection already (the limit per address)")
        _ = try first.finish()
        #expect(limit.count(of: "192.0.2.7") == 0)
        #expect(limit.admit(second))
    }

    /// The refusal's handler logs the reason once and closes the connection when it becomes active.
    @Test func aRefusedConnectionIsLoggedAndClosed() throws {
        let closes = Mutex<[String]>([])
        let log = ListenerLog(logger: Logger(label: "test")) { listener in closes.withLock { $0.append(listener) } }
        let channel = EmbeddedChannel(
            handler: ConnectionRefusal(listener: "provider API", reason: "too many", log: log))
        try channel.connect(to: SocketAddress(ipAddress: "192.0.2.7", port: 4000)).wait()
        #expect(!channel.isActive)
        #expect(closes.withLock { $0 } == ["provider API"])
    }
}
