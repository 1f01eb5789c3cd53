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
    /// Whether the device API serves the web device (the page at `/`, its stream and screen routes).
    public var webDevice = true
    let logger: Logger
    let stopper = ServiceRunner.Stopper()

    /// Creates the daemon over a service.
    public init(service: DeviceService, apiHost: String = "127.0.0.1", apiPort: Int = 8081, logger: Logger = .silent) {
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
        let apiReady = ServiceRunner.Readiness()
        let app = Application(
            router: DeviceAPI(service: service, webDevice: webDevice).router(),
            server: .guardedHTTP1(listener: "device API", timeouts: apiTimeouts, log: ListenerLog(logger: logger)),
            configuration: .init(address: .hostname(apiHost, port: self.apiPort), serverName: "herald-device"),
            onServerRunning: { apiReady.listening(on: $0.localAddress?.port ?? 0) },
            logger: logger)
        let service = self.service
        let logger = self.logger
        await service.start()
        let runtime = URL(fileURLWithPath: configuration.stateDirectory).appendingPathComponent(DeviceInfo.fileName)
        // Stopped in reverse order on SIGINT/SIGTERM: the device API, the app link, the device link.
        let services: [any Service] = [
            service.gateway, AppLinkService(server: appLink, device: service, logger: logger), app,
        ]
        do {
            try await ServiceRunner.run(
                services, signals: signals, logger: logger, listening: apiReady, listener: "device API",
                address: "\(apiHost):\(self.apiPort)", stopper: stopper
            ) { bound in
                let info = DeviceInfo(
                    apiURL: "http://\(apiHost):\(bound)", appLink: configuration.appLinkPath,
                    deviceID: await service.deviceID, pid: String(ProcessInfo.processInfo.processIdentifier))
                try info.write(to: runtime.path)
                logger.info("device ready", metadata: info.fields.mapValues { .string($0) })
                onReady(info.fields)
            }
        } catch {
            // The state directory is released on a failed run too: a daemon started again in this
            // process (a test's restart) must not find it still locked by this one.
            await appLink.close()
            await service.close()
            throw error
        }
        try? FileManager.default.removeItem(at: runtime)
        await service.close()
    }
}

extension DeviceDaemon {
    /// Stops the running daemon gracefully, as SIGTERM does: ``run(signals:onReady:)`` returns once it
    /// is done.
    public func shutdown() async {
        await stopper.stop()
    }
}
