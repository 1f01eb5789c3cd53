import Foundation
import HeraldCore
import HeraldRuntime
import Logging
import ServiceLifecycle

/// What the gateway session needs from the daemon that owns it.
protocol GatewaySessionHost: Actor {
    /// The topics to register: every installed app with an `aps-environment`.
    func registrableTopics() -> [GatewaySession.Topic]
    /// Hands pushes to the engine and saves them together; an outcome per push, in order.
    func take(_ pushes: [LinkPush]) async -> [GatewaySession.Outcome]
    /// Writes what the engine holds unsaved; whether it is saved now.
    func saveNow() async -> Bool
    /// Something about the link worth a line in the device's log.
    func linkNote(app: String, _ text: String)
    /// An app's token changed after it had one: a connected app is told.
    func tokenChanged(app: String, token: String)
    /// Hands a broadcast to the engine (the activities subscribed to its channel).
    func take(_ broadcast: LinkBroadcast) async
    /// What the activities need from the push service when the link comes up.
    func activityNeeds() -> GatewaySession.ActivityNeeds
    /// The push service gave an activity its token.
    func activityTokenIssued(app: String, activityID: String, token: String) async
    /// The push service gave an app a push-to-start token.
    func pushToStartTokenIssued(app: String, attributesType: String, token: String) async
}

