import Foundation
@testable import HeraldKit
import HeraldTesting
import Synchronization
import Testing

/// Records launches instead of starting processes.
final class RecordingLauncher: AppLauncher {
    let launches = Mutex<[(app: String, mode: LaunchMode, options: DeliveredNotification?)]>([])
    /// Each launch's way to say its process ended, by launch.
    let exits = Mutex<[@Sendable (_ pid: Int32, _ status: Int32) -> Void]>([])
    /// The processes the daemon ended, in order.
    let terminated = Mutex<[Int32]>([])

    func terminate(_ pid: Int32) -> Bool {
        terminated.withLock { $0.append(pid) }
        return true
    }

    func launch(_ app: InstalledApp, mode: LaunchMode, launchOptions: DeliveredNotification?, appLinkPath: String)
        throws -> Int32
    {
        try launch(app, mode: mode, launchOptions: launchOptions, appLinkPath: appLinkPath, exited: { _, _ in })
    }

    func launch(
        _ app: InstalledApp, mode: LaunchMode, launchOptions: DeliveredNotification?, appLinkPath: String,
        exited: @escaping @Sendable (_ pid: Int32, _ status: Int32) -> Void
    ) throws -> Int32 {
        exits.withLock { $0.append(exited) }
        return launches.withLock {
            $0.append((app.bundleID, mode, launchOptions))
            return 4241 + Int32($0.count)
        }
    }
}

/// What an app's delegate was told, in order; `didReceive` can be held to test the time budget.
final class RecordingDelegate: UserNotificationCenterDelegate {
    enum Told: Sendable, Equatable {
        case willPresent(String)
        case didReceive(String, action: String, text: String?)
        case remote(String)
        case expired(String, kind: String)
        case focus(Bool?)
    }

    let told: AsyncStream<Told>
    let sink: AsyncStream<Told>.Continuation
    private let answers: Mutex<PresentationOptions>
    /// What `willPresent` answers (changeable between pushes).
    var answer: PresentationOptions {
        get { answers.withLock { $0 } }
        set { answers.withLock { $0 = newValue } }
    }
    let hold: Bool
    /// Whether `willPresent` waits for ``release`` before it answers.
    let holdPresent: Bool
    let release = Mutex<[CheckedContinuation<Void, Never>]>([])

    init(answer: PresentationOptions = [], hold: Bool = false, holdPresent: Bool = false) {
        (told, sink) = AsyncStream.makeStream(of: Told.self)
        answers = Mutex(answer)
        self.hold = hold
        self.holdPresent = holdPresent
    }

    func willPresent(_ notification: DeliveredNotification, center: UserNotificationCenter) async
        -> PresentationOptions
    {
        sink.yield(.willPresent(notification.identifier))
        if holdPresent { await withCheckedContinuation { c in release.withLock { $0.append(c) } } }
        return answer
    }

    func didReceive(_ response: NotificationResponse, center: UserNotificationCenter) async {
        sink.yield(
            .didReceive(response.notification.identifier, action: response.actionIdentifier, text: response.userText))
        if hold { await withCheckedContinuation { c in release.withLock { $0.append(c) } } }
    }

    func didReceiveRemoteNotification(_ notification: DeliveredNotification, center: UserNotificationCenter) async
        -> BackgroundFetchResult
    {
        sink.yield(.remote(notification.identifier))
        return .newData
    }

    func backgroundTimeExpired(identifier: String, kind: String, center: UserNotificationCenter) async {
        sink.yield(.expired(identifier, kind: kind))
    }

    func focusStatusChanged(_ status: FocusStatus, center: UserNotificationCenter) async {
        sink.yield(.focus(status.isFocused))
    }

    func releaseAll() {
        for c in release.withLock({ list in
            defer { list = [] }; return list
        }) { c.resume() }
    }
}

/// The device these tests run apps against: HeraldTesting's in-process daemon on a manual clock,
/// with no push service and launches recorded instead of started.
struct TestDevice {
    let device: HeraldTesting.TestDevice
    let launcher: RecordingLauncher

    static let start = Date(timeIntervalSince1970: 1_795_000_000)

    init(state: URL? = nil, now: Date = TestDevice.start, userAllows: Bool = true) async throws {
        let launcher = RecordingLauncher()
        self.launcher = launcher
        device = try await HeraldTesting.TestDevice.start(
            gatewayURL: nil, apps: [], stateDirectory: state, start: now, userAllows: userAllows, launcher: launcher)
    }

