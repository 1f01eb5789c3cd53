import Foundation
import HeraldCore
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// The push service: provider API listeners (TLS and development), the admin API, the
/// directory, the router and the store, started from one state directory.
public final class Gateway: Sendable {
    /// Where and how the gateway listens.
    public struct Configuration: Sendable {
        /// The state directory (`--state`).
        public var stateDirectory: String = ".herald/gateway"
        /// Address of the TLS provider API.
        public var host: String = "0.0.0.0"
        /// Port of the TLS provider API (2197; 0 picks a free port).
        public var port: Int = 2197
        /// Port of the cleartext development listener on loopback (2198; 0 picks a free port; `nil` = off).
        public var developmentPort: Int? = 2198
        /// Port of the admin API on loopback (8080; 0 picks a free port).
        public var adminPort: Int = 8080
        /// Address of the admin API.
        public var adminHost: String = "127.0.0.1"
        /// Address of the device link.
        public var linkHost: String = "0.0.0.0"
        /// Port of the device link (5223; 0 picks a free port): TLS, and cleartext from loopback.
        public var linkPort: Int = 5223
        /// Port of the legacy binary provider interface (2195; 0 picks a free port; `nil` = off),
        /// on `host`, TLS with a client certificate.
        public var binaryPort: Int? = 2195
        /// Port of the feedback service (2196; 0 picks a free port; `nil` = off), on `host`.
        public var feedbackPort: Int? = 2196
        /// Acknowledgement timeout, batching window and background budget of the device link.
        public var link = DeviceLinkServer.Configuration()
        /// The environment requests address when their authority names none.
        public var environment: APNsEnvironment = .development
        /// Names and addresses the TLS certificate is issued for (on first start).
        public var certificateHosts: [String] = ["localhost", "127.0.0.1", "::1"]
        /// The provider API's settings (per-token rate).
        public var provider = ProviderAPI.Configuration()
        /// How many pushes to keep per (device, topic) while offline.
        public var offline = OfflinePolicy()
        /// SQLite durability.
        public var durability: SQLiteGatewayStore.Durability = .full
        /// Event-loop threads for provider connections (both provider listeners, the legacy
        /// interface and the admin API): one per core by default.
        public var providerThreads: Int = System.coreCount
        /// Event-loop threads for device links, apart from the provider threads: half as many as
        /// cores (at least one) by default. A push is read on its provider connection's loop and
        /// written on its device's loop; with separate loops neither kind of work queues behind
        /// the other, and the link's smaller share (a frame out, an acknowledgement in) gets
        /// fewer threads.
        public var linkThreads: Int = max(1, System.coreCount / 2)

        /// The defaults.
        public init() {}
    }

    /// The configuration it runs with.
    public let configuration: Configuration
    /// The state directory.
    public let state: GatewayStateDirectory
    /// The directory.
    public let directory: GatewayDirectory
    /// The provider API's logic.
    public let api: ProviderAPI
    /// The router.
    public let router: PushRouter
    /// The fault rules.
    public let faults: FaultInjector
    /// The CA.
    public let ca: GatewayCA
    /// The admin token.
    public let adminToken: String
    let logger: Logger
    /// Provider connections, the legacy interface and the admin API.
    let group: MultiThreadedEventLoopGroup
    /// Device links.
    let linkGroup: MultiThreadedEventLoopGroup

