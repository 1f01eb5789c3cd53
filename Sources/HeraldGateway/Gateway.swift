import Foundation
import HeraldCore
import HeraldRuntime
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle

/// The push service: provider API listeners (TLS and development), the admin API, the
/// directory, the router and the store, started from one state directory.
public final class Gateway: Sendable {
    /// The admin API's event loop, one per process and never shut down. Hummingbird ends its server
    /// from an unstructured task (its graceful-shutdown handler), which can still resolve a promise
    /// on the server's loop after `run` has returned; on a group the gateway shuts down as it stops,
    /// that reached a loop already gone (swift-nio: "Cannot schedule tasks on an EventLoop that has
    /// already shut down", a crash in its strict mode).
    static let adminGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)

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
    /// Held from `open` for the gateway's life: one process per state directory.
    let lock: StateDirectoryLock
    /// Where every date comes from (a push's arrival and expiry, the delivery log, certificates).
    public let clock: any WallClock
    let stopper = ServiceRunner.Stopper()
    /// Closes the store's connections once the gateway has stopped (PostgreSQL's pool).
    let closeStore: @Sendable () -> Void
    /// With PostgreSQL: what keeps this node in step with the others (the directory as they change
    /// it; the pushes they store for devices held here; the fault rules) and this node's presence.
    let followers: [any Service]
    /// With PostgreSQL: this node's row and its devices' claims in the shared database.
    public let presence: NodePresence?
    /// With PostgreSQL: what sends a push for a device linked to another node there.
    let forwarder: ClusterForwarder?
    /// The broadcast channels' subscribers here, and the fan-out of what is broadcast on them.
    public let broadcasts: BroadcastHub
    /// Whether it takes work: `/readyz`.
    public let readiness = GatewayReadiness()

    private init(
        configuration: Configuration, state: GatewayStateDirectory, directory: GatewayDirectory, api: ProviderAPI,
        router: PushRouter, faults: FaultInjector, ca: GatewayCA, adminToken: String, logger: Logger,
        lock: StateDirectoryLock, clock: any WallClock, closeStore: @escaping @Sendable () -> Void,
        followers: [any Service], presence: NodePresence?, forwarder: ClusterForwarder?, broadcasts: BroadcastHub
    ) {
        self.broadcasts = broadcasts
        self.forwarder = forwarder
        self.closeStore = closeStore
        self.followers = followers
        self.presence = presence
        self.lock = lock
        self.clock = clock
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

    /// Locks the state directory (``StateDirectoryLock``: another process using it is refused with
    /// ``StateDirectoryLock/Locked``, and nothing in it is touched), opens it (creating the CA,
    /// certificate, admin token and database on first start) and loads the directory.
    /// `clock` is where every date comes from (the system's clock unless a test says otherwise).
    public static func open(
        _ configuration: Configuration, clock: any WallClock = SystemClock(), logger: Logger = .silent
    ) async throws -> Gateway {
        let lock = try StateDirectoryLock(
            directory: URL(fileURLWithPath: configuration.stateDirectory, isDirectory: true), role: "herald gateway")
        let state = try GatewayStateDirectory(path: configuration.stateDirectory)
        let opened = try await OpenedStore.open(
            database: configuration.database, state: state, durability: configuration.durability, logger: logger)
        let (store, postgres, close) = (opened.store, opened.shared, opened.close)
        let ca = try state.certificateAuthority()
        // Listening before the directory is read: its follower then need not read it all again.
        let primer = await DirectoryFollower.primer(store: postgres, logger: logger)
        let directory = try await GatewayDirectory.open(
            store: store, issuer: TokenIssuer(secret: try state.tokenSecret()))
        let faults = FaultInjector(shared: postgres)
        let presence: NodePresence?
        if let postgres {
            do {
                presence = try await NodePresence.register(
                    id: try state.nodeID(), store: postgres, clock: clock, logger: logger)
            } catch {
                close()
                throw error
            }
        } else {
            presence = nil
        }
        // A cluster's nodes forward pushes to each other with a credential only they hold.
        let credential = postgres == nil ? nil : ClusterForwarding.Credential(tokenSecret: try state.tokenSecret())
        var holders: DeviceHolders?
        var forwarder: ClusterForwarder?
        if let postgres, let presence, let credential {
            let known = DeviceHolders(store: postgres, me: presence.id, clock: clock)
            holders = known
            forwarder = ClusterForwarder(
                holders: known, credential: credential, caPEM: try ca.certificatePEM,
                // The holder answers once the device acknowledged or the push is stored.
                timeout: TimeAmount(configuration.link.acknowledgementTimeout + .seconds(5)), logger: logger)
        }
        let broadcasts = BroadcastHub(store: store, logger: logger)
        let api = ProviderAPI(
            registry: directory.registry, faults: faults, configuration: configuration.provider, cluster: credential
        ).broadcasting(through: broadcasts, logger: logger)
        let metrics = GatewayMetrics()
        let router = PushRouter(
            committer: GroupCommitter(
                store: store, policy: configuration.offline, logBatch: 4096, limits: configuration.storeQueue,
                committed: { batch in if !batch.counts.isEmpty { metrics.deliveryStates(batch.counts) } },
                overload: { [logger, limits = configuration.storeQueue] overload in
                    Self.log(overload, limits: limits, logger: logger)
                }),
            links: DeviceLinks(presence: presence),
            metrics: metrics, forwarder: forwarder, testAPI: configuration.testAPI, logger: logger)
        if postgres == nil {
            // The only writer of its store (the state directory is locked): what is stored now and
            // what the committer writes from here on is all there is. A cluster's follower loads it
            // once it listens to the other nodes.
            do {
                router.offline.committer.storedDevices.load(try await store.storedCountsByDevice().keys)
            } catch {
                close()
                throw error
            }
        }
        let followers =
            postgres.map {
                clusterFollowers(
                    store: $0, directory: directory, primer: primer, router: router, faults: faults,
                    broadcasts: broadcasts, holders: holders, presence: presence, clock: clock, logger: logger)
            } ?? []
        return Gateway(
            configuration: configuration, state: state, directory: directory, api: api, router: router, faults: faults,
            ca: ca, adminToken: try state.adminToken(), logger: logger, lock: lock, clock: clock, closeStore: close,
            followers: followers, presence: presence, forwarder: forwarder, broadcasts: broadcasts)
    }

    /// A state directory that belongs to another push service than the database's cluster.
    public typealias ClusterMismatch = HeraldGateway.ClusterMismatch

    /// Runs every listener and the store's periodic work as one `ServiceGroup` until SIGINT/SIGTERM
    /// (then stops gracefully, in order) or the task's cancellation (then everything stops at once).
    public func run(onReady: @Sendable ([String: String]) -> Void = { _ in }) async throws {
        defer { closeStore() }
        let identity = try state.serverIdentity(ca: ca, hosts: configuration.certificateHosts)
        let tls = try GatewayStateDirectory.tlsContext(
            certificatePEM: identity.certificatePEM, keyPEM: identity.keyPEM, ca: ca)
        let address = configuration.listenAddress
        let logger = self.logger
        let metrics = router.metrics
        let log = ListenerLog(logger: logger) { metrics.connectionRefused(listener: $0) }
        let firstBytes = TimeAmount(configuration.firstBytesTimeout)
        let clock = self.clock
        let capture = try configuration.capturePath.map { try ProviderCapture(path: $0, logger: logger) }
        defer { capture?.close() }
        let inherited = configuration.inheritedSockets
        try inherited.check()
        for (name, descriptor) in inherited.all {
            logger.info(
                "serving a socket handed over", metadata: ["listener": "\(name)", "descriptor": "\(descriptor)"])
        }
        let provider = try await Self.listening(
            "provider API", address, configuration.port, sockets: inherited["provider"]
        ) {
            try await ProviderServer.start(
                host: address, port: configuration.port, sockets: inherited["provider"], transport: .tls(tls, ca: ca),
                api: api, router: router, environment: configuration.environment, group: group, logger: logger,
                firstBytes: firstBytes, log: log, clock: clock, capture: capture,
                maxConnectionsPerAddress: configuration.maxConnectionsPerAddress)
        }
        var development: ProviderServer?
        if let port = configuration.developmentPort ?? (inherited["development"].isEmpty ? nil : 0) {
            development = try await Self.listening(
                "development listener", "127.0.0.1", port, sockets: inherited["development"]
            ) {
                try await ProviderServer.start(
                    host: "127.0.0.1", port: port, sockets: inherited["development"], transport: .cleartext, api: api,
                    router: router, environment: configuration.environment, group: group, logger: logger,
                    firstBytes: firstBytes, log: log, clock: clock, capture: capture)
            }
        }
        // The channel management API: the provider API's transports, its own listeners.
        let channelsAPI = api.managingChannels(store: broadcasts.store)
        var channels: [ProviderServer] = []
        for (port, secure) in [(configuration.channelsPort, true), (configuration.channelsDevelopmentPort, false)] {
            let sockets = inherited[secure ? "channels" : "channels-development"]
            guard let port = port ?? (sockets.isEmpty ? nil : 0) else { continue }
            let host = secure ? address : "127.0.0.1"
            channels.append(
                try await Self.listening(
                    secure ? "channel management API" : "channel management development listener", host, port,
                    sockets: sockets
                ) {
                    try await ProviderServer.start(
                        host: host, port: port, sockets: sockets, transport: secure ? .tls(tls, ca: ca) : .cleartext,
                        api: channelsAPI, router: router, environment: configuration.environment, group: group,
                        logger: logger, firstBytes: firstBytes, log: log, clock: clock,
                        // The development listener serves loopback only: every client there shares
                        // one address.
                        maxConnectionsPerAddress: secure ? configuration.maxConnectionsPerAddress : 0)
                })
        }
        let linkTLS = try GatewayStateDirectory.tlsContext(
            certificatePEM: identity.certificatePEM, keyPEM: identity.keyPEM, ca: ca, deviceLink: true)
        let link = try await Self.listening("device link", address, configuration.linkPort, sockets: inherited["link"])
        {
            try await DeviceLinkServer.start(
                host: address, port: configuration.linkPort, sockets: inherited["link"], tls: linkTLS,
                directory: directory, links: router.links, offline: router.offline, configuration: configuration.link,
                group: linkGroup, logger: logger, log: log, clock: clock, broadcasts: broadcasts)
        }
        let legacyTLS = try GatewayStateDirectory.legacyTLSContext(
            certificatePEM: identity.certificatePEM, keyPEM: identity.keyPEM, ca: ca)
        var legacy: [LegacyServer] = []
        for (service, port) in [
            (LegacyServer.Service.binary, configuration.binaryPort), (.feedback, configuration.feedbackPort),
        ] {
            let sockets = inherited[service == .binary ? "binary" : "feedback"]
            guard let port = port ?? (sockets.isEmpty ? nil : 0) else { continue }
            legacy.append(
                try await Self.listening(service.rawValue, address, port, sockets: sockets) {
                    try await LegacyServer.start(
                        service, host: address, port: port, sockets: sockets, tls: legacyTLS, ca: ca, api: api,
                        router: router, directory: directory, environment: configuration.environment, group: group,
                        logger: logger,
                        timeouts: ListenerTimeouts(
                            firstBytes: configuration.firstBytesTimeout, idle: configuration.provider.idleTimeout),
                        log: log, clock: clock, maxConnectionsPerAddress: configuration.maxConnectionsPerAddress)
                })
        }
        // Off loopback the admin API is served over TLS (the gateway's certificate, ALPN http/1.1
        // only, as for the device link), never in the clear.
        let adminTLS = configuration.listensOnLoopbackOnly ? nil : linkTLS
        let console = Console(
            session: ConsoleSession(adminToken: adminToken),
            sender: ConsoleSender(
                targets: .init(
                    host: Self.connectHost(address), tlsPort: provider.localAddress?.port ?? configuration.port,
                    developmentPort: development?.localAddress?.port),
                ca: ca, group: group),
            directory: directory, router: router, clock: clock, secure: adminTLS != nil,
            caCertificatePath: state.caCertificatePath, logRetention: configuration.logRetention.timeInterval)
        let admin = AdminAPI(
            directory: directory, router: router, faults: faults, ca: ca, token: adminToken, clock: clock,
            console: console, readiness: readiness, testAPI: configuration.testAPI)
        let adminReady = ServiceRunner.Readiness()
        let app = Application(
            router: admin.router(),
            server: .guardedHTTP1(
                listener: "admin API",
                timeouts: ListenerTimeouts(
                    firstBytes: configuration.firstBytesTimeout, idle: configuration.adminIdleTimeout),
                tls: adminTLS, log: log),
            configuration: .init(address: .hostname(address, port: configuration.adminPort), serverName: "herald"),
            onServerRunning: { adminReady.listening(on: $0.localAddress?.port ?? 0) },
            eventLoopGroupProvider: .shared(Self.adminGroup), logger: logger)

        let offline = router.offline
        let retention = configuration.logRetention.timeInterval
        // Stopped in reverse order on SIGINT/SIGTERM: readiness turns to stopping, the admin API, then
        // GOAWAY to providers and the streams in flight finished, the legacy listeners, the device
        // links; then what is still lingering in the delivery log goes to disk.
        var services: [any Service] = [
            // Log lines of delivered pushes linger in groups of up to 4096; at most 100 ms.
            PeriodicService(every: .milliseconds(100), { offline.committer.flushLog() }) {
                _ = try? await offline.committer.commit(StoreBatch())
            },
            // Expired pushes leave the offline store once a minute (and are logged as discarded).
            PeriodicService(every: .seconds(60)) {
                do {
                    try await offline.purgeExpired(now: clock.now())
                } catch {
                    logger.error("purging expired pushes failed", metadata: ["error": "\(error)"])
                }
            },
            // The delivery log keeps each push for `logRetention`: checked hourly.
            PeriodicService(every: .seconds(3600)) {
                do {
                    let now = clock.now()
                    let deleted = try await offline.committer.store.purgeDeliveryLog(
                        now: now, before: now.addingTimeInterval(-retention))
                    if deleted > 0 { logger.info("purged the delivery log", metadata: ["rows": "\(deleted)"]) }
                } catch {
                    logger.error("purging the delivery log failed", metadata: ["error": "\(error)"])
                }
            },
            link,
        ]
        services.insert(contentsOf: followers, at: 0)
        services += legacy as [any Service]
        if let development { services.append(development) }
        services += channels as [any Service]
        services += [provider, app, ReadinessService(readiness: readiness)] as [any Service]
        try forwarder?.start(group: group)
        do {
            try await runServices(
                services, provider: provider, development: development, channels: channels, link: link,
                legacy: legacy, adminTLS: adminTLS, adminReady: adminReady, onReady: onReady)
        } catch {
            await forwarder?.shutdown()
            throw error
        }
        await forwarder?.shutdown()
        try await group.shutdownGracefully()
        try await linkGroup.shutdownGracefully()
    }

    private func runServices(
        _ services: [any Service], provider: ProviderServer, development: ProviderServer?, channels: [ProviderServer],
        link: DeviceLinkServer,
        legacy: [LegacyServer], adminTLS: NIOSSLContext?, adminReady: ServiceRunner.Readiness,
        onReady: @Sendable ([String: String]) -> Void
    ) async throws {
        let address = configuration.listenAddress
        let state = self.state
        let presence = self.presence
        let adminToken = self.adminToken
        let logger = self.logger
        let readiness = self.readiness
        let clusterHost = Self.urlHost(configuration.clusterAddress ?? address)
        try await ServiceRunner.run(
            services, signals: true, logger: logger, listening: adminReady, listener: "admin API",
            address: "\(address):\(configuration.adminPort)", stopper: stopper
        ) { bound in
            let linkPort = link.localAddress?.port ?? 0
            var info = GatewayInfo(
                providerURL: "https://localhost:\(provider.localAddress?.port ?? 0)",
                linkURL: "wss://localhost:\(linkPort)\(DeviceLink.path)",
                linkDevelopmentURL: "ws://127.0.0.1:\(linkPort)\(DeviceLink.path)",
                adminURL: "\(adminTLS == nil ? "http" : "https")://\(Self.urlHost(address)):\(bound)",
                adminToken: adminToken, caCertificate: state.caCertificatePath,
                pid: String(ProcessInfo.processInfo.processIdentifier))
            for server in legacy {
                let address = "localhost:\(server.localAddress?.port ?? 0)"
                if server.service == .binary { info.binaryAddress = address } else { info.feedbackAddress = address }
            }
            if let development { info.developmentURL = "http://127.0.0.1:\(development.localAddress?.port ?? 0)" }
            for server in channels {
                let port = server.localAddress?.port ?? 0
                if server.isCleartext {
                    info.channelsDevelopmentURL = "http://127.0.0.1:\(port)"
                } else {
                    info.channelsURL = "https://localhost:\(port)"
                }
            }
            if let presence {
                info.nodeID = presence.id
                // Where the other nodes forward pushes for devices linked here: the TLS provider API.
                let clusterURL = "https://\(clusterHost):\(provider.localAddress?.port ?? 0)"
                info.clusterURL = clusterURL
                presence.setAddress(clusterURL)
            }
            try state.writeRuntime(info)
            readiness.set(.ready)
            let fields = info.fields
            logger.info("gateway ready", metadata: fields.filter { $0.key != "adminToken" }.mapValues { .string($0) })
            onReady(fields)
        }
    }

    /// Stops a running gateway gracefully, as SIGTERM does: ``run(onReady:)`` returns once it is done.
    public func shutdown() async {
        await stopper.stop()
    }
}

extension Gateway {
    /// Logs a stretch of time over the store queue's limits: its beginning at warning, its end,
    /// with what it refused and dropped, at notice.
    static func log(
        _ overload: GroupCommitter.Overload, limits: GroupCommitter.Limits, logger: Logger
    ) {
        switch overload {
        case .began:
            logger.warning(
                """
                the store is behind: while its queue is full, pushes that must be stored are answered 503 and log \
                lines nobody waits for are dropped
                """,
                metadata: [
                    "limit-requests": "\(limits.requests)", "limit-bytes": "\(limits.bytes)",
                    "limit-log-lines": "\(limits.logLines)",
                ])
        case .ended(let refused, let dropped):
            logger.notice(
                "the store caught up: its queue is back to half of every limit",
                metadata: ["refused": "\(refused)", "log-lines-dropped": "\(dropped)"])
        }
    }
}