    var service: DeviceService { device.service }
    var clock: ManualClock { device.clock }
    var state: URL { device.stateDirectory }
    /// What the device did, in order: `log.next(.presented)`.
    var log: HeraldTesting.TestDevice { device }

    func connect(_ app: String, _ state: AppRunState, delegate: (any UserNotificationCenterDelegate)? = nil)
        async throws -> UserNotificationCenter
    {
        try await device.app(app, state: state, delegate: delegate)
    }

    /// Stops the daemon; its state stays for a restart on it.
    func stop() async { await device.stop(keepingState: true) }

    /// Installs `app` with an executable, gives it delivered notifications (each titled by its id),
    /// and leaves it not running: answering one of them launches it.
    func notRunningApp(_ app: String, delivered ids: [String]) async throws {
        try await service.install(InstalledApp(bundleID: app, executable: "/bin/true"))
        let setup = try await connect(app, .background)
        _ = try await setup.requestAuthorization(options: [.alert])
        for id in ids {
            try await setup.add(NotificationRequest(identifier: id, content: NotificationContent(title: id, body: "")))
        }
        await setup.close()
        await service.waitUntilNotRunning(app)
    }

    /// The user opens notification `identifier` of `app` (its default action).
    func open(_ app: String, _ identifier: String) async throws {
        try await service.apply(
            .respond(app: app, identifier: identifier, actionIdentifier: StandardAction.defaultIdentifier, text: nil))
    }

    /// A push as the push service would hand it over.
    func push(_ app: String, _ json: String, id: String) async throws {
        try await service.apply(
            .remoteNotification(app: app, payload: try Payload(json: json), apnsID: id, collapseID: nil))
    }
}

