import Crypto
import Foundation
import HeraldCore
import HeraldRuntime
import HeraldTesting
import Logging
import NIOCore
import NIOEmbedded
import NIOWebSocket

@testable import HeraldGateway

/// A gateway directory over an in-memory store with one team, key, app and device.
struct Fixture {
    static let team = "TEAM123456"
    static let keyID = "KEY1234567"
    static let bundle = "com.example.demo"

    let directory: GatewayDirectory
    let store: SQLiteGatewayStore
    let api: ProviderAPI
    let faults: FaultInjector
    let privateKey: P256.Signing.PrivateKey
    let token: DeviceToken
    var now: Date

    init(now: Date = Date(timeIntervalSince1970: 1_800_000_000), configuration: ProviderAPI.Configuration = .init())
        async throws
    {
        store = try SQLiteGatewayStore(path: nil)
        directory = try await GatewayDirectory.open(
            store: store, issuer: TokenIssuer(secret: Array(repeating: 7, count: 32)))
        privateKey = P256.Signing.PrivateKey()
        try await directory.putTeam(id: Self.team)
        try await directory.putKey(id: Self.keyID, teamID: Self.team, publicKey: privateKey.publicKey)
        try await directory.putApp(bundleID: Self.bundle, teamID: Self.team)
        _ = try await directory.registerDevice(id: "device-1", now: now)
        token = try await directory.registerApp(
            device: "device-1", bundleID: Self.bundle, environment: .development, now: now
        ).token
        faults = FaultInjector()
        api = ProviderAPI(registry: directory.registry, faults: faults, configuration: configuration)
        self.now = now
    }

    func jwt(
        keyID: String = Fixture.keyID, team: String = Fixture.team, issuedAt: Date? = nil,
        key: P256.Signing.PrivateKey? = nil
    )
        -> String
    {
        try! APNsSigningKey(keyID: keyID, teamID: team, privateKey: key ?? privateKey).token(issuedAt: issuedAt ?? now)
    }

    func request(
        token: String? = nil, topic: String? = Fixture.bundle, body: String = #"{"aps":{"alert":"hi"}}"#,
        headers: [(String, String)] = [], jwt: String? = nil, method: String = "POST", path: String? = nil,
        authority: String? = nil
    ) -> ProviderRequest {
        var r = ProviderRequest(
            method: method, path: path ?? "/3/device/\(token ?? self.token.hex)", authority: authority,
            body: ByteBuffer(string: body))
        r.addHeader(name: "authorization", value: "bearer \(jwt ?? self.jwt())")
        if let topic { r.addHeader(name: "apns-topic", value: topic) }
        for (n, v) in headers { r.addHeader(name: n, value: v) }
        return r
    }

    /// Runs a request on a fresh connection (or `connection`) and returns the reason (nil for accepted).
    func reason(_ r: ProviderRequest, connection: inout ProviderConnectionState, at time: Date? = nil) -> APNsReason? {
        switch api.handle(r, connection: &connection, now: time ?? now) {
        case .respond(let response, _): return response.reason
        case .accept, .perform: return nil
        }
    }

    func reason(_ r: ProviderRequest, at time: Date? = nil) -> APNsReason? {
        var connection = ProviderConnectionState(defaultEnvironment: .development)
        return reason(r, connection: &connection, at: time)
    }
}

extension Gateway.Configuration {
    /// A gateway for an in-process test: its state in `directory`, the TLS provider API, admin API and
    /// device link on free loopback ports, no development listener and no legacy interface.
    static func testing(directory: String) -> Gateway.Configuration {
        var configuration = Gateway.Configuration()
        configuration.stateDirectory = directory
        configuration.port = 0
        configuration.developmentPort = nil
        configuration.adminPort = 0
        configuration.linkPort = 0
        configuration.binaryPort = nil
        configuration.feedbackPort = nil
        configuration.channelsPort = nil
        configuration.channelsDevelopmentPort = nil
        return configuration
    }
}

