import Foundation
import HeraldCore
import HeraldRuntime
import NIOCore
import NIOPosix

extension GatewayLinkClient {
    /// Connects to the first of `urls` (from `start`) that takes the device, trying again after every
    /// failure, each time at the next URL, after `wait(failures)`; with `failures` above 0 it waits
    /// first. The attempts and the waits between them all run on one event loop, so the caller's
    /// task waits once, for the link: a device that fails a thousand times costs its task nothing
    /// meanwhile (a wait and a try in a task are hops between threads each time). Returns the link
    /// and the index of its URL. Cancelling the task stops the attempts (`CancellationError`); a
    /// malformed URL or source address, or no URL at all, throws at once.
    public static func connect(
        urls: [String], from start: Int = 0, identity: DeviceIdentity, caCertificatePEM: String? = nil,
        autoAcknowledge: Bool = true, sourceAddress: String? = nil, failures: Int = 0,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        wait: @escaping @Sendable (_ failures: Int) -> Duration
    ) async throws -> (client: GatewayLinkClient, index: Int) {
        guard !urls.isEmpty else { throw Failure(code: .badURL, message: "no gateway link URL to connect to") }
        let targets = try urls.map {
            try Target(url: $0, caCertificatePEM: caCertificatePEM, sourceAddress: sourceAddress)
        }
        let loop = group.any()
        let attempts = Attempts(
            targets: targets, index: start % urls.count, failures: failures, identity: identity,
            autoAcknowledge: autoAcknowledge, wait: wait, loop: loop)
        return try await withTaskCancellationHandler {
            loop.execute { attempts.begin() }
            return try await attempts.result.futureResult.get()
        } onCancel: {
            loop.execute { attempts.cancel() }
        }
    }

    /// The waits between attempts, on each loop: in a heap of their own (``LoopTimers``), not as NIO
    /// tasks each. NIO cancels a task by searching its loop's tasks one by one, and every connection
    /// attempt schedules and cancels one (its connect timeout): with the waits of many devices on one
    /// loop (a process holding thousands of test devices after their gateway restarted), that search
    /// and the heap's upkeep were about a tenth of the test devices' samples in a storm's profile,
    /// and a twentieth with the waits here.
    static let retryTimers = PerLoop { LoopTimers(loop: $0) }

    /// The attempts of one ``connect(urls:from:identity:caCertificatePEM:autoAcknowledge:sourceAddress:failures:group:wait:)``,
    /// touched only on their loop.
    final class Attempts: @unchecked Sendable {
        let targets: [Target]
        let identity: DeviceIdentity
        let autoAcknowledge: Bool
        let wait: @Sendable (Int) -> Duration
        let loop: any EventLoop
        let result: EventLoopPromise<(client: GatewayLinkClient, index: Int)>
        var index: Int
        var failures: Int
        var pause: LoopTimers.Timer?
        var cancelled = false

        init(
            targets: [Target], index: Int, failures: Int, identity: DeviceIdentity, autoAcknowledge: Bool,
            wait: @escaping @Sendable (Int) -> Duration, loop: any EventLoop
        ) {
            self.targets = targets
            self.index = index
            self.failures = failures
            self.identity = identity
            self.autoAcknowledge = autoAcknowledge
            self.wait = wait
            self.loop = loop
            result = loop.makePromise()
        }

        func begin() {
            if failures > 0 { pauseThenTry() } else { attempt() }
        }

        func pauseThenTry() {
            let delay = wait(failures)
            let timers = GatewayLinkClient.retryTimers.value(on: loop)
            pause = timers.schedule(in: TimeAmount(delay)) { self.attempt() }
        }

        func attempt() {
            loop.assertInEventLoop()
            guard !cancelled else { return }
            let current = index
            GatewayLinkClient.open(targets[current], identity: identity, autoAcknowledge: autoAcknowledge, on: loop)
                .hop(to: loop).whenComplete { outcome in
                    switch outcome {
                    case .success(let client):
                        if self.cancelled {
                            client.channel.close(promise: nil)
                        } else {
                            self.result.succeed((client, current))
                        }
                    case .failure:
                        guard !self.cancelled else { return }
                        self.failures += 1
                        self.index = (current + 1) % self.targets.count
                        self.pauseThenTry()
                    }
                }
        }

        func cancel() {
            guard !cancelled else { return }
            cancelled = true
            if let pause { GatewayLinkClient.retryTimers.value(on: loop).cancel(pause) }
            result.fail(CancellationError())
        }
    }
}