@Suite struct DaemonSoundTests {
    /// A one-second 8 kHz 16-bit mono WAV.
    static let oneSecondWAV: Data = {
        func le(_ value: Int, _ bytes: Int) -> Data {
            Data((0..<bytes).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) })
        }
        var d = Data("RIFF".utf8) + le(36 + 16_000, 4) + Data("WAVEfmt ".utf8) + le(16, 4) + le(1, 2) + le(1, 2)
        d += le(8000, 4) + le(16_000, 4) + le(2, 2) + le(16, 2) + Data("data".utf8) + le(16_000, 4)
        return d + Data(count: 16_000)
    }()

    /// The daemon resolves a push's sound on the device: the line and the log name the file that
    /// plays, or the default sound and why.
    @Test func theDaemonNamesTheSoundThatReallyPlays() async throws {
        let device = try await TestDevice()
        let library = device.state.appendingPathComponent("Library")
        try FileManager.default.createDirectory(
            at: library.appendingPathComponent("Sounds"), withIntermediateDirectories: true)
        try Self.oneSecondWAV.write(to: library.appendingPathComponent("Sounds/chime.wav"))
        try await device.service.install(InstalledApp(bundleID: "s", libraryDirectory: library.path))
        let center = try await device.connect("s", .background)
        #expect(try await center.requestAuthorization(options: [.alert, .sound]))

        try await device.push("s", #"{"aps":{"alert":"one","sound":"chime.wav"}}"#, id: "p1")
        let one = try #require(await device.log.next(.presented)?.presentation)
        #expect(one.sound == "chime.wav" && one.soundFile == library.path + "/Sounds/chime.wav")
        #expect(one.soundFallback == nil && one.line == "one (sound chime.wav)")

        try await device.push("s", #"{"aps":{"alert":"two","sound":"gone.caf"}}"#, id: "p2")
        let two = try #require(await device.log.next(.presented)?.presentation)
        #expect(two.sound == "default" && two.soundFile == nil)
        #expect(two.line == "two (sound default (gone.caf is in neither Library/Sounds nor the app's bundle))")
        await center.close()
        await device.stop()
    }
}

@Suite struct AppLinkTests {
    @Test func aForegroundAppIsAskedAndItsAnswerDecidesThePresentation() async throws {
        let device = try await TestDevice()
        try await device.service.install(InstalledApp(bundleID: "a"))
        let delegate = RecordingDelegate(answer: [.banner, .sound])
        let center = try await device.connect("a", .foreground, delegate: delegate)
        #expect(try await center.requestAuthorization(options: [.alert, .sound, .badge]))
        #expect(await device.service.runState(of: "a") == .foreground)

        try await device.push("a", #"{"aps":{"alert":"hi","sound":"default","badge":4}}"#, id: "p1")
        var told = delegate.told.makeAsyncIterator()
        #expect(await told.next() == .willPresent("p1"))
        let shown = try #require(await device.log.next(.presented)?.presentation)
        #expect(shown.requestedByForegroundApp)
        #expect(shown.sound == "default" && shown.alertStyle == "banner")
        #expect(shown.badge == nil)  // the app did not ask for the badge
        // A banner without `.list` is not in Notification Center (iOS 14's split of `.alert`).
        #expect(!shown.inList)
        let listed = try await center.deliveredNotifications()
        #expect(listed.isEmpty)
        delegate.answer = [.banner, .list]
        try await device.push("a", #"{"aps":{"alert":"again"}}"#, id: "p2")
        #expect(await told.next() == .willPresent("p2"))
        #expect(try #require(await device.log.next(.presented)?.presentation).inList)
        #expect(try await center.deliveredNotifications().map(\.identifier) == ["p2"])

        // Closing the connection: the app is not running any more.
        await center.close()
        await device.service.waitUntilNotRunning("a")
        await device.stop()
    }

    @Test func tappingANotificationOfANotRunningAppLaunchesItAndTheResponseWaitsForTheApp() async throws {
        let device = try await TestDevice()
        try await device.service.install(InstalledApp(bundleID: "b", executable: "/bin/true"))
        let setup = try await device.connect("b", .background)
        _ = try await setup.requestAuthorization(options: [.alert])
        try await setup.add(
            NotificationRequest(identifier: "n1", content: NotificationContent(title: "Lunch", body: "Pizza")))
        #expect(try await setup.deliveredNotifications().map(\.identifier) == ["n1"])
        await setup.close()
        await device.service.waitUntilNotRunning("b")

        try await device.open("b", "n1")
        let launch = try #require(device.launcher.launches.withLock { $0.first })
        #expect(launch.app == "b" && launch.mode == .foreground && launch.options?.identifier == "n1")

        // The launched app connects and gets the response that was held for it.
        let delegate = RecordingDelegate()
        let app = try await device.connect("b", .foreground, delegate: delegate)
        var told = delegate.told.makeAsyncIterator()
        #expect(await told.next() == .didReceive("n1", action: StandardAction.defaultIdentifier, text: nil))
        let finished = try #require(await device.log.next(.finished))
        #expect(finished.identifier == "n1" && finished.text.hasPrefix("response finished"))
        #expect(try await app.deliveredNotifications().isEmpty)
        await app.close()
        await device.stop()
    }

    /// An app launched for an event that ends before it connects (it crashed, say) is not waited
    /// for any more: what waited for it is dropped, logged, and the next event launches it again.
    @Test func anAppThatEndsBeforeItConnectsIsLaunchedAgainForTheNextEvent() async throws {
        let device = try await TestDevice()
        try await device.notRunningApp("b", delivered: ["n1", "n2"])

        try await device.open("b", "n1")
        #expect(device.launcher.launches.withLock { $0.count } == 1)
        // An earlier process of the app ending changes nothing; the launched one ending does.
        let exited = try #require(device.launcher.exits.withLock { $0.first })
        exited(4000, 0)
        exited(4242, 1)
        let failed = try #require(await device.log.next(.launchFailed))
        #expect(failed.text == "exited (status 1) before it connected; 1 event for it dropped", "\(failed.text)")

        try await device.open("b", "n2")
        #expect(device.launcher.launches.withLock { $0.map(\.options?.identifier) } == ["n1", "n2"])
        await device.stop()
    }

    /// An app launched for an event that has not connected 20 s later is ended, as iOS's watchdog
    /// ends an app that does not finish launching: what waited for it is dropped, logged, and the next
    /// event launches it again. A launch that connects in time keeps its process and gets its event.
    @Test func anAppThatDoesNotConnectWithinTheLaunchWaitIsEndedAndLaunchedAgain() async throws {
        let device = try await TestDevice()
        try await device.notRunningApp("b", delivered: ["n1", "n2"])

        let sleeping = device.clock.sleeperCount
        try await device.open("b", "n1")
        #expect(device.launcher.launches.withLock { $0.count } == 1)
        await device.clock.sleepers(atLeast: sleeping + 1)
        device.clock.advance(by: 20)
        let failed = try #require(await device.log.next(.launchFailed))
        #expect(
            failed.text == "did not connect within 20 s of its launch; ended (pid 4242); 1 event for it dropped",
            "\(failed.text)")
        #expect(device.launcher.terminated.withLock { $0 } == [4242])
        // The budget the dropped response started is gone with it: it would run out 10 s later and
        // tell the app's next process that its time for n1 had expired.
        #expect(device.clock.sleeperCount == sleeping)

        // The next event launches it again; this time it connects after 19 s and gets the event.
        try await device.open("b", "n2")
        #expect(device.launcher.launches.withLock { $0.map(\.options?.identifier) } == ["n1", "n2"])
        await device.clock.sleepers(atLeast: sleeping + 1)
        device.clock.advance(by: 19)
        let delegate = RecordingDelegate()
        let app = try await device.connect("b", .foreground, delegate: delegate)
        var told = delegate.told.makeAsyncIterator()
        #expect(await told.next() == .didReceive("n2", action: StandardAction.defaultIdentifier, text: nil))
        #expect(device.launcher.terminated.withLock { $0 } == [4242])
        await app.close()
        await device.stop()
    }

    /// A daemon that stops leaves no deadline behind: no launch is ended and no budget runs out
    /// after it.
    @Test func aStoppedDaemonLeavesNoLaunchDeadlineOrBudget() async throws {
        let device = try await TestDevice()
        try await device.notRunningApp("b", delivered: ["n1"])

        let sleeping = device.clock.sleeperCount
        try await device.open("b", "n1")
        // The response's budget and the launch's deadline.
        await device.clock.sleepers(atLeast: sleeping + 2)
        await device.stop()
        #expect(device.clock.sleeperCount == sleeping)
    }

    /// A second process of an app that connects replaces the first: what the first was asked in
    /// `willPresent` and never answered is presented by the system, as for an app in the background.
    @Test func aProcessReplacedBeforeItAnswersWillPresentLeavesItToTheSystem() async throws {
        let device = try await TestDevice()
        try await device.service.install(InstalledApp(bundleID: "a"))
        let first = RecordingDelegate(answer: [.banner], holdPresent: true)
        let center = try await device.connect("a", .foreground, delegate: first)
        #expect(try await center.requestAuthorization(options: [.alert]))
        try await device.push("a", #"{"aps":{"alert":"hi"}}"#, id: "p1")
        var told = first.told.makeAsyncIterator()
        #expect(await told.next() == .willPresent("p1"))

        let second = try await device.connect("a", .foreground)
        let shown = try #require(await device.log.next(.presented))
        #expect(shown.identifier == "p1")
        #expect(shown.presentation?.requestedByForegroundApp == false)
        first.releaseAll()
        await second.close()
        await center.close()
        await device.stop()
    }

    @Test func aBackgroundActionThatDoesNotFinishIsLoggedWhenItsBudgetRunsOut() async throws {
        let device = try await TestDevice()
        try await device.service.install(InstalledApp(bundleID: "c", executable: "/bin/true"))
        let setup = try await device.connect("c", .background)
        _ = try await setup.requestAuthorization(options: [.alert])
        let reply = try NotificationAction(
            identifier: "reply", title: "Reply", textInput: TextInput(buttonTitle: "Send"))
        try await setup.setNotificationCategories([try NotificationCategory(identifier: "MSG", actions: [reply])])
        var content = NotificationContent(title: "Ann", body: "Lunch?")
        content.categoryIdentifier = "MSG"
        try await setup.add(NotificationRequest(identifier: "m1", content: content))
        await setup.close()
        await device.service.waitUntilNotRunning("c")

        try await device.service.apply(
            .respond(app: "c", identifier: "m1", actionIdentifier: "reply", text: "yes"))
        #expect(device.launcher.launches.withLock { $0.map(\.mode) } == [.background])
        let delegate = RecordingDelegate(hold: true)
        let app = try await device.connect("c", .background, delegate: delegate)
        var told = delegate.told.makeAsyncIterator()
        #expect(await told.next() == .didReceive("m1", action: "reply", text: "yes"))
        // The budget (30 s) runs out in virtual time while the app is still at work.
        await device.clock.sleepers(atLeast: 1)
        device.clock.advance(by: 30)
        let exceeded = try #require(await device.log.next(.budgetExceeded))
        #expect(exceeded.identifier == "m1" && exceeded.text == "response did not finish within 30 s")
        // As iOS suspends such an app: it is told, and the daemon counts it as not running any more.
        #expect(await told.next() == .expired("m1", kind: "response"))
        let suspended = try #require(await device.log.next(.suspended))
        #expect(suspended.text == "suspended: its response ran past 30 s")
        #expect(await device.service.runState(of: "c") == .notRunning)
        // Its link is closed by the device: a call fails rather than being answered.
        await #expect(throws: (any Error).self) { _ = try await app.badgeCount() }
        delegate.releaseAll()
        await app.close()
        await device.stop()
    }

    @Test func theAppReadsItsBadgeToCountUp() async throws {
        let device = try await TestDevice()
        try await device.service.install(InstalledApp(bundleID: "k"))
        let app = try await device.connect("k", .background)
        _ = try await app.requestAuthorization(options: [.alert, .badge])
        #expect(try await app.badgeCount() == 0)
        try await device.push("k", #"{"aps":{"badge":4}}"#, id: "p1")
        #expect(try await app.badgeCount() == 4)
        try await app.setBadgeCount(try await app.badgeCount() + 1)
        #expect(try await app.badgeCount() == 5)
        await app.close()
        await device.stop()
    }

    /// Seed 003: `UILocalNotification` through HeraldKit, its dates computed on the device's clock.
    @Test func legacyLocalNotificationsAreScheduledOnTheDevicesClockAndCancelledOffTheScreen() async throws {
        let device = try await TestDevice()
        try await device.service.install(InstalledApp(bundleID: "l"))
        let app = try await device.connect("l", .background)
        _ = try await app.requestAuthorization(options: [.alert, .sound, .badge])
        let now = device.clock.now()
        // A fire date in the past (by the device's clock, whatever the app's): delivered at once.
        try await app.scheduleLocalNotification(
            LegacyNotification(
                identifier: "late", schedule: LegacySchedule(fireDate: now.addingTimeInterval(-5)),
                alertBody: "Pick up milk", alertAction: "Show me"))
        let shown = try #require(await device.log.next(.presented)?.presentation)
        #expect(shown.body == "Pick up milk" && shown.alertAction == "Show me")
        // Later: pending at the device's time, fired when the device's clock gets there.
        try await app.scheduleLocalNotification(
            LegacyNotification(
                identifier: "soon", schedule: LegacySchedule(fireDate: now.addingTimeInterval(600)),
                alertBody: "Ten minutes", applicationIconBadgeNumber: 2))
        #expect(try await app.scheduledLocalNotifications().map(\.nextFireDate) == [now.addingTimeInterval(600)])
        try await device.device.advanceClock(by: 600)
        #expect(try #require(await device.log.next(.presented)?.presentation).badge == 2)
        #expect(try await app.deliveredNotifications().map(\.identifier) == ["soon", "late"])
        // Cancelling takes them off the screen as well.
        try await app.cancelAllLocalNotifications()
        let removed = try #require(await device.log.next(.removed))
        #expect(Set(removed.identifiers ?? []) == ["soon", "late"])
        #expect(try await app.deliveredNotifications().isEmpty)
        await app.close()
        await device.stop()
    }

    /// `INFocusStatusCenter`: the app learns whether the user is focused once the user lets it.
    @Test func theFocusStatusOnceAuthorized() async throws {
        let device = try await TestDevice()
        try await device.service.install(InstalledApp(bundleID: "f"))
        let delegate = RecordingDelegate()
        let app = try await device.connect("f", .background, delegate: delegate)
        #expect(try await app.focusStatus().isFocused == nil, "not shared before the user says so")
        #expect(try await app.requestFocusStatusAuthorization())
        #expect(try await app.focusStatus().isFocused == false)
        var told = delegate.told.makeAsyncIterator()
        try await device.service.apply(.focus(.turnOn("sleep", until: nil)))
        #expect(await told.next() == .focus(true))
        #expect(try await app.focusStatus().isFocused == true)
        try await device.service.apply(.focus(.turnOff))
        #expect(await told.next() == .focus(false))
        await app.close()
        await device.stop()
    }

    @Test func badgeAndSoundFollowTheUsersSettings() async throws {
        let device = try await TestDevice()
        try await device.service.install(InstalledApp(bundleID: "d"))
        let app = try await device.connect("d", .background)
        _ = try await app.requestAuthorization(options: [.alert, .sound, .badge])
        await app.close()
        await device.service.waitUntilNotRunning("d")

        try await device.push("d", #"{"aps":{"alert":"one","sound":"default","badge":3}}"#, id: "p1")
        var shown = try #require(await device.log.next(.presented)?.presentation)
        #expect(shown.sound == "default" && shown.badge == 3)

        // The user turns sounds and badges off in Settings.
        var settings = try #require(await device.service.record("d")).settings
        settings.soundSetting = .disabled
        settings.badgeSetting = .disabled
        try await device.service.apply(.updateSettings(app: "d", settings: settings))
        try await device.push("d", #"{"aps":{"alert":"two","sound":"default","badge":7}}"#, id: "p2")
        shown = try #require(await device.log.next(.presented)?.presentation)
        #expect(shown.sound == nil && shown.badge == nil && shown.body == "two")
        #expect(await device.service.record("d")?.badge == 3)
        await device.stop()
    }

    @Test func aRestartKeepsPendingRequestsAndFiresTheMissedOneOnceMarkedLate() async throws {
        let first = try await TestDevice()
        try await first.service.install(InstalledApp(bundleID: "e"))
        let app = try await first.connect("e", .background)
        _ = try await app.requestAuthorization(options: [.alert])
        let trigger = NotificationTrigger.timeInterval(try TimeIntervalTrigger(interval: 60))
        try await app.add(
            NotificationRequest(identifier: "soon", content: NotificationContent(body: "1"), trigger: trigger))
        let later = NotificationTrigger.timeInterval(try TimeIntervalTrigger(interval: 7200))
        try await app.add(
            NotificationRequest(identifier: "later", content: NotificationContent(body: "2"), trigger: later))
        #expect(try await app.pendingNotificationRequests().map(\.identifier) == ["soon", "later"])
        await app.close()
        await first.stop()

        // The daemon was down while "soon" fell due; it starts again ten minutes later.
        let second = try await TestDevice(state: first.state, now: TestDevice.start.addingTimeInterval(600))
        let fired = try #require(await second.log.next(.presented)?.presentation)
        #expect(fired.body == "1" && fired.late)
        let reopened = try await second.connect("e", .background)
        #expect(try await reopened.pendingNotificationRequests().map(\.identifier) == ["later"])
        #expect(try await reopened.deliveredNotifications().map(\.identifier) == ["soon"])
        // Later ticks do not fire it again; "later" fires at its time.
        await second.service.tick()
        second.clock.advance(to: TestDevice.start.addingTimeInterval(7200))
        let next = try #require(await second.log.next(.presented)?.presentation)
        #expect(next.body == "2" && !next.late)
        #expect(try await reopened.deliveredNotifications().map(\.identifier) == ["later", "soon"])
        await reopened.close()
        await second.stop()
    }

    @Test func errorsCarryApplesDomainsAndCodes() async throws {
        let device = try await TestDevice(userAllows: false)
        try await device.service.install(InstalledApp(bundleID: "f"))
        let app = try await device.connect("f", .foreground)
        #expect(try await app.requestAuthorization(options: [.alert]) == false)
        await #expect(throws: NotificationError.self) {
            try await app.add(NotificationRequest(identifier: "x", content: NotificationContent(body: "no")))
        }
        do {
            try await app.setBadgeCount(-1)
            Issue.record("a negative badge was accepted")
        } catch let error as NotificationError {
            #expect(error.code == .badgeInputInvalid)
        }
        do {
            _ = try await app.registerForRemoteNotifications()
            Issue.record("registered without an aps-environment")
        } catch let error as AppLinkFailure {
            #expect(error.domain == AppLink.cocoaErrorDomain && error.code == 3000)
            #expect(error.kind == .noAPSEnvironment)
        }
        await #expect(throws: (any Error).self) { _ = try await device.connect("not.installed", .foreground) }
        await app.close()
        await device.stop()
    }

    @Test func reconnectDelaysDoubleUpToTheirCapWithJitter() {
        #expect(ReconnectBackoff.delay(failures: 1, base: 0.5, maximum: 30, jitter: 1) == 0.5)
        #expect(ReconnectBackoff.delay(failures: 3, base: 0.5, maximum: 30, jitter: 1) == 2)
        #expect(ReconnectBackoff.delay(failures: 3, base: 0.5, maximum: 30, jitter: 0) == 1)
        #expect(ReconnectBackoff.delay(failures: 20, base: 0.5, maximum: 30, jitter: 1) == 30)
        #expect(ReconnectBackoff.delay(failures: 1000, base: 0.5, maximum: 30, jitter: 0.5) == 22.5)
    }

    @Test func preferredLanguagesComeFromTheLocaleEnvironment() {
        #expect(UserNotificationCenter.preferredLanguages(environment: [:]) == ["en"])
        #expect(UserNotificationCenter.preferredLanguages(environment: ["LANG": "fr_CA.UTF-8"]) == ["fr-CA"])
        #expect(
            UserNotificationCenter.preferredLanguages(environment: ["LANGUAGE": "pt_BR:pt", "LANG": "en_US.UTF-8"])
                == ["pt-BR", "pt", "en-US"])
        #expect(UserNotificationCenter.preferredLanguages(environment: ["LC_ALL": "C", "LANG": "de_DE"]) == ["en"])
    }

    @Test func appLinkFramesRoundTripAndBadLinesNameTheField() throws {
        let frame = AppLinkFrame.call(id: 7, call: .setBadge(badge: 2))
        let line = try frame.encodedLine()
        #expect(line.last == UInt8(ascii: "\n"))
        #expect(!line.dropLast().contains(UInt8(ascii: "\n")))
        #expect(try AppLinkFrame(line: line) == frame)
        #expect(throws: AppLinkFailure.self) { try AppLinkFrame(line: Array(#"{"call":{"id":1}}"#.utf8)) }
        do {
            _ = try AppLinkFrame(line: Array(#"{"call":{"id":1,"call":{"setBadge":{"badge":"two"}}}}"#.utf8))
        } catch let failure as AppLinkFailure {
            #expect(failure.message.contains("call.setBadge.badge"), "\(failure.message)")
        }
        #expect(AppLinkFrame.answerID(line: Array(#"{"result":{"id":9,"result":{"bogus":{}}}}"#.utf8)) == 9)
    }
}

extension DeviceService {
    /// Waits until the daemon has seen an app's connection close (it happens on the daemon's side
    /// of the socket, after the client closed).
    func waitUntilNotRunning(_ app: String) async {
        while runState(of: app) != .notRunning { await Task.yield() }
    }
}

/// HeraldKit's `Activity` against the in-process daemon (docs/live-activities.md).
@Suite struct ActivityKitShapeTests {
    struct Brew: ActivityAttributes {
        struct ContentState: Codable, Hashable, Sendable { var left: Int }
        var pot: String
    }

    @Test func anActivitysStreamsFollowItsChangesAndLeaveNoObserverBehind() async throws {
        let device = try await TestDevice()
        try await device.service.install(InstalledApp(bundleID: "k"))
        let center = try await device.connect("k", .foreground)
        let activity = try await Activity.request(
            attributes: Brew(pot: "green"), content: ActivityContent(state: .init(left: 3), staleDate: nil),
            center: center)
        #expect(activity.attributes.pot == "green" && activity.activityState == .active)
        #expect(try activity.content.state.left == 3)
        let states = activity.activityStateUpdates
        let seen = Task {
            var lefts: [Int] = []
            // The stream is the task's alone: it goes (and its observation) when the task stops reading.
            for await content in activity.contentUpdates {
                lefts.append(content.state.left)
                if lefts.count == 2 { break }
            }
            return lefts
        }
        let ended = Task {
            for await state in states where state == .dismissed { return true }
            return false
        }
        try await activity.update(ActivityContent(state: .init(left: 2), staleDate: nil))
        try await activity.update(ActivityContent(state: .init(left: 1), staleDate: nil))
        #expect(await seen.value == [2, 1])
        // The content reader stopped: its observation went with it; the state reader's stays.
        // (Its end reaches the center a few task hops later: yield until then, a bounded number of times.)
        for _ in 0..<100_000 where center.activityObserverCount > 1 { await Task.yield() }
        #expect(center.activityObserverCount == 1)
        try await activity.end(nil, dismissalPolicy: .immediate)
        #expect(await ended.value)
        #expect(activity.activityState == .dismissed)
        // Dismissed: no observation is left.
        for _ in 0..<100_000 where center.activityObserverCount > 0 { await Task.yield() }
        #expect(center.activityObserverCount == 0)
        #expect(try await Activity<Brew>.activities(center: center).isEmpty)
        await center.close()
        await device.stop()
    }
}
