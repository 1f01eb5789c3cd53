import Crypto
import Foundation
import HeraldCore
import HeraldRuntime
import HeraldTesting
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Synchronization
import Testing

@testable import HeraldGateway

/// The gateway's side of device links for a test: a directory, a router and the link service, with
/// the provider API's logic called directly. Each device is a ``VirtualDevice``: the real
/// ``DeviceLinkHandler`` on a testing channel of its own, no socket between them.
struct LinkBench {
    let f: Fixture
    let router: PushRouter
    let service: DeviceLinkService

    init(
        acknowledgementTimeout: Duration = .seconds(10), qos: LinkQoS.Configuration = .init(batchWindow: .seconds(60)),
        offline: OfflinePolicy = OfflinePolicy(), store: ((any GatewayStore) -> any GatewayStore)? = nil,
        logBatch: Int = 0, configuration base: DeviceLinkServer.Configuration = .init()
    ) async throws {
        f = try await Fixture(now: Date())
        router = PushRouter(
            committer: GroupCommitter(store: store?(f.store) ?? f.store, policy: offline, logBatch: logBatch))
        var configuration = base
        configuration.acknowledgementTimeout = acknowledgementTimeout
        configuration.qos = qos
        // The link's liveness runs on each testing channel's time, which moves only when a test
        // moves it: it never fires here.
        service = DeviceLinkService.quiet(f, router: router, configuration: configuration)
    }

    /// A device that says hello as `identity` and is welcomed (or refused: the gateway's error is thrown).
    func connect(_ identity: DeviceIdentity, autoAcknowledge: Bool = true) async throws -> VirtualDevice {
        try await VirtualDevice.connect(to: service, identity: identity, autoAcknowledge: autoAcknowledge)
    }

    /// Sends a push through the provider API's logic and the router; returns the answer. (A push to
    /// a connected device is answered after the device acknowledges it: start it with `async let`.)
    func push(
        to token: DeviceToken, topic: String = Fixture.bundle, body: String = #"{"aps":{"alert":"hi"}}"#,
        headers: [(String, String)] = []
    ) async -> ProviderResponse {
        await f.push(through: router, token: token, topic: topic, body: body, headers: headers)
    }

    /// The reason the provider API would give a push to `token` now (nil: accepted).
    func reason(of token: DeviceToken) -> APNsReason? {
        var connection = ProviderConnectionState(defaultEnvironment: .development)
        if case .respond(let response, _) = f.api.handle(
            f.request(token: token.hex), connection: &connection, now: Date())
        {
            return response.reason
        }
        return nil
    }

    /// Waits until every batch handed to the store's committer so far is durable: the committer
    /// writes its batches in the order they came, so an empty one committed now is done only after
    /// them. (An acknowledgement written to a virtual device's channel has been handed over when
    /// the write returns.)
    func settled() async throws {
        _ = try await router.offline.committer.commit(StoreBatch())
    }

    /// The pushes stored, once what was handed to the committer is durable.
    func storedCount() async throws -> Int {
        try await settled()
        return try await f.store.storedCount()
    }

    /// The delivery log of `id`, once what was handed to the committer is durable.
    func log(_ id: String) async throws -> [DeliveryEvent.Kind] {
        try await settled()
        return try await f.store.deliveryLog(id: id).map(\.kind)
    }
}

/// A device at the other end of the real ``DeviceLinkHandler`` on a testing channel: it speaks the
/// link protocol frame by frame as the device daemon's client does (the hello, requests,
/// acknowledgements), and each step awaits what the handler writes, so a test never polls. What the
/// daemon's client does with what it reads (dropping a second copy of an `apns-id`, handing a read's
/// notifications over together) is tested in HeraldDeviceTests' `LinkClientHandlerTests`.
final class VirtualDevice {
    let channel: NIOAsyncTestingChannel
    let identity: DeviceIdentity
    /// Acknowledges each notification as it is taken (as the daemon does at the end of each read).
    let autoAcknowledge: Bool
    private(set) var deviceID = ""
    private(set) var generation = 0
    private(set) var registrations: [LinkRegistration] = []
    /// What the gateway wrote that no step has taken yet, in order.
    private var unread: [LinkMessage] = []
    /// The gateway's reason for closing the link (its last error without a request), once it gave one.
    private(set) var closeReason: String?
    private var isClosed = false
    /// Whether the link was opened with a resumption ticket rather than a signature.
    private(set) var resumed = false
    /// The gateway's message when it refused the ticket this device presented.
    private(set) var ticketRefusal: String?
    private var lastRequest = 0