extension Logger {
    /// A gateway's logger for tests: silent, so that a passing run prints nothing of its own (what
    /// a test needs to say goes into its expectations' messages).
    static var testGateway: Logger { .silent }
}

/// Moves bytes between two embedded channels, client to server and back, until neither has more to
/// send; with `runningClientLoop` or `runningServerLoop`, that side's loop runs its queued tasks
/// first each round (a handler that flushes once per turn of its loop; the virtual time stands).
func carryBytes(
    between client: EmbeddedChannel, and server: EmbeddedChannel, runningClientLoop: Bool = false,
    runningServerLoop: Bool = false
) throws {
    var moved = true
    while moved {
        moved = false
        if runningClientLoop { client.embeddedEventLoop.run() }
        if runningServerLoop { server.embeddedEventLoop.run() }
        while let bytes = try client.readOutbound(as: ByteBuffer.self) {
            try server.writeInbound(bytes)
            moved = true
        }
        while let bytes = try server.readOutbound(as: ByteBuffer.self) {
            try client.writeInbound(bytes)
            moved = true
        }
    }
}

extension DeviceLinkService {
    /// The link service of `f`'s directory and `router`, with silent logs and the system clock, for
    /// a test that runs a link handler on a test channel.
    static func quiet(
        _ f: Fixture, router: PushRouter, configuration: DeviceLinkServer.Configuration
    ) -> DeviceLinkService {
        DeviceLinkService(
            directory: f.directory, links: router.links, offline: router.offline, configuration: configuration,
            logger: .silent, log: ListenerLog(logger: .silent), clock: SystemClock())
    }
}

extension DeviceLinkHandler {
    /// A link handler of `service` on a connected test channel, with `below` between it and the
    /// channel's head, and the first frame it wrote (the challenge).
    static func onTestChannel(
        _ service: DeviceLinkService, below: [any ChannelHandler] = []
    ) async throws -> (channel: EmbeddedChannel, handler: DeviceLinkHandler, challenge: WebSocketFrame?) {
        let channel = EmbeddedChannel()
        for handler in below { try channel.pipeline.syncOperations.addHandler(handler) }
        let handler = DeviceLinkHandler(service: service)
        try channel.pipeline.syncOperations.addHandler(handler)
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        return (channel, handler, try channel.readOutbound(as: WebSocketFrame.self))
    }
}

extension Fixture {
    /// A provider's push through the provider API's logic and `router`, as the transport would
    /// carry it out; returns the answer once the router gives it.
    func push(
        through router: PushRouter, token: DeviceToken, topic: String = Fixture.bundle,
        body: String = #"{"aps":{"alert":"hi"}}"#, headers: [(String, String)] = []
    ) async -> ProviderResponse {
        var connection = ProviderConnectionState(defaultEnvironment: .development)
        let request = self.request(token: token.hex, topic: topic, body: body, headers: headers)
        switch api.handle(request, connection: &connection, now: Date()) {
        case .respond(let response, _):
            return response
        case .accept(let push, _):
            return await withCheckedContinuation { continuation in
                router.route(push) { continuation.resume(returning: $0) }
            }
        case .perform(let work):
            return await work()
        }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Waits for something that happens where the test has nothing to await: in another process (the
/// PostgreSQL server's notifications reaching a follower), behind a real socket whose far side
/// the test does not drive, or in a task of the code under test that ends on the cooperative pool
/// and hops to an event loop with no signal of its own (a device link's late `hello` check). Polls every few milliseconds and fails after a generous deadline; each
/// caller says why it polls. No test uses it to let time pass: timing is tested in virtual time.
func waitUntil(
    _ what: String, within limit: Duration = .seconds(10), _ condition: () async throws -> Bool
) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now + limit
    while try await !condition() {
        guard clock.now < deadline else { throw TestFailure("timed out waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(5))  // polls another process or socket, within the deadline
    }
}