    private init(
        configuration: Configuration, state: GatewayStateDirectory, directory: GatewayDirectory, api: ProviderAPI,
        router: PushRouter, faults: FaultInjector, ca: GatewayCA, adminToken: String, logger: Logger
    ) {
        self.configuration = configuration
        self.state = state
        self.directory = directory
        self.api = api
        self.router = router
        self.faults = faults
        self.ca = ca
        self.adminToken = adminToken
        self.logger = logger
        self.group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, configuration.providerThreads))
        self.linkGroup = MultiThreadedEventLoopGroup(numberOfThreads: max(1, configuration.linkThreads))
    }

    /// Opens the state directory (creating the CA, certificate, admin token and database on first
    /// start) and loads the directory.
    public static func open(_ configuration: Configuration, logger: Logger) async throws -> Gateway {
        let state = try GatewayStateDirectory(path: configuration.stateDirectory)
        let ca = try state.certificateAuthority()
        let store = try SQLiteGatewayStore(path: state.databasePath, durability: configuration.durability)
        let directory = try await GatewayDirectory.open(
            store: store, issuer: TokenIssuer(secret: try state.tokenSecret()))
        let faults = FaultInjector()
        let api = ProviderAPI(registry: directory.registry, faults: faults, configuration: configuration.provider)
        let router = PushRouter(
            committer: GroupCommitter(store: store, policy: configuration.offline, logBatch: 4096),
            links: DeviceLinks(),
            metrics: GatewayMetrics(), logger: logger)
        return Gateway(
            configuration: configuration, state: state, directory: directory, api: api, router: router, faults: faults,
            ca: ca, adminToken: try state.adminToken(), logger: logger)
    }

    /// Runs until `shutdown` is signalled (SIGINT/SIGTERM through swift-service-lifecycle or the
    /// returned task's cancellation), then stops gracefully.
    public func run(onReady: @Sendable ([String: String]) -> Void = { _ in }) async throws {
        let identity = try state.serverIdentity(ca: ca, hosts: configuration.certificateHosts)
        let tls = try GatewayStateDirectory.tlsContext(
            certificatePEM: identity.certificatePEM, keyPEM: identity.keyPEM, ca: ca)
        let provider = try await Self.listening("provider API", configuration.host, configuration.port) {
            try await ProviderServer.start(
                host: configuration.host, port: configuration.port, transport: .tls(tls, ca: ca), api: api,
                router: router, environment: configuration.environment, group: group, logger: logger)
        }
        var development: ProviderServer?
        if let port = configuration.developmentPort {
            development = try await Self.listening("development listener", "127.0.0.1", port) {
                try await ProviderServer.start(
                    host: "127.0.0.1", port: port, transport: .cleartext, api: api, router: router,
                    environment: configuration.environment, group: group, logger: logger)
            }
        }
        let linkTLS = try GatewayStateDirectory.tlsContext(
            certificatePEM: identity.certificatePEM, keyPEM: identity.keyPEM, ca: ca, deviceLink: true)
        let link = try await Self.listening("device link", configuration.linkHost, configuration.linkPort) {
            try await DeviceLinkServer.start(
                host: configuration.linkHost, port: configuration.linkPort, tls: linkTLS, directory: directory,
                router: router, configuration: configuration.link, group: linkGroup, logger: logger)
        }
        let legacyTLS = try GatewayStateDirectory.legacyTLSContext(
            certificatePEM: identity.certificatePEM, keyPEM: identity.keyPEM, ca: ca)
        var legacy: [LegacyServer] = []
        for (service, port) in [
            (LegacyServer.Service.binary, configuration.binaryPort), (.feedback, configuration.feedbackPort),
        ] {
            guard let port else { continue }
            legacy.append(
                try await Self.listening(service.rawValue, configuration.host, port) {
                    try await LegacyServer.start(
                        service, host: configuration.host, port: port, tls: legacyTLS, ca: ca, api: api, router: router,
                        directory: directory, environment: configuration.environment, group: group, logger: logger)
                })
        }
        let admin = AdminAPI(directory: directory, router: router, faults: faults, ca: ca, token: adminToken)
        let (adminPort, adminReady) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: admin.router(),
            configuration: .init(
                address: .hostname(configuration.adminHost, port: configuration.adminPort), serverName: "herald"),
            onServerRunning: { channel in
                adminReady.yield(channel.localAddress?.port ?? 0)
                adminReady.finish()
            },
            eventLoopGroupProvider: .shared(group), logger: logger)

        let gateway = self
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                // If the admin API cannot start, end the port stream so the wait below ends too.
                defer { adminReady.finish() }
                let serviceGroup = ServiceGroup(
                    configuration: .init(
                        services: [.init(service: app)], gracefulShutdownSignals: [.sigterm, .sigint],
                        logger: gateway.logger))
                try await serviceGroup.run()
            }
            tasks.addTask {
                // Expired pushes leave the offline store once a minute (and are logged as discarded).
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(60))
                    if Task.isCancelled { break }
                    do {
                        try await gateway.router.purgeExpired(now: Date())
                    } catch {
                        gateway.logger.error("purging expired pushes failed", metadata: ["error": "\(error)"])
                    }
                }
            }
            tasks.addTask {
                // Log lines of delivered pushes linger in groups of up to 4096; at most 100 ms.
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(100))
                    gateway.router.committer.flushLog()
                }
            }
            var adminBound: Int?
            for await port in adminPort { adminBound = port }
            guard let bound = adminBound else {
                var reason = "it stopped before it was listening"
                do { try await tasks.next() } catch { reason = "\(error)" }
                throw GatewayStartError(
                    listener: "admin API", address: "\(configuration.adminHost):\(configuration.adminPort)",
                    reason: reason)
            }
            var info: [String: String] = [
                "providerURL": "https://localhost:\(provider.localAddress?.port ?? 0)",
                "adminURL": "http://\(configuration.adminHost):\(bound)",
                "adminToken": adminToken,
                "caCertificate": state.caCertificatePath,
                "pid": String(ProcessInfo.processInfo.processIdentifier),
            ]
            let linkPort = link.localAddress?.port ?? 0
            info["linkURL"] = "wss://localhost:\(linkPort)\(DeviceLink.path)"
            info["linkDevelopmentURL"] = "ws://127.0.0.1:\(linkPort)\(DeviceLink.path)"
            for server in legacy {
                let key = server.service == .binary ? "binaryAddress" : "feedbackAddress"
                info[key] = "localhost:\(server.localAddress?.port ?? 0)"
            }
            if let development { info["developmentURL"] = "http://127.0.0.1:\(development.localAddress?.port ?? 0)" }
            try state.writeRuntime(info)
            logger.info("gateway ready", metadata: info.filter { $0.key != "adminToken" }.mapValues { .string($0) })
            onReady(info)
            // The service group ends on SIGINT/SIGTERM after stopping the admin API.
            try await tasks.next()
            logger.info("stopping: GOAWAY to providers, finishing streams in flight")
            await provider.shutdown()
            await development?.shutdown()
            for server in legacy { await server.shutdown() }
            await link.shutdown()
            // What is still lingering in the delivery log goes to disk before the process ends.
            _ = try? await router.committer.commit(StoreBatch())
            tasks.cancelAll()
        }
        try await group.shutdownGracefully()
        try await linkGroup.shutdownGracefully()
    }

    static func listening<T>(_ listener: String, _ host: String, _ port: Int, _ start: () async throws -> T)
        async throws -> T
    {
        do {
            return try await start()
        } catch {
            throw GatewayStartError(listener: listener, address: "\(host):\(port)", reason: "\(error)")
        }
    }
}

/// A listener could not start (most often: the port is in use).
public struct GatewayStartError: Error, CustomStringConvertible {
    /// Which listener.
    public var listener: String
    /// The address it tried.
    public var address: String
    /// The underlying error.
    public var reason: String
    /// One line naming all three.
    public var description: String { "\(listener) could not listen on \(address): \(reason)" }
}