/// The device's side of the push service: keeps the device link up (reconnecting with backoff and
/// jitter), the apps' tokens and the topics waiting to be unregistered (`link.json`), and the one set
/// of `apns-id`s already taken, so that a push sent again is acknowledged and dropped. (Within one
/// connection the link client already drops a second copy: one acknowledgement settles every copy
/// under an `apns-id`. This set holds across connections and restarts.)
actor GatewaySession {
    /// How the session reaches the push service.
    struct Configuration: Sendable {
        /// The device link's addresses (`ws://…` on loopback or `wss://…`), tried in turn: after a
        /// failure the next one is; none: no push service.
        var urls: [String]
        /// The CA to trust for a `wss://` link (PEM file); `nil`: the system's roots.
        var caPath: String?
        /// First reconnect delay, in seconds; it doubles up to `reconnectMaximum`, with jitter.
        var reconnectBase: TimeInterval
        /// The longest reconnect delay, in seconds.
        var reconnectMaximum: TimeInterval
        /// The state directory: `identity.json` and `link.json`.
        var stateDirectory: URL
    }

    /// An app's topic in one environment.
    struct Topic: Codable, Hashable, Sendable {
        var topic: String
        var environment: APNsEnvironment
    }

    /// What became of a push handed to the engine.
    enum Outcome: Sendable {
        /// Saved: acknowledged.
        case taken
        /// The device cannot use it: acknowledged and reported to the push service with `reason`.
        case refused(reason: String)
        /// Handled by the engine but not saved: not acknowledged, so the push service keeps it and
        /// sends it again; then it is saved (not handled again) and acknowledged.
        case notSaved
    }

    /// Why an app could not get a token.
    enum RegistrationError: Error, Sendable {
        /// The device has no push service configured.
        case noPushService
        /// The push service did not answer in time, and the app never had a token.
        case unreachable
        /// The link closed while registering.
        case linkClosed
    }

    /// What the session keeps beside the engine's records (`link.json`).
    struct Saved: Codable {
        /// Current tokens by bundle id, as hex.
        var tokens: [String: String] = [:]
        /// Topics to unregister once connected (apps removed while offline).
        var unregister: [Topic] = []
        /// Activity tokens to give up once connected (optional: older files have none).
        var releases: [ScopedToken]?
        /// Per app, how many times it was removed from the device: its next registration's
        /// installation, so that a reinstalled app gets a new token (optional: older files have none).
        var installations: [String: Int]?
    }

    /// One app's scoped token: an activity's (`activityID` its id) or a push-to-start token
    /// (`activityID` the attributes type).
    struct ScopedToken: Codable, Hashable, Sendable {
        var app: String
        var environment: APNsEnvironment
        var activityID: String
    }

    /// What the activities need from the push service each time the link comes up: their tokens,
    /// the push-to-start tokens, and the channel subscriptions.
    struct ActivityNeeds: Sendable {
        var tokens: [ScopedToken] = []
        var pushToStart: [ScopedToken] = []
        var channels: [Topic: Set<String>] = [:]
    }

    let configuration: Configuration
    /// Real time: reconnect delays and the wait for the push service. It stays the system's clock when
    /// the device's clock is manual, so a stopped device clock never stalls the link.
    let clock: any WallClock
    let logger: Logger
    weak var host: (any GatewaySessionHost)?
    private(set) var identity: DeviceIdentity
    private var saved: Saved
    private var client: GatewayLinkClient?
    private var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
    private var nextWaiter = 0
    /// `apns-id`s of the newest pushes already taken.
    private var taken = RecentIDs(capacity: 20_000)
    /// Pushes the engine has but whose write failed: not acknowledged until a write succeeds, and
    /// never handed to the engine again.
    private var unsaved: Set<String> = []

    /// Loads `link.json` (a missing or unreadable file starts empty); `taken` are the `apns-id`s the
    /// engine's records already hold, oldest first.
    init(
        configuration: Configuration, identity: DeviceIdentity, clock: any WallClock, logger: Logger,
        taken: [String]
    ) {
        self.configuration = configuration
        self.identity = identity
        self.clock = clock
        self.logger = logger
        saved =
            (try? JSONDecoder().decode(
                Saved.self, from: Data(contentsOf: configuration.stateDirectory.appendingPathComponent("link.json"))))
            ?? Saved()
        for id in taken { self.taken.insert(id) }
    }

    /// Sets who takes the pushes; the session holds it weakly.
    func attach(_ host: any GatewaySessionHost) { self.host = host }

    // MARK: - What the daemon asks

    /// No push service, connecting, or connected.
    var state: GatewayLinkState {
        configuration.urls.isEmpty ? .none : client == nil ? .disconnected : .connected
    }

    /// The device's id at the push service, once known.
    var deviceID: String? { identity.deviceID }

    /// An app's current device token (hex), once registered.
    func token(of app: String) -> String? { saved.tokens[app] }

    /// Registers every registrable topic now, when connected (an app was installed).
    func registerAll() async {
        if let client { await registerAll(client) }
    }

    /// `registerForRemoteNotifications`: the app's token, waiting up to `wait` seconds for the link.
    /// While the push service stays unreachable, a token the app had before is still its token.
    func register(_ app: String, environment: APNsEnvironment, wait: TimeInterval) async throws -> String {
        guard !configuration.urls.isEmpty else { throw RegistrationError.noPushService }
        if client == nil, !(await waitForLink(seconds: wait)) {
            if let token = saved.tokens[app] { return token }
            throw RegistrationError.unreachable
        }
        guard let client else { throw RegistrationError.linkClosed }
        let token = try await client.register(topic: app, environment: environment, installation: installation(of: app))
        await updateToken(app, token.hex)
        return token.hex
    }

    // MARK: - Live Activities

    /// An activity's token, or `nil` without a link (it is asked for again when the link is up).
    func activityToken(_ app: String, environment: APNsEnvironment, activityID: String) async -> String? {
        guard let client else { return nil }
        do {
            return try await client.token(topic: app, environment: environment, scope: .activity(activityID)).hex
        } catch {
            logger.warning("an activity's token was not given", metadata: ["app": "\(app)", "error": "\(error)"])
            return nil
        }
    }

    /// Gives an activity's token up now, or once the link is back.
    func releaseActivityToken(_ app: String, environment: APNsEnvironment?, activityID: String) async {
        guard let environment else { return }
        if let client {
            do {
                try await client.releaseToken(topic: app, environment: environment, scope: .activity(activityID))
                return
            } catch let failure as GatewayLinkClient.Failure where failure.code == .notFound {
                return
            } catch {
                logger.notice(
                    "an activity's token will be given up when the push service is reachable",
                    metadata: ["app": "\(app)", "error": "\(error)"])
            }
        }
        saved.releases =
            (saved.releases ?? []) + [ScopedToken(app: app, environment: environment, activityID: activityID)]
        save()
    }

    /// The app's push-to-start token for an attributes type.
    func pushToStartToken(_ app: String, environment: APNsEnvironment, attributesType: String, wait: TimeInterval)
        async throws -> String
    {
        guard !configuration.urls.isEmpty else { throw RegistrationError.noPushService }
        if client == nil, !(await waitForLink(seconds: wait)) { throw RegistrationError.unreachable }
        guard let client else { throw RegistrationError.linkClosed }
        return try await client.token(topic: app, environment: environment, scope: .pushToStart(attributesType)).hex
    }

    /// Subscribes an app to channels now; without a link they are subscribed when it comes up.
    func subscribe(_ app: String, environment: APNsEnvironment, channels: [String]) async {
        guard let client else { return }
        do {
            try await client.subscribe(topic: app, environment: environment, channels: channels)
        } catch {
            await host?.linkNote(app: app, "subscribing to \(channels.joined(separator: ", ")) failed: \(error)")
        }
    }

    /// Ends an app's subscriptions (they end with the connection anyway).
    func unsubscribe(_ app: String, environment: APNsEnvironment, channels: [String]) async {
        guard let client else { return }
        _ = try? await client.unsubscribe(topic: app, environment: environment, channels: channels)
    }

    /// What the activities need, asked for on a new link.
    private func syncActivities(_ client: GatewayLinkClient) async {
        guard let host else { return }
        for release in saved.releases ?? [] {
            _ = try? await client.releaseToken(
                topic: release.app, environment: release.environment, scope: .activity(release.activityID))
        }
        if saved.releases != nil {
            saved.releases = nil
            save()
        }
        let needs = await host.activityNeeds()
        for need in needs.tokens {
            if let token = try? await client.token(
                topic: need.app, environment: need.environment, scope: .activity(need.activityID))
            {
                await host.activityTokenIssued(app: need.app, activityID: need.activityID, token: token.hex)
            }
        }
        for need in needs.pushToStart {
            if let token = try? await client.token(
                topic: need.app, environment: need.environment, scope: .pushToStart(need.activityID))
            {
                await host.pushToStartTokenIssued(app: need.app, attributesType: need.activityID, token: token.hex)
            }
        }
        for (topic, channels) in needs.channels {
            do {
                try await client.subscribe(
                    topic: topic.topic, environment: topic.environment, channels: channels.sorted())
            } catch {
                await host.linkNote(app: topic.topic, "subscribing to its channels failed: \(error)")
            }
        }
    }

    /// `unregisterForRemoteNotifications`: the push service forgets the topic now (when connected) and
    /// the app's token is dropped.
    func unregister(_ app: String, environment: APNsEnvironment?) async throws {
        if let environment, let client {
            try await client.unregister(topic: app, environment: environment)
        }
        saved.tokens[app] = nil
        save()
    }

    /// An app was removed: its topic is unregistered now, or at the next connect, so that the push
    /// service answers 410 `Unregistered` to its token.
    func removed(_ app: String, environment: APNsEnvironment?) async {
        saved.tokens[app] = nil
        saved.installations = saved.installations ?? [:]
        saved.installations![app, default: 0] += 1
        save()  // before waiting for the push service: a crash then still counts the removal
        if let environment {
            do {
                guard let client else { throw GatewayLinkClient.Failure(code: .offline, message: "not connected") }
                try await client.unregister(topic: app, environment: environment)
            } catch {
                saved.unregister.append(Topic(topic: app, environment: environment))
                logger.notice(
                    "the app's topic will be unregistered when the push service is reachable",
                    metadata: ["app": "\(app)", "error": "\(error)"])
            }
        }
        save()
    }

    // MARK: - The link

    /// Keeps the link until cancelled: connects, registers the apps' topics, takes pushes, and
    /// reconnects after a failure with exponential backoff and jitter, to the next address when
    /// there are several (the node it was on may be gone; another holds what was stored for it).
    func keepLinked() async {
        let urls = configuration.urls
        guard !urls.isEmpty else { return }
        let ca = configuration.caPath.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }
        var failures = 0
        var next = 0
        while !Task.isCancelled {
            let url = urls[next % urls.count]
            // The window of a gateway that said it is stopping (goaway), if the last link ended so.
            var drain: Duration?
            do {
                let client = try await GatewayLinkClient.connect(
                    url: url, identity: identity, caCertificatePEM: ca, autoAcknowledge: false)
                failures = 0
                await linked(client)
                for await event in client.events {
                    switch event {
                    case .pushes(let pushes):
                        await take(pushes, from: client)
                    case .reset: await registerAll(client)
                    case .broadcast(let broadcast):
                        await host?.take(broadcast)
                    case .goAway(let within):
                        drain = within
                    case .closed(let reason):
                        logger.notice("device link closed", metadata: ["reason": "\(reason ?? "none")"])
                    }
                }
                if self.client === client { self.client = nil }
                await client.close()
            } catch is CancellationError {
                break
            } catch {
                logger.warning("device link failed", metadata: ["url": "\(url)", "error": "\(error)"])
            }
            if Task.isCancelled { break }
            next += 1
            let delay = ReconnectBackoff.wait(
                drain: drain?.timeInterval, failures: &failures, base: configuration.reconnectBase,
                maximum: configuration.reconnectMaximum, jitter: Double.random(in: 0...1))
            logger.info(
                drain == nil ? "reconnecting to the push service" : "the push service's node is stopping; moving",
                metadata: ["in": "\(String(format: "%.2f", delay)) s", "url": "\(urls[next % urls.count])"])
            do { try await clock.sleep(until: clock.now().addingTimeInterval(delay)) } catch { break }
        }
        await client?.close()
    }

    private func linked(_ client: GatewayLinkClient) async {
        if identity.deviceID != client.deviceID {
            identity.deviceID = client.deviceID
            do {
                try identity.save(to: configuration.stateDirectory.appendingPathComponent("identity.json").path)
            } catch {
                logger.error("could not save the device identity", metadata: ["error": "\(error)"])
            }
        }
        await host?.linkNote(app: "device", "connected to the push service as device \(client.deviceID)")
        for topic in saved.unregister {
            do {
                try await client.unregister(topic: topic.topic, environment: topic.environment)
                saved.unregister.removeAll { $0 == topic }
            } catch {
                logger.warning("unregistering a removed app failed", metadata: ["topic": "\(topic.topic)"])
            }
        }
        save()
        // Published only now: a registration made meanwhile would get a reinstalled app's new token,
        // which the unregistration of the old one (by topic) would then take away.
        self.client = client
        await registerAll(client)
        await syncActivities(client)
        let waiting = waiters
        waiters = [:]
        for (_, waiter) in waiting { waiter.resume(returning: true) }
    }

    /// Registers every registrable topic and tells apps whose token changed.
    private func registerAll(_ client: GatewayLinkClient) async {
        guard let topics = await host?.registrableTopics() else { return }
        for topic in topics.sorted(by: { $0.topic < $1.topic }) {
            do {
                let token = try await client.register(
                    topic: topic.topic, environment: topic.environment, installation: installation(of: topic.topic))
                await updateToken(topic.topic, token.hex)
            } catch {
                logger.warning(
                    "registering an app with the push service failed",
                    metadata: ["app": "\(topic.topic)", "error": "\(error)"])
            }
        }
    }

    /// The app's installation on this device: 0 the first time, one more after each removal.
    private func installation(of app: String) -> Int { saved.installations?[app] ?? 0 }

    private func updateToken(_ app: String, _ token: String) async {
        guard saved.tokens[app] != token else { return }
        let had = saved.tokens[app] != nil
        saved.tokens[app] = token
        save()
        await host?.linkNote(app: app, "device token \(token)")
        if had { await host?.tokenChanged(app: app, token: token) }
    }

    private func save() {
        let url = configuration.stateDirectory.appendingPathComponent("link.json")
        do {
            try JSONEncoder().encode(saved).write(to: url, options: .atomic)
        } catch {
            logger.error("could not save link.json", metadata: ["error": "\(error)"])
        }
    }

    /// Takes the pushes read together: hands them to the engine, which saves them in one write, then
    /// acknowledges them. A push whose `apns-id` was already taken is acknowledged again and dropped.
    private func take(_ pushes: [LinkPush], from client: GatewayLinkClient) async {
        var fresh: [LinkPush] = []
        var again: [String] = []
        var retried: [String] = []
        for push in pushes {
            if taken.contains(push.apnsID) {
                again.append(push.apnsID)
            } else if unsaved.contains(push.apnsID) {
                retried.append(push.apnsID)
            } else {
                fresh.append(push)
            }
        }
        if !again.isEmpty { client.acknowledge(again) }
        guard let host else { return }
        if !retried.isEmpty, await host.saveNow() {
            for id in retried {
                unsaved.remove(id)
                taken.insert(id)
            }
            client.acknowledge(retried)
        }
        guard !fresh.isEmpty else { return }
        let outcomes = await host.take(fresh)
        var acknowledged: [String] = []
        for (push, outcome) in zip(fresh, outcomes) {
            switch outcome {
            case .taken:
                taken.insert(push.apnsID)
                acknowledged.append(push.apnsID)
            case .refused(let reason):
                // Acknowledged (sending it again would not help) and reported for the delivery log.
                taken.insert(push.apnsID)
                acknowledged.append(push.apnsID)
                client.refused(push.apnsID, reason: reason)
            case .notSaved:
                unsaved.insert(push.apnsID)
            }
        }
        if !acknowledged.isEmpty { client.acknowledge(acknowledged) }
    }

    /// Whether the link is up, waiting up to `seconds` for it.
    private func waitForLink(seconds: TimeInterval) async -> Bool {
        if client != nil { return true }
        guard seconds > 0 else { return false }
        nextWaiter += 1
        let id = nextWaiter
        let clock = self.clock
        let deadline = clock.now().addingTimeInterval(seconds)
        let timeout = Task { [weak self] in
            try? await clock.sleep(until: deadline)
            await self?.endWait(id)
        }
        let linked = await withCheckedContinuation { waiters[id] = $0 }
        timeout.cancel()
        return linked
    }

    private func endWait(_ id: Int) {
        waiters.removeValue(forKey: id)?.resume(returning: false)
    }
}

/// The link to the push service as a `Service`: kept until graceful shutdown or cancellation.
extension GatewaySession: Service {
    /// Keeps the link until the end. Without a push service there is nothing to keep, and it waits
    /// for the end all the same: a service that returns ends the daemon.
    func run() async throws {
        guard !configuration.urls.isEmpty else {
            try? await gracefulShutdown()
            return
        }
        await cancelWhenGracefulShutdown { await self.keepLinked() }
    }
}
