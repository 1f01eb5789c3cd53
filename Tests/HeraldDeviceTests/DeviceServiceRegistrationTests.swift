import Foundation
import HeraldCore
import HeraldRuntime
import Synchronization
import Testing

@testable import HeraldDevice

/// `registerForRemoteNotifications` while the push service is away: Apple calls neither callback until
/// the device is connected; Herald waits up to its stated bound, on the link's clock, then answers
/// with Cocoa's 3010.
@Suite struct DeviceServiceRegistrationTests {
    @Test func registeringWhileThePushServiceIsAwayWaitsItsBoundThenFailsWith3010() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hd-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = DeviceService.Configuration()
        configuration.stateDirectory = directory.path
        // Nothing listens on port 9 of loopback: every connection attempt is refused at once.
        configuration.gatewayURL = "ws://127.0.0.1:9/device/v1"
        configuration.registrationWait = 300
        let network = ManualClock(now: Date(timeIntervalSince1970: 1_795_000_000))
        let service = try await DeviceService(
            configuration: configuration, clock: ManualClock(now: network.now()), networkClock: network)
        try await service.install(InstalledApp(bundleID: "a", apsEnvironment: .development))
        let finished = Mutex(false)
        let registration = Task {
            defer { finished.withLock { $0 = true } }
            return try await service.call("a", .registerForRemoteNotifications)
        }
        // The wait has begun (its deadline is on the network clock) …
        await network.sleepers(atLeast: 1)
        #expect(network.nextDeadline.map { $0 <= network.now().addingTimeInterval(300) } == true)
        // … and 299 s later the app is still waiting, as on iOS.
        network.advance(by: 299)
        for _ in 0..<50 { await Task.yield() }
        #expect(finished.withLock { $0 } == false)
        network.advance(by: 1)
        do {
            _ = try await registration.value
            Issue.record("registered without a push service")
        } catch let failure as AppLinkFailure {
            #expect(failure.domain == AppLink.cocoaErrorDomain && failure.code == 3010, "\(failure)")
            #expect(failure.message.contains("within 300 s"))
        }
        await service.close()
    }
}
