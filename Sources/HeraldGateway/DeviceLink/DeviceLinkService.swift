import Crypto
import Foundation
import HeraldCore
import HeraldRuntime
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// What every device link connection shares: the directory, the offline store, the connected
/// devices and the configuration. Authentication and registration run here, off the event loop (they touch
/// the store).
final class DeviceLinkService: Sendable {
    /// The listener's name in logs and metrics.
    static let listener = "device link"
    let directory: GatewayDirectory
    let offline: OfflineStore
    let links: DeviceLinks
    let configuration: DeviceLinkConfiguration
    let logger: Logger
    let log: ListenerLog
    let clock: any WallClock
    /// The broadcast channels devices subscribe to; `nil`: subscriptions are refused.
    let broadcasts: BroadcastHub?
    /// Resumption tickets; `nil` when the gateway gives none.
    let tickets: LinkTickets?
    /// Reads devices' backlogs as they come online, many per query.
    let backlogs: BacklogReader
    /// The devices that may have something stored; the others do not read their backlog.
    var storedDevices: StoredDevices { offline.committer.storedDevices }
    /// The upgrade resumptions accepted lately: each is accepted once.
    let recentProofs: RecentProofs
    /// The links' timers, one heap per event loop.
    let timers = PerLoop { LoopTimers(loop: $0) }

    init(
        directory: GatewayDirectory, links: DeviceLinks, offline: OfflineStore,
        configuration: DeviceLinkConfiguration,
        logger: Logger, log: ListenerLog, clock: any WallClock, broadcasts: BroadcastHub? = nil
    ) {
        self.broadcasts = broadcasts
        self.directory = directory
        self.offline = offline
        self.links = links
        self.configuration = configuration
        self.logger = logger
        self.log = log
        self.clock = clock
        self.tickets = configuration.ticketLifetime.map { LinkTickets(issuer: directory.issuer, lifetime: $0) }
        self.recentProofs = RecentProofs(window: DeviceLink.upgradeResumeWindow)
        self.backlogs = BacklogReader { [offline, logger, clock] devices in
            do {
                return try await offline.pending(devices: devices, now: clock.now())
            } catch {
                logger.error(
                    "could not read stored notifications",
                    metadata: ["devices": "\(devices.count)", "error": "\(error)"])
                return nil
            }
        }
    }

    // MARK: Authentication and registration (off the event loop: they touch the store)

    /// Why the gateway refused a device.
    struct Refusal: Error {
        var code: LinkErrorCode
        var message: String
    }

    /// An authenticated device: its record, its registrations and a new resumption ticket.
    struct Authenticated {
        var device: DeviceRecord
        var registrations: [Registration]
        var ticket: LinkTicket?
    }

    /// Checks a `resume` (a ticket and its proof over `nonce`) on the event loop: it touches only
    /// the registry in memory, and costs an AES-GCM open and two HMACs instead of a signature check.
    func resume(device: String, ticket: Data, proof: Data, nonce: Data) -> Result<Authenticated, Refusal> {
        resume(
            device: device, ticket: ticket, proof: proof, authenticating: DeviceLink.resumedBytes(nonce: nonce),
            now: clock.now(), upgradeTime: nil)
    }

