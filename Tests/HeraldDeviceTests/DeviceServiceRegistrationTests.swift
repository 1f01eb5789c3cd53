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
        configuration.registrationWait = .seconds(300)
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

/// A store whose writes fail while told to.
final class FlakyStore: DeviceStore {
    let inner: SQLiteDeviceStore
    let failing = Mutex(false)
    init(path: String) throws { inner = try SQLiteDeviceStore(path: path) }
    func load() async throws -> DeviceSnapshot { try await inner.load() }
    func save(_ changes: DeviceChanges) async throws {
        if failing.withLock({ $0 }) { throw CocoaError(.fileWriteOutOfSpace) }
        try await inner.save(changes)
    }
}

/// Pushes whose write failed: the device shows them (the engine has them), does not acknowledge them,
/// and writes them with the next write that succeeds.
@Suite struct DeviceServiceTakeTests {
    @Test func pushesWhoseWriteFailedAreShownAndSavedLaterNotLost() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hd-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = DeviceService.Configuration()
        configuration.stateDirectory = directory.path
        let store = try FlakyStore(path: directory.appendingPathComponent("store.sqlite").path)
        let service = try await DeviceService(
            configuration: configuration, clock: ManualClock(now: Date(timeIntervalSince1970: 1_795_000_000)),
            store: store)
        try await service.install(InstalledApp(bundleID: "a"))
        try await service.apply(.authorizationAnswered(app: "a", options: [.alert], granted: true))
        let push = LinkPush(
            apnsID: "p1", topic: "a", token: DeviceToken(bytes: Array(repeating: 1, count: 32)),
            environment: .development, pushType: .alert, priority: .immediate, expiration: nil, collapseID: nil,
            payload: Data(#"{"aps":{"alert":"hi"}}"#.utf8))
        store.failing.withLock { $0 = true }
        let outcomes = await service.take([push])
        guard case .notSaved = outcomes.first else { Issue.record("\(outcomes)"); return }
        #expect(await service.log(limit: 10).contains { $0.kind == .presented && $0.identifier == "p1" })
        #expect(await service.saveNow() == false)
        store.failing.withLock { $0 = false }
        #expect(await service.saveNow())
        let kept = try await store.load()
        #expect(kept.taken == ["p1"] && kept.records.first?.delivered.map(\.identifier) == ["p1"])
        await service.close()
    }
}