    private init(channel: NIOAsyncTestingChannel, identity: DeviceIdentity, autoAcknowledge: Bool) {
        self.channel = channel
        self.identity = identity
        self.autoAcknowledge = autoAcknowledge
    }

    private func sign(_ nonce: Data) async throws {
        let signature = try identity.privateKey.signature(for: DeviceLink.signedBytes(nonce: nonce)).rawRepresentation
        try await send(
            .hello(
                device: identity.deviceID, publicKey: identity.privateKey.publicKey.x963Representation,
                signature: signature))
    }

    static func connect(
        to service: DeviceLinkService, identity: DeviceIdentity, autoAcknowledge: Bool = true
    ) async throws -> VirtualDevice {
        let channel = NIOAsyncTestingChannel()
        try await channel.testingEventLoop.executeInContext {
            try channel.pipeline.syncOperations.addHandler(DeviceLinkHandler(service: service))
        }
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1))
        let device = VirtualDevice(channel: channel, identity: identity, autoAcknowledge: autoAcknowledge)
        try await device.hello()
        return device
    }

    private func hello() async throws {
        guard case .challenge(let nonce) = try await take("the challenge", { $0 }) else {
            throw TestFailure("the gateway did not begin with a challenge")
        }
        // As the daemon's client does: the ticket of the last welcome if there is one, else (or
        // when the gateway refuses it) a signature.
        resumed = false
        if let device = identity.deviceID, let ticket = identity.resumption.current(now: Date()) {
            try await send(
                .resume(
                    device: device, ticket: ticket.ticket,
                    proof: DeviceLink.resumeProof(secret: ticket.secret, nonce: nonce)))
            resumed = true
        } else {
            try await sign(nonce)
        }
        var answer = try await take("the welcome", { $0 })
        if case .error(nil, .ticketRefused, let message) = answer {
            ticketRefusal = message
            identity.resumption.keep(nil)
            resumed = false
            try await sign(nonce)
            answer = try await take("the welcome", { $0 })
        }
        switch answer {
        case .welcome(let device, let generation, let registrations, let ticket):
            (self.deviceID, self.generation, self.registrations) = (device, generation, registrations)
            identity.resumption.keep(ticket)
        case .error(nil, let code, let message):
            throw GatewayLinkFailure(code: code, message: message)
        case let other:
            throw TestFailure("expected a welcome, got \(other)")
        }
    }

    // MARK: What the device sends

    func send(_ message: LinkMessage) async throws {
        var data = ByteBuffer()
        data.writeBytes(message.encoded())
        try await channel.writeInbound(WebSocketFrame(fin: true, opcode: .text, data: data))
    }

    /// Acknowledges notifications; the handler has handed what that settles to the store's
    /// committer when this returns.
    func acknowledge(_ ids: [String]) async throws { try await send(.ack(ids)) }

    /// Sends a request and returns its answer; an error answer is thrown as the daemon's client throws it.
    func request(_ make: (Int) -> LinkMessage) async throws -> LinkMessage {
        lastRequest += 1
        let id = lastRequest
        try await send(make(id))
        let answer = try await take("the answer to request \(id)") { message -> LinkMessage? in
            switch message {
            case .token(id?, _), .unregistered(id?, _, _), .reset(id?, _), .subscribed(id?, _, _, _), .error(id?, _, _):
                return message
            default:
                return nil
            }
        }
        if case .error(_, let code, let message) = answer { throw GatewayLinkFailure(code: code, message: message) }
        return answer
    }

    func register(topic: String) async throws -> DeviceToken {
        let answer = try await request { .register(request: $0, topic: topic, environment: .development) }
        guard case .token(_, let registration) = answer else { throw TestFailure("answered \(answer)") }
        return registration.token
    }

    func token(topic: String, scope: TokenScope) async throws -> DeviceToken {
        let answer = try await request {
            .registerScope(request: $0, topic: topic, environment: .development, scope: scope)
        }
        guard case .token(_, let registration) = answer else { throw TestFailure("answered \(answer)") }
        return registration.token
    }

    func releaseToken(topic: String, scope: TokenScope) async throws {
        _ = try await request { .unregisterScope(request: $0, topic: topic, environment: .development, scope: scope) }
    }

    func unregister(topic: String) async throws {
        _ = try await request { .unregister(request: $0, topic: topic, environment: .development) }
    }

    /// Asks for a reset; returns the new generation.
    func reset() async throws -> Int {
        let answer = try await request { .resetDevice(request: $0) }
        guard case .reset(_, let generation) = answer else { throw TestFailure("answered \(answer)") }
        return generation
    }

    /// Closes the connection from the device's side; the handler has seen it when this returns.
    func close() async throws {
        guard !isClosed else { return }
        isClosed = true
        try await channel.close()
    }

    // MARK: What the gateway writes

    /// The next `count` notifications, in the order written (acknowledged if the device does so).
    func pushes(_ count: Int) async throws -> [LinkPush] {
        var pushes: [LinkPush] = []
        while pushes.count < count {
            let push = try await take("notification \(pushes.count + 1) of \(count)") { message -> LinkPush? in
                if case .push(let push) = message { return push }
                return nil
            }
            if autoAcknowledge { try await acknowledge([push.apnsID]) }
            pushes.append(push)
        }
        return pushes
    }

    /// The next reset the gateway announces; its generation.
    func nextReset() async throws -> Int {
        try await take("a reset") { message -> Int? in
            if case .reset(_, let generation) = message { return generation }
            return nil
        }
    }

    /// Waits for the gateway to close the link; returns the reason it gave.
    func closed() async throws -> String? {
        do {
            while true { unread.append(try await read()) }
        } catch is LinkWasClosed {
            return closeReason
        }
    }

    /// What the gateway has written and no step has taken, without waiting for more (the loop runs
    /// what it has queued first, such as the flush at the end of its turn).
    func written() async throws -> [LinkMessage] {
        await channel.testingEventLoop.run()
        while let frame = try await channel.readOutbound(as: WebSocketFrame.self) {
            if let message = try message(in: frame) { unread.append(message) }
        }
        defer { unread = [] }
        return unread
    }

    /// The first message not taken yet that `match` takes, reading more as needed; those it does
    /// not take stay for later steps.
    private func take<T>(_ what: String, _ match: (LinkMessage) -> T?) async throws -> T {
        if let index = unread.firstIndex(where: { match($0) != nil }) {
            return match(unread.remove(at: index))!
        }
        while true {
            let message: LinkMessage
            do {
                message = try await read()
            } catch is LinkWasClosed {
                throw GatewayLinkFailure(
                    code: .closed, message: "the link closed before \(what): \(closeReason ?? "no reason given")")
            }
            if let taken = match(message) { return taken }
            unread.append(message)
        }
    }

    private struct LinkWasClosed: Error {}

    /// The next message written; pings are answered, a close frame ends the link.
    private func read() async throws -> LinkMessage {
        while true {
            let frame: WebSocketFrame
            do {
                // A test that never gets what it waits for is stopped by its suite's time limit,
                // which cancels it: the link is closed then, so the wait ends (the testing
                // channel's wait does not see cancellation itself).
                let channel = self.channel
                frame = try await withTaskCancellationHandler {
                    try await channel.waitForOutboundWrite(as: WebSocketFrame.self)
                } onCancel: {
                    channel.close(promise: nil)
                }
            } catch ChannelError.ioOnClosedChannel {
                throw LinkWasClosed()
            }
            if frame.opcode == .connectionClose { throw LinkWasClosed() }
            if let message = try message(in: frame) { return message }
        }
    }

    private func message(in frame: WebSocketFrame) throws -> LinkMessage? {
        guard frame.opcode == .text else { return nil }
        let message = try LinkMessage(json: Data(frame.unmaskedData.readableBytesView))
        if case .error(nil, let code, let text) = message { closeReason = "\(code): \(text)" }
        return message
    }
}

/// A count that a test can wait on: each wait returns once the count reaches its number.
final class Tally: Sendable {
    private struct State {
        var count = 0
        var waiters: [(Int, CheckedContinuation<Void, Never>)] = []
    }
    private let state = Mutex(State())

    var count: Int { state.withLock { $0.count } }

    func increment() {
        let ready = state.withLock { s in
            s.count += 1
            let count = s.count
            defer { s.waiters.removeAll { $0.0 <= count } }
            return s.waiters.filter { $0.0 <= count }.map(\.1)
        }
        for waiter in ready { waiter.resume() }
    }

    /// Returns once the count is at least `target`.
    func reached(_ target: Int) async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { s in
                if s.count >= target { return true }
                s.waiters.append((target, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }
}
