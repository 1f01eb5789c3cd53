import Foundation
import HeraldCore
import HeraldGateway
import HeraldProvider
import HeraldRuntime
import Logging

/// A Herald push service in this process, for tests: every listener on a free loopback port, its
/// state in a temporary directory, a team with a signing key, and the apps you name. Providers under
/// test talk to it as they would to Apple; devices from ``device(_:apps:)`` receive what they send.
///
/// ```swift
/// let herald = try await TestGateway.start(apps: ["com.example.app"])
/// let phone = try await herald.device("phone")
/// let client = try herald.providerClient()
/// _ = try await client.send(APNsNotification(payload: Data(#"{"aps":{"alert":"Hi"}}"#.utf8),
///     topic: "com.example.app"), to: try await phone.token(for: "com.example.app"))
/// #expect(try await phone.nextPresentation()?.title == "Hi")
/// ```
public final class TestGateway: Sendable {
    /// The team that owns the apps.
    public static let teamID = "TESTTEAM01"
    /// The team's signing key's id.
    public static let keyID = "TESTKEY001"

    /// The gateway itself: its directory, router and configuration.
    public let gateway: Gateway
    /// What the gateway wrote to `gateway.json`: `providerURL`, `developmentURL`, `adminURL`,
    /// `adminToken`, `linkDevelopmentURL`, `caCertificate`, …
    public let info: [String: String]
    /// The team's key, to sign provider tokens (JWT) with.
    public let signingKey: APNsSigningKey
    /// The key as a `.p8` file's text, for clients that read one.
    public let p8: String
    /// The clock the gateway reads its dates from.
    public let clock: any WallClock
    let task: Task<Void, any Error>
    let directory: URL

    private init(
        gateway: Gateway, info: [String: String], signingKey: APNsSigningKey, p8: String, clock: any WallClock,
        task: Task<Void, any Error>, directory: URL
    ) {
        self.gateway = gateway
        self.info = info
        self.signingKey = signingKey
        self.p8 = p8
        self.clock = clock
        self.task = task
        self.directory = directory
    }

    /// Starts a gateway with the team ``teamID``, its key ``keyID`` and `apps` (bundle ids); the
    /// legacy binary interface and feedback service are on when `legacy` says so.
    public static func start(
        apps: [String], legacy: Bool = false, clock: any WallClock = SystemClock(), logLevel: Logger.Level = .warning
    ) async throws -> TestGateway {
        let directory = TestDevice.shortTemporaryDirectory
            .appendingPathComponent("herald-testing-\(UUID().uuidString.prefix(8))", isDirectory: true)
        var configuration = Gateway.Configuration()
        configuration.stateDirectory = directory.appendingPathComponent("gateway").path
        configuration.port = 0
        configuration.developmentPort = 0
        configuration.adminPort = 0
        configuration.linkPort = 0
        configuration.binaryPort = legacy ? 0 : nil
        configuration.feedbackPort = legacy ? 0 : nil
        configuration.channelsPort = 0
        configuration.testAPI = true
        configuration.channelsDevelopmentPort = 0
        configuration.providerThreads = 1
        configuration.linkThreads = 1
        var logger = Logger(label: "herald.testing.gateway")
        logger.logLevel = logLevel
        let gateway = try await Gateway.open(configuration, clock: clock, logger: logger)
        _ = try await gateway.directory.putTeam(id: teamID)
        let (_, p8) = try await gateway.directory.generateKey(teamID: teamID, id: keyID)
        for app in apps { _ = try await gateway.directory.putApp(bundleID: app, teamID: teamID) }
        let (ready, readySink) = AsyncStream.makeStream(of: [String: String].self)
        let task = Task {
            defer { readySink.finish() }
            try await gateway.run { readySink.yield($0) }
        }
        var info: [String: String]?
        for await ready in ready {
            info = ready
            break
        }
        guard let info else {
            // It stopped before it was listening: its error says why.
            try await task.value
            throw TestingError("the gateway stopped before it was listening")
        }
        return TestGateway(
            gateway: gateway, info: info, signingKey: try APNsSigningKey(p8: p8, keyID: keyID, teamID: teamID),
            p8: p8, clock: clock, task: task, directory: directory)
    }

    /// The provider API over TLS (HTTP/2 with ALPN): `https://localhost:<port>`.
    public var providerURL: String { info["providerURL"] ?? "" }
    /// The provider API in cleartext on loopback (h2c with prior knowledge, or HTTP/1.1).
    public var developmentURL: String { info["developmentURL"] ?? "" }
    /// The PEM of the CA that signed the provider API's certificate: what a client must trust.
    public var caCertificatePEM: String {
        get throws { try String(contentsOfFile: info["caCertificate"] ?? "", encoding: .utf8) }
    }

    /// A provider token (JWT) for the team's key, issued now.
    public func providerToken() throws -> String { try signingKey.token(issuedAt: clock.now()) }

    /// A HeraldProvider client for this gateway's TLS provider API with the team's key. Shut it down
    /// (`shutdown()`) when done.
    public func providerClient(retry: APNsRetryPolicy = APNsRetryPolicy(maximumAttempts: 1)) throws -> APNsClient {
        try APNsClient(
            configuration: .init(
                server: APNsServer(url: providerURL), authentication: .token(signingKey),
                trustedCAPEM: try caCertificatePEM, timeout: .seconds(30), retry: retry))
    }

    /// A device token for `app` on a device that never connects: what a test of a provider alone
    /// needs. Pushes to it are answered as for any offline device (stored, 200).
    public func token(for app: String, device: String = "offline-device") async throws -> String {
        if gateway.directory.registry.device(device) == nil {
            _ = try await gateway.directory.registerDevice(id: device, now: clock.now())
        }
        return try await gateway.directory.registerApp(
            device: device, bundleID: app, environment: .development, now: clock.now()
        ).token.hex
    }

    /// Tokens for `app` on `count` devices that never connect (`bulk-0`, `bulk-1`, …, or with another
    /// `prefix`), registered at once: what a test of a bulk send needs.
    public func tokens(for app: String, devices count: Int, prefix: String = "bulk") async throws -> [String] {
        try await gateway.directory.registerDevices(
            (0..<count).map { "\(prefix)-\($0)" }, app: app, environment: .development, now: clock.now()
        ).map(\.token.hex)
    }

    /// A device in this process, linked to the gateway, with `apps` installed (by default every
    /// app of the gateway) and registered for remote notifications.
    public func device(_ name: String = "device", apps: [String]? = nil) async throws -> TestDevice {
        let bundles: [String]
        if let apps {
            bundles = apps
        } else {
            bundles = gateway.directory.registry.apps.map(\.bundleID).sorted()
        }
        guard let link = info["linkDevelopmentURL"] else { throw TestingError("the gateway has no device link") }
        return try await TestDevice.start(
            name: name, gatewayURL: link, apps: bundles,
            stateDirectory: directory.appendingPathComponent("device-\(name)-\(UUID().uuidString.prefix(4))"))
    }

    /// Stops the gateway (gracefully, as SIGTERM would) and removes its state.
    public func stop() async {
        await gateway.shutdown()
        _ = await task.result
        try? FileManager.default.removeItem(at: directory)
    }
}
