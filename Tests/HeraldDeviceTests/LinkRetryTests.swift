#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import HeraldDevice

/// `GatewayLinkClient.connect(urls:…wait:)`: attempts that fail are tried again after the wait the
/// caller gives for that many failures, until the task is cancelled. Against a real socket that
/// refuses (bound, not listening); a gateway taking the device at last is
/// `TestDeviceReconnectTests` and `SocketActivationEndToEndTests`, through `herald test-device`.
@Suite struct LinkRetryTests {
    /// A port on 127.0.0.1 that refuses connections while the returned socket stays open.
    static func refusingPort() throws -> (descriptor: CInt, port: Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        try #require(bound)
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    @Test func failedAttemptsWaitTheirTurnUntilTheTaskIsCancelled() async throws {
        let (descriptor, port) = try Self.refusingPort()
        defer { close(descriptor) }
        let url = "ws://127.0.0.1:\(port)/device/v1"
        let asked = Mutex<[Int]>([])
        let (third, reached) = AsyncStream.makeStream(of: Void.self)
        let connecting = Task {
            try await GatewayLinkClient.connect(
                urls: [url, url], identity: DeviceIdentity(), failures: 1
            ) { failures in
                let count = asked.withLock {
                    $0.append(failures)
                    return $0.count
                }
                if count == 3 { reached.yield() }
                return .milliseconds(1)
            }
        }
        for await _ in third { break }
        connecting.cancel()
        await #expect(throws: CancellationError.self) { try await connecting.value }
        let waits = asked.withLock { $0 }
        #expect(Array(waits.prefix(3)) == [1, 2, 3], "a wait first (one failure already), then one per refusal")
    }

    /// A device waiting out a long backoff stops at once when its task is cancelled, and its wait
    /// leaves the loop's timers (they are ``LoopTimers``, not NIO tasks of their own).
    @Test func cancellingDuringAWaitEndsItAndLeavesNoTimer() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let (waiting, began) = AsyncStream.makeStream(of: Void.self)
        let connecting = Task {
            try await GatewayLinkClient.connect(
                urls: ["ws://127.0.0.1:9/device/v1"], identity: DeviceIdentity(), failures: 1, group: group
            ) { _ in
                began.yield()
                return .seconds(3600)
            }
        }
        for await _ in waiting { break }
        let pending = try await loop.submit { GatewayLinkClient.retryTimers.value(on: loop).count }.get()
        #expect(pending == 1, "the wait is one of the loop's timers")
        connecting.cancel()
        await #expect(throws: CancellationError.self) { try await connecting.value }
        let left = try await loop.submit { GatewayLinkClient.retryTimers.value(on: loop).count }.get()
        #expect(left == 0, "the cancelled wait is gone, not left to fire in an hour")
        try await group.shutdownGracefully()
    }

    @Test(arguments: [["http://example.invalid"], []])
    func aMalformedURLOrNoneIsRefusedAtOnceNotTriedAgain(urls: [String]) async {
        let failure = await #expect(throws: GatewayLinkClient.Failure.self) {
            _ = try await GatewayLinkClient.connect(urls: urls, identity: DeviceIdentity()) { _ in
                Issue.record("no wait for a URL that can never work")
                return .seconds(0)
            }
        }
        #expect(failure?.code == .badURL)
    }
}
