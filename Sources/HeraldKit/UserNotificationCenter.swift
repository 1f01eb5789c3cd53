@_exported import HeraldCore
import Foundation
import NIOCore
import NIOExtras
import NIOPosix
import Synchronization

/// Lets the connection's reader find its center once it exists.
final class CenterReference: Sendable {
    let center = Mutex<UserNotificationCenter?>(nil)
}

/// The app's notification center, shaped like `UNUserNotificationCenter`, talking to the device
/// daemon over the app link. While it is connected the app counts as running.
public final class UserNotificationCenter: Sendable {
    /// The app's bundle id.
    public let bundleID: String
    /// The notification that launched the app, when the daemon launched it for one (launch options).
    public let launchOptions: DeliveredNotification?
    /// How the daemon launched this process (foreground for a tap, background for a background action or
    /// a `content-available` push); `nil` when the user started it.
    public let launchMode: LaunchMode?
    /// How the app runs now.
    public var state: AppRunState { shared.withLock { $0.state } }
    /// The app's device token whenever it changes (after `registerForRemoteNotifications`, a device reset, …).
    public let tokenChanges: AsyncStream<String>

    struct Shared {
        var nextID = 0
        var waiting: [Int: CheckedContinuation<AppLinkResult, any Error>] = [:]
        var closed: (any Error)?
        var state: AppRunState
        var delegate: (any UserNotificationCenterDelegate)?
        /// Hands events to the delegate, one after another.
        var eventTask: Task<Void, Never>?
        /// A response or background wake has been handled and answered (or the link closed).
        var launchWorkDone = false
        var launchWorkWaiters: [CheckedContinuation<Void, Never>] = []
        /// Live Activities: who watches one activity, who watches for new ones of a type, and the
        /// ids already seen (a change of an unseen one is a new activity).
        var activityObservers: [String: [Int: @Sendable (LiveActivity) -> Void]] = [:]
        var newActivityObservers: [String: [Int: @Sendable (LiveActivity) -> Void]] = [:]
        var nextObserver = 0
        var knownActivities: Set<String> = []
        /// Each activity as the daemon last told of it.
        var latestActivities: [String: LiveActivity] = [:]
    }

    let shared: Mutex<Shared>
    let outbox: AsyncStream<AppLinkFrame>.Continuation
    let eventSink: AsyncStream<AppLinkEvent>.Continuation
    let tokenContinuation: AsyncStream<String>.Continuation
    let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
    let done: Task<Void, Never>

    /// A failure without an answer: the link closed or could not open.
    public struct LinkError: Error, CustomStringConvertible, Sendable {
        /// What happened.
        public var description: String
    }

    private init(
        bundleID: String, state: AppRunState, launchMode: LaunchMode?, launchOptions: DeliveredNotification?,
        delegate: (any UserNotificationCenterDelegate)?, channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>,
        outbox: AsyncStream<AppLinkFrame>.Continuation, eventSink: AsyncStream<AppLinkEvent>.Continuation,
        done: Task<Void, Never>
    ) {
        self.bundleID = bundleID
        self.launchMode = launchMode
        self.launchOptions = launchOptions
        self.channel = channel
        self.outbox = outbox
        self.eventSink = eventSink
        self.done = done
        shared = Mutex(Shared(state: state, delegate: delegate))
        (tokenChanges, tokenContinuation) = AsyncStream.makeStream(of: String.self)
    }

