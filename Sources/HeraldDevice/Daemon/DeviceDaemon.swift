import Foundation
import HeraldCore
import HeraldRuntime
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// `herald device`: the service, its app link, its device API and its link to the push service,
/// run together until SIGINT or SIGTERM (or cancellation), then stopped in order.
public struct DeviceDaemon: Sendable {
    /// The service it runs.
    public let service: DeviceService
    /// Address of the device API.
    public var apiHost = "127.0.0.1"
    /// Port of the device API (8081; 0 = any free port).
    public var apiPort = 8081
    /// The device API's deadlines: a connection's first request within 10 s, and at most a minute
    /// idle between requests.
    public var apiTimeouts = ListenerTimeouts(idle: .seconds(60))
    let logger: Logger

    /// Creates the daemon over a service.
    public init(service: DeviceService, apiHost: String = "127.0.0.1", apiPort: Int = 8081, logger: Logger) {
        self.service = service
        self.apiHost = apiHost
        self.apiPort = apiPort
        self.logger = logger
    }

    /// Runs until a signal or cancellation. `onReady` gets what `device.json` holds once everything
    /// listens: `apiURL`, `appLink`, `deviceID` (when known), `pid`.
    public func run(signals: Bool = true, onReady: @Sendable ([String: String]) -> Void = { _ in }) async throws {
        let configuration = service.configuration
        let appLink: AppLinkServer
        do {
            appLink = try await AppLinkServer.bind(path: configuration.appLinkPath)
        } catch {
            throw ListenerStartError(listener: "app link", address: configuration.appLinkPath, reason: "\(error)")
        }
        let (apiPort, apiReady) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: DeviceAPI(service: service).router(),
            server: .guardedHTTP1(listener: "device API", timeouts: apiTimeouts, log: ListenerLog(logger: logger)),
            configuration: .init(address: .hostname(apiHost, port: self.apiPort), serverName: "herald-device"),
            onServerRunning: { channel in
                apiReady.yield(channel.localAddress?.port ?? 0)
                apiReady.finish()
            },
            logger: logger)
        let service = self.service
        let logger = self.logger
        await service.start()
        try await withThrowingTaskGroup(of: String.self) { tasks in
            tasks.addTask {
                defer { apiReady.finish() }
                let group = ServiceGroup(
                    configuration: .init(
                        services: [.init(service: app)], gracefulShutdownSignals: signals ? [.sigterm, .sigint] : [],
                        logger: logger))
                try await group.run()
                return "api"
            }
            tasks.addTask {
                await appLink.run(service: service, logger: logger)
                return "app link"
            }
            tasks.addTask {
                await service.runGatewayLink()
                return "device link"
            }
            var bound: Int?
            for await port in apiPort { bound = port }
            guard let bound else {
                var reason = "it stopped before it was listening"
                do {
                    while let ended = try await tasks.next(), ended != "api" {}
                } catch {
                    reason = "\(error)"
                }
                await appLink.close()
                tasks.cancelAll()
                throw ListenerStartError(listener: "device API", address: "\(apiHost):\(self.apiPort)", reason: reason)
            }
            var info = [
                "apiURL": "http://\(apiHost):\(bound)",
                "appLink": configuration.appLinkPath,
                "pid": String(ProcessInfo.processInfo.processIdentifier),
            ]
            if let id = await service.deviceID { info["deviceID"] = id }
            let runtime = URL(fileURLWithPath: configuration.stateDirectory).appendingPathComponent("device.json")
            try JSONSerialization.data(withJSONObject: info, options: [.sortedKeys, .prettyPrinted])
                .write(to: runtime, options: .atomic)
            logger.info("device ready", metadata: info.mapValues { .string($0) })
            onReady(info)
            // The service group ends on SIGINT/SIGTERM (or cancellation) after stopping the API; the
            // device link's task ends at once when there is no push service.
            while let ended = try await tasks.next(), ended != "api" {}
            logger.info("stopping: closing the app link and the device link")
            await appLink.close()
            tasks.cancelAll()
            try? FileManager.default.removeItem(at: runtime)
        }
        await service.close()
    }
}