    /// Checks a resumption carried in the upgrade request (docs/device-link.md, "Resuming in the
    /// upgrade request"), on the event loop: as ``resume(device:ticket:proof:nonce:)``, with the
    /// proof over the request's `Sec-WebSocket-Key` and the device's time, which must be within
    /// ``DeviceLink/upgradeResumeWindow`` of the gateway's clock, and a request accepted once only.
    func resume(_ resume: DeviceLink.UpgradeResume, webSocketKey: String) -> Result<Authenticated, Refusal> {
        let now = clock.now()
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down))
        // The header's time has at most 18 digits, but the difference is taken without trusting that.
        let (offset, overflow) = resume.time.subtractingReportingOverflow(seconds)
        if tickets != nil, overflow || offset.magnitude > DeviceLink.upgradeResumeWindow.magnitude {
            return .failure(
                Refusal(
                    code: .ticketRefused,
                    message: overflow
                        ? "the resumption's time is far from the gateway's clock"
                        : "the resumption's time is \(offset) s from the gateway's clock"))
        }
        return self.resume(
            device: resume.device, ticket: resume.ticket, proof: resume.proof,
            authenticating: DeviceLink.upgradeResumedBytes(webSocketKey: webSocketKey, time: resume.time), now: now,
            upgradeTime: resume.time)
    }

    /// What both resumptions check: the ticket and its proof over `authenticated`
    /// (``LinkTickets/check(claimed:ticket:proof:authenticating:now:record:)``); then, for a request
    /// whose time is `upgradeTime`, that the proof was not accepted before (``RecentProofs``:
    /// remembered only once it verified).
    /// Accepted: the device's registrations and its next ticket
    /// (``LinkTickets/next(presented:holding:for:now:)``: the same one while it has most of its life).
    private func resume(
        device: String, ticket: Data, proof: Data, authenticating authenticated: Data, now: Date, upgradeTime: Int64?
    ) -> Result<Authenticated, Refusal> {
        guard let tickets else {
            return .failure(Refusal(code: .ticketRefused, message: "this gateway gives no tickets"))
        }
        let registry = directory.registry
        switch tickets.check(
            claimed: device, ticket: ticket, proof: proof, authenticating: authenticated, now: now,
            record: { registry.device($0) })
        {
        case .failure(let refusal): return .failure(Refusal(code: .ticketRefused, message: refusal.message))
        case .success(let (record, contents)):
            if let upgradeTime,
                !recentProofs.insert(
                    proof, time: upgradeTime, now: Int64(now.timeIntervalSince1970.rounded(.down)),
                    uptime: Int64(NIODeadline.now().uptimeNanoseconds / 1_000_000_000))
            {
                return .failure(Refusal(code: .ticketRefused, message: "the resumption was presented already"))
            }
            offline.metrics.linkAuthenticated(byTicket: true, inUpgrade: upgradeTime != nil)
            return .success(
                Authenticated(
                    device: record, registrations: registry.registrations(device: record.id),
                    ticket: tickets.next(presented: ticket, holding: contents, for: record, now: now)))
        }
    }

    func authenticate(device: String?, publicKey: Data?, signature: Data, nonce: Data) async -> Result<
        Authenticated, Refusal
    > {
        let registry = directory.registry
        let existing = device.flatMap { registry.device($0) }
        if let existing, existing.deletedAt != nil {
            return .failure(Refusal(code: .deviceDeleted, message: "device \(existing.id) was deleted"))
        }
        let keyBytes: Data
        if let existing, !existing.publicKey.isEmpty {
            if let publicKey, publicKey != existing.publicKey {
                return .failure(
                    Refusal(code: .deviceKeyMismatch, message: "device \(existing.id) is registered with another key"))
            }
            keyBytes = existing.publicKey
        } else if let publicKey {
            keyBytes = publicKey
        } else {
            return .failure(
                Refusal(
                    code: .unknownDevice,
                    message: device.map { "device \($0) is not registered; send publicKey to register it" }
                        ?? "a new device must send publicKey"))
        }
        guard let key = try? P256.Signing.PublicKey(x963Representation: keyBytes) else {
            return .failure(Refusal(code: .badPublicKey, message: "publicKey must be a P-256 key in X9.63 form"))
        }
        guard
            let ecdsa = (try? P256.Signing.ECDSASignature(rawRepresentation: signature))
                ?? (try? P256.Signing.ECDSASignature(derRepresentation: signature)),
            key.isValidSignature(ecdsa, for: DeviceLink.signedBytes(nonce: nonce))
        else {
            return .failure(
                Refusal(code: .badSignature, message: "the signature does not verify with the device's key"))
        }
        do {
            let now = clock.now()
            let record = try await directory.registerDevice(id: device, publicKey: keyBytes, now: now)
            offline.metrics.linkAuthenticated(byTicket: false)
            return .success(
                Authenticated(
                    device: record, registrations: registry.registrations(device: record.id),
                    ticket: tickets?.issue(for: record, now: now)))
        } catch let failure as GatewayDirectory.Failure {
            return .failure(Refusal(code: .refused, message: failure.description))
        } catch {
            return .failure(Refusal(code: .`internal`, message: "\(error)"))
        }
    }

    /// Whether a stored push's registration is still live (the app not removed, the device not
    /// reset) and the one it was sent to (the app not removed and registered again since).
    func isRegistered(_ stored: StoredPush) -> Bool {
        stored.isFor(directory.registry.registration(stored.token, in: stored.environment))
    }

    /// Subscribes a link to broadcast channels: what the channels keep, or why not.
    func subscribe(
        _ subscriber: BroadcastHub.Subscriber, id: ObjectIdentifier, topic: String, environment: APNsEnvironment,
        channels: [String], now: Date
    ) async -> Result<[LinkBroadcast], Refusal> {
        guard let broadcasts else {
            return .failure(Refusal(code: .refused, message: "this gateway has no broadcast channels"))
        }
        do {
            let kept = try await broadcasts.subscribe(
                subscriber, id: id, bundleID: topic, environment: environment, channels: channels, now: now)
            return .success(kept.map(\.linkBroadcast))
        } catch {
            // The hub throws only its `Refusal`.
            return .failure(Refusal(code: error.code, message: error.message))
        }
    }

    /// Carries out a device's request and returns the answer.
    func perform(_ message: LinkMessage, device: String) async -> LinkMessage {
        let at = clock.now()
        do {
            switch message {
            case .register(let request, let topic, let environment, let installation):
                let r = try await directory.registerApp(
                    device: device, bundleID: topic, environment: environment, installation: installation ?? 0,
                    now: at)
                logger.info("device registered app", metadata: ["device": "\(device)", "topic": "\(topic)"])
                return .token(
                    request: request, LinkRegistration(topic: topic, environment: environment, token: r.token))
            case .unregister(let request, let topic, let environment):
                try await directory.unregisterApp(device: device, bundleID: topic, environment: environment, now: at)
                logger.info("device removed app", metadata: ["device": "\(device)", "topic": "\(topic)"])
                return .unregistered(request: request, topic: topic, environment: environment)
            case .registerScope(let request, let topic, let environment, let scope):
                let r = try await directory.registerApp(
                    device: device, bundleID: topic, environment: environment, scope: scope, now: at)
                logger.info(
                    "device took a scoped token",
                    metadata: ["device": "\(device)", "topic": "\(topic)", "scope": "\(scope)"])
                return .token(
                    request: request,
                    LinkRegistration(topic: topic, environment: environment, token: r.token, scope: scope))
            case .unregisterScope(let request, let topic, let environment, let scope):
                try await directory.unregisterApp(
                    device: device, bundleID: topic, environment: environment, scope: scope, now: at)
                logger.info(
                    "device gave a scoped token up",
                    metadata: ["device": "\(device)", "topic": "\(topic)", "scope": "\(scope)"])
                return .unregistered(request: request, topic: topic, environment: environment)
            case .resetDevice(let request):
                let record = try await directory.resetDevice(device, now: at)
                logger.info("device reset itself", metadata: ["device": "\(device)"])
                return .reset(request: request, generation: record.generation)
            default:
                return .error(request: nil, code: .badMessage, message: "unexpected message")
            }
        } catch let failure as GatewayDirectory.Failure {
            return .error(
                request: message.requestID, code: failure.status == 404 ? .notFound : .refused,
                message: failure.description)
        } catch {
            return .error(request: message.requestID, code: .`internal`, message: "\(error)")
        }
    }
}

extension LinkMessage {
    /// The request id a device put on its message, if any.
    var requestID: Int? {
        switch self {
        case .register(let r, _, _, _), .unregister(let r, _, _), .resetDevice(let r), .subscribe(let r, _, _, _),
            .unsubscribe(let r, _, _, _), .registerScope(let r, _, _, _), .unregisterScope(let r, _, _, _):
            return r
        default: return nil
        }
    }
}