    /// Connects to the device daemon as `bundleID` in `state`. Without arguments it uses what the
    /// daemon put in the environment when it launched the app (`AppLink.Environment`): the socket,
    /// the bundle id, the launch mode and the launch options. Events go to `delegate`.
    public static func connect(
        bundleID: String? = nil, state: AppRunState? = nil, socketPath: String? = nil,
        delegate: (any UserNotificationCenterDelegate)? = nil,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> UserNotificationCenter {
        let environment = ProcessInfo.processInfo.environment
        guard let bundleID = bundleID ?? environment[AppLink.Environment.bundleID] else {
            throw LinkError(description: "no bundle id: pass bundleID or set \(AppLink.Environment.bundleID)")
        }
        let path = socketPath ?? environment[AppLink.Environment.socket] ?? ".herald/device/\(AppLink.socketName)"
        let launched = environment[AppLink.Environment.launchMode].flatMap(LaunchMode.init(rawValue:))
        let state = state ?? (launched == .background ? .background : .foreground)
        let launchOptions = environment[AppLink.Environment.launchOptions].flatMap {
            try? JSONDecoder.appLink.decode(DeliveredNotification.self, from: Data($0.utf8))
        }
        let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            channel = try await ClientBootstrap(group: group).connect(unixDomainSocketPath: path) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(LineBasedFrameDecoder(), maximumBufferSize: AppLink.maximumMessageSize))
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        } catch {
            throw LinkError(description: "cannot reach the device daemon at \(path): \(error)")
        }
        let (frames, outbox) = AsyncStream.makeStream(of: AppLinkFrame.self)
        let (events, eventSink) = AsyncStream.makeStream(of: AppLinkEvent.self)
        let box = CenterReference()
        let task = Task {
            await Self.pump(channel: channel, frames: frames, events: eventSink, center: box)
        }
        let center = UserNotificationCenter(
            bundleID: bundleID, state: state, launchMode: launched, launchOptions: launchOptions, delegate: delegate,
            channel: channel,
            outbox: outbox, eventSink: eventSink, done: task)
        box.center.withLock { $0 = center }
        let eventTask = Task { [weak center] in
            for await event in events {
                guard let center else { return }
                await center.handle(event)
            }
        }
        center.shared.withLock { $0.eventTask = eventTask }
        do {
            _ = try await center.call(.hello(bundleID: bundleID, state: state))
        } catch {
            await center.close()
            throw error
        }
        return center
    }

    /// Reads and writes the connection until it closes.
    static func pump(
        channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>, frames: AsyncStream<AppLinkFrame>,
        events: AsyncStream<AppLinkEvent>.Continuation, center: CenterReference
    ) async {
        var ending: any Error = LinkError(description: "the device daemon closed the app link")
        do {
            try await channel.executeThenClose { inbound, outbound in
                try await withThrowingTaskGroup(of: Void.self) { tasks in
                    tasks.addTask {
                        for await frame in frames {
                            try await outbound.write(ByteBuffer(bytes: try frame.encodedLine()))
                        }
                    }
                    for try await line in inbound {
                        let frame: AppLinkFrame
                        do {
                            frame = try AppLinkFrame(line: line.readableBytesView)
                        } catch {
                            // An answer this library cannot read fails its call rather than leaving it waiting.
                            if let id = AppLinkFrame.answerID(line: line.readableBytesView) {
                                center.center.withLock { $0 }?.resume(id, with: .failure(error))
                            }
                            continue
                        }
                        switch frame {
                        case .result(let id, let result):
                            center.center.withLock { $0 }?.resume(id, with: .success(result))
                        case .failure(let id, let failure):
                            center.center.withLock { $0 }?.resume(
                                id, with: .failure(failure.notificationError ?? failure))
                        case .event(.backgroundTimeExpired(let identifier, let kind)):
                            // The expiration handler runs at once, even while the delegate is still
                            // at the work whose time ran out (the other events wait their turn).
                            if let center = center.center.withLock({ $0 }) {
                                Task { await center.handle(.backgroundTimeExpired(identifier: identifier, kind: kind)) }
                            }
                        case .event(let event):
                            events.yield(event)
                        case .call:
                            break
                        }
                    }
                    tasks.cancelAll()
                }
            }
        } catch {
            ending = LinkError(description: "the app link failed: \(error)")
        }
        events.finish()
        let closing = center.center.withLock { reference -> UserNotificationCenter? in
            defer { reference = nil }
            return reference
        }
        closing?.closed(ending)
    }

    func resume(_ id: Int, with result: Result<AppLinkResult, any Error>) {
        let continuation = shared.withLock { $0.waiting.removeValue(forKey: id) }
        continuation?.resume(with: result)
    }

    func closed(_ error: any Error) {
        let waiting = shared.withLock { shared -> [CheckedContinuation<AppLinkResult, any Error>] in
            shared.closed = error
            shared.state = .notRunning
            defer { shared.waiting = [:] }
            return Array(shared.waiting.values)
        }
        for continuation in waiting { continuation.resume(throwing: error) }
        launchWorkFinished()
        outbox.finish()
        tokenContinuation.finish()
    }

    /// Sends a call and waits for its answer; throws `NotificationError` for Apple's codes and
    /// `AppLinkFailure` for the others.
    func call(_ call: AppLinkCall) async throws -> AppLinkResult {
        try await withCheckedThrowingContinuation { continuation in
            let id: Int? = shared.withLock { shared in
                if shared.closed != nil { return nil }
                shared.nextID += 1
                shared.waiting[shared.nextID] = continuation
                return shared.nextID
            }
            guard let id else {
                continuation.resume(throwing: shared.withLock { $0.closed } ?? LinkError(description: "closed"))
                return
            }
            outbox.yield(.call(id: id, call: call))
        }
    }

    func handle(_ event: AppLinkEvent) async {
        let delegate = shared.withLock { $0.delegate }
        switch event {
        case .willPresent(let notification):
            let options = await delegate?.willPresent(notification, center: self) ?? []
            _ = try? await call(.willPresentAnswer(identifier: notification.identifier, options: options))
        case .didReceive(let response):
            await delegate?.didReceive(response, center: self)
            _ = try? await call(.responseHandled(identifier: response.notification.identifier))
            launchWorkFinished()
        case .remoteNotification(let notification):
            _ = await delegate?.didReceiveRemoteNotification(notification, center: self)
        case .backgroundWake(let notification, _):
            let result = await delegate?.didReceiveRemoteNotification(notification, center: self) ?? .noData
            _ = try? await call(.backgroundFinished(identifier: notification.identifier, result: result))
            launchWorkFinished()
        case .serviceExtension(let notification, _):
            let content = await delegate?.serviceExtension(notification, center: self)
            _ = try? await call(.serviceExtensionFinished(identifier: notification.identifier, content: content))
        case .contentChanged(let kind):
            await delegate?.contentChanged(kind, center: self)
        case .locationPush(let notification):
            await delegate?.didReceiveLocationPush(notification, center: self)
            _ = try? await call(.backgroundFinished(identifier: notification.identifier, result: .newData))
            launchWorkFinished()
        case .activityChanged(let activity):
            let watchers = shared.withLock { shared in
                let fresh = shared.knownActivities.insert(activity.id).inserted
                shared.latestActivities[activity.id] = activity
                let watchers =
                    Array((shared.activityObservers[activity.id] ?? [:]).values)
                    + (fresh ? Array((shared.newActivityObservers[activity.attributesType] ?? [:]).values) : [])
                if activity.state == .dismissed { shared.activityObservers[activity.id] = nil }
                return watchers
            }
            for watcher in watchers { watcher(activity) }
            await delegate?.activityChanged(activity, center: self)
        case .backgroundTimeExpired(let identifier, let kind):
            await delegate?.backgroundTimeExpired(identifier: identifier, kind: kind, center: self)
        case .focusStatusChanged(let status):
            await delegate?.focusStatusChanged(status, center: self)
        case .tokenChanged(let token):
            tokenContinuation.yield(token)
        case .stateChanged(let state):
            shared.withLock { $0.state = state }
            if state == .notRunning { await closeLink() }
        }
    }

    func launchWorkFinished() {
        let waiters = shared.withLock { shared in
            shared.launchWorkDone = true
            defer { shared.launchWorkWaiters = [] }
            return shared.launchWorkWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// For a process the daemon launched (``launchMode`` is set): returns once the delegate has handled
    /// the response or background wake it was launched for and the answer has gone to the daemon, or
    /// the link has closed. Returns at once for a process the user started. An app that has nothing
    /// else to do then calls ``close()`` and exits, as a backgrounded app is suspended.
    public func waitForLaunchWork() async {
        guard launchMode != nil else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = shared.withLock { shared in
                if !shared.launchWorkDone { shared.launchWorkWaiters.append(continuation) }
                return shared.launchWorkDone
            }
            if done { continuation.resume() }
        }
    }

    /// Replaces the delegate.
    public func setDelegate(_ delegate: (any UserNotificationCenterDelegate)?) {
        shared.withLock { $0.delegate = delegate }
    }

    /// Disconnects: the app is not running any more. Events already received are handed to the
    /// delegate first, and their answers (such as the end of a `didReceive`) sent.
    public func close() async {
        eventSink.finish()
        await shared.withLock { $0.eventTask }?.value
        await closeLink()
    }

    func closeLink() async {
        outbox.finish()
        try? await channel.channel.close()
        await done.value
    }
    static func unexpected(_ call: String) -> AppLinkFailure {
        .protocolError("\(call): the daemon's answer has the wrong shape")
    }

    /// The user's preferred languages, most preferred first, as BCP 47 tags (`fr-CA`): what an app
    /// sends its provider so that alerts can be localized. Read from `LANGUAGE`, then `LC_ALL`,
    /// `LC_MESSAGES` and `LANG`; `["en"]` when none is set.
    public static func preferredLanguages(environment: [String: String] = ProcessInfo.processInfo.environment)
        -> [String]
    {
        var languages: [String] = []
        func add(_ raw: Substring) {
            let base = raw.split(separator: ".").first.map(String.init) ?? ""
            let tag = (base.split(separator: "@").first.map(String.init) ?? "").replacingOccurrences(
                of: "_", with: "-")
            guard !tag.isEmpty, tag != "C", tag != "POSIX", !languages.contains(tag) else { return }
            languages.append(tag)
        }
        if let list = environment["LANGUAGE"], !list.isEmpty { list.split(separator: ":").forEach(add) }
        for key in ["LC_ALL", "LC_MESSAGES", "LANG"] {
            if let value = environment[key], !value.isEmpty {
                add(Substring(value))
                break
            }
        }
        return languages.isEmpty ? ["en"] : languages
    }
}

/// What an app implements to take part in presentation and responses (`UNUserNotificationCenterDelegate`).
/// Every method has a default: nothing is shown for a foreground notification, responses and pushes
/// are accepted without doing anything.
public protocol UserNotificationCenterDelegate: Sendable {
    /// A notification arrived while the app is in the foreground: return how to show it (empty: not at all).
    func willPresent(_ notification: DeliveredNotification, center: UserNotificationCenter) async
        -> PresentationOptions
    /// The user acted on a notification (default, dismiss, or one of its category's actions). The daemon
    /// waits for this to return, as Apple's completion handler.
    func didReceive(_ response: NotificationResponse, center: UserNotificationCenter) async
    /// A remote notification for the app itself: `content-available` (background time to fetch) or a push
    /// for an app without notification types. Return what the fetch found.
    func didReceiveRemoteNotification(_ notification: DeliveredNotification, center: UserNotificationCenter) async
        -> BackgroundFetchResult
    /// A `mutable-content` push before it is shown (the service extension): return new content, or `nil`
    /// to show it unchanged.
    func serviceExtension(_ notification: DeliveredNotification, center: UserNotificationCenter) async
        -> NotificationContent?
    /// A `widgets` or `controls` push (`content-changed: true`) asked the app's widgets or controls to
    /// reload (what WidgetKit does on such a push): reload them. Only while the app runs.
    func contentChanged(_ kind: ReloadKind, center: UserNotificationCenter) async
    /// A `location` push (Apple's location push service extension): answer the query, for example by
    /// reporting where the device is. The app is launched in the background for it when it is not
    /// running; the daemon waits for this to return, within the background budget.
    func didReceiveLocationPush(_ notification: DeliveredNotification, center: UserNotificationCenter) async
    /// One of the app's Live Activities changed: started (by the app or a push-to-start), updated,
    /// got its push token, went stale, ended or was dismissed (docs/live-activities.md).
    func activityChanged(_ activity: LiveActivity, center: UserNotificationCenter) async
    /// The time the system gave the app for background work ran out before the app said it had
    /// finished (`kind`: background fetch, response, location query): the app is suspended right
    /// after this (its link closes), as iOS calls a background task's expiration handler.
    func backgroundTimeExpired(identifier: String, kind: String, center: UserNotificationCenter) async
    /// A Focus came on or went off (only for an app the user lets know: ``UserNotificationCenter/requestFocusStatusAuthorization()``).
    func focusStatusChanged(_ status: FocusStatus, center: UserNotificationCenter) async
}

extension UserNotificationCenterDelegate {
    public func willPresent(_ notification: DeliveredNotification, center: UserNotificationCenter) async
        -> PresentationOptions
    { [] }
    public func didReceive(_ response: NotificationResponse, center: UserNotificationCenter) async {}
    public func didReceiveRemoteNotification(_ notification: DeliveredNotification, center: UserNotificationCenter)
        async -> BackgroundFetchResult
    { .noData }
    public func serviceExtension(_ notification: DeliveredNotification, center: UserNotificationCenter) async
        -> NotificationContent?
    { nil }
    public func contentChanged(_ kind: ReloadKind, center: UserNotificationCenter) async {}
    public func didReceiveLocationPush(_ notification: DeliveredNotification, center: UserNotificationCenter) async {}
    public func activityChanged(_ activity: LiveActivity, center: UserNotificationCenter) async {}
    public func backgroundTimeExpired(identifier: String, kind: String, center: UserNotificationCenter) async {}
    public func focusStatusChanged(_ status: FocusStatus, center: UserNotificationCenter) async {}
}
