import Foundation
import HeraldCore
import HeraldRuntime
import Logging
import NIOCore
import NIOExtras
import NIOPosix
import ServiceLifecycle
import Synchronization

/// The app link's server: a Unix stream socket in the state directory; each connected process is
/// one running app (docs/app-link.md). The link is not a hot path, so each connection is served by
/// one task that takes its calls in order.
public final class AppLinkServer: Sendable {
    let channel: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>
    /// The socket's path.
    public let path: String
    /// How many bytes of encoded lines may wait to be written to one app (``defaultMaximumBacklog``).
    public let maximumBacklog: Int

    private init(
        channel: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>, path: String, maximumBacklog: Int
    ) {
        self.channel = channel
        self.path = path
        self.maximumBacklog = maximumBacklog
    }

    /// Binds the socket at `path` (replacing a stale one left by a previous run); an app's link is
    /// closed once `maximumBacklog` bytes wait for it.
    public static func bind(
        path: String, maximumBacklog: Int = defaultMaximumBacklog,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> AppLinkServer {
        let channel = try await ServerBootstrap(group: group)
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true) { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(
                            LineBasedFrameDecoder(), maximumBufferSize: AppLink.maximumMessageSize))
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: child)
                }
            }
        // Only the device's user may talk to the daemon.
        chmod(path, 0o600)
        return AppLinkServer(channel: channel, path: path, maximumBacklog: maximumBacklog)
    }

    /// Serves connections until cancelled or ``close()``.
    public func run(service: DeviceService, logger: Logger = .silent) async {
        await withDiscardingTaskGroup { group in
            do {
                try await channel.executeThenClose { inbound in
                    for try await connection in inbound {
                        group.addTask { [maximumBacklog] in
                            await Self.serve(connection, service: service, limit: maximumBacklog, logger: logger)
                        }
                    }
                }
            } catch {
                logger.debug("app link closed", metadata: ["error": "\(error)"])
            }
            group.cancelAll()
        }
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Stops accepting connections.
    public func close() async {
        try? await channel.channel.close()
    }

    /// How many bytes of encoded lines may wait to be written to one app (its answers and events)
    /// unless ``bind(path:maximumBacklog:group:)`` says otherwise: an app that stops reading while it
    /// goes on sending (or while the daemon has events for it) has its link closed once this much
    /// waits, instead of holding the daemon's memory. Sixteen of the largest messages; a reading app
    /// never comes near it. (Each line is a buffer of its own, so the memory held is up to two or
    /// three times this for small lines.)
    public static let defaultMaximumBacklog = 16 * AppLink.maximumMessageSize

    static func serve(
        _ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>, service: DeviceService, limit: Int, logger: Logger
    ) async {
        let (outbox, mail) = AsyncStream.makeStream(of: Data.self)
        let backlog = Backlog()
        let channel = connection.channel
        // Encoded here, so that what waits is counted in bytes.
        let send: @Sendable (AppLinkFrame) -> Void = { frame in
            guard let line = Self.encodedLine(frame) else { return }
            let waiting = backlog.bytes.add(line.count, ordering: .relaxed).newValue
            guard waiting <= limit else {
                if !backlog.overflowed.exchange(true, ordering: .relaxed) {
                    let app = backlog.app.withLock { $0 } ?? "-"
                    logger.notice(
                        "an app's link closed: it reads nothing of what is sent to it",
                        metadata: ["app": "\(app)", "waiting": "\(waiting - line.count) bytes"])
                    mail.finish()
                    channel.close(promise: nil)
                }
                return
            }
            // A link already ending (the app suspended, the writer gone) takes nothing more: what it
            // drops does not wait.
            if case .terminated = mail.yield(line) { backlog.bytes.subtract(line.count, ordering: .relaxed) }
        }
        // Ending the outbox ends the connection from this side once what was sent has gone out (a
        // suspended app's link).
        let close: @Sendable () -> Void = { mail.finish() }
        var app: String?
        var session = 0
        do {
            try await connection.executeThenClose { inbound, outbound in
                try await withThrowingTaskGroup(of: Void.self) { tasks in
                    tasks.addTask {
                        for await line in outbox {
                            try await outbound.write(ByteBuffer(bytes: line))
                            backlog.bytes.subtract(line.count, ordering: .relaxed)
                        }
                        // Nothing more to say (the app left, or it is suspended): what was written is
                        // out, and the app reads the end of the link.
                        connection.channel.close(promise: nil)
                    }
                    defer { mail.finish() }
                    for try await line in inbound {
                        let frame: AppLinkFrame
                        do {
                            frame = try AppLinkFrame(line: line.readableBytesView)
                        } catch {
                            send(.failure(id: 0, failure: error as? AppLinkFailure ?? .protocolError("\(error)")))
                            continue
                        }
                        guard case .call(let id, let call) = frame else {
                            send(.failure(id: 0, failure: .protocolError("apps send calls only")))
                            continue
                        }
                        guard let bundleID = app else {
                            guard case .hello(let bundleID, let state) = call else {
                                send(.failure(id: id, failure: .protocolError("the first call must be hello")))
                                continue
                            }
                            do {
                                session = try await service.connect(
                                    bundleID, state: state, send: send, close: close)
                                app = bundleID
                                backlog.app.withLock { $0 = bundleID }
                                logger.info("app connected", metadata: ["app": "\(bundleID)", "state": "\(state)"])
                                send(.result(id: id, result: .done))
                            } catch {
                                send(.failure(id: id, failure: error as? AppLinkFailure ?? .protocolError("\(error)")))
                            }
                            continue
                        }
                        if case .registerForRemoteNotifications = call {
                            // This one may wait for the push service: the app's other calls go on meanwhile.
                            tasks.addTask { await Self.answer(id, call, app: bundleID, service: service, send: send) }
                        } else {
                            await Self.answer(id, call, app: bundleID, service: service, send: send)
                        }
                    }
                    mail.finish()
                    try await tasks.next()
                    tasks.cancelAll()
                }
            }
        } catch {
            logger.debug("app connection ended", metadata: ["app": "\(app ?? "-")", "error": "\(error)"])
        }
        if let app {
            logger.info("app disconnected", metadata: ["app": "\(app)"])
            await service.disconnect(app, session: session)
        }
    }

    /// The line that sends `frame`. A result holding a value JSON cannot hold (such as NaN) is sent
    /// as a failure, so that the call still gets an answer; any other frame that cannot be encoded
    /// is dropped.
    static func encodedLine(_ frame: AppLinkFrame) -> Data? {
        do {
            return try frame.encodedLine()
        } catch {
            guard case .result(let id, _) = frame else { return nil }
            return try? AppLinkFrame.failure(
                id: id, failure: .protocolError("the answer cannot be encoded: \(error)")
            ).encodedLine()
        }
    }

    static func answer(
        _ id: Int, _ call: AppLinkCall, app: String, service: DeviceService,
        send: @Sendable (AppLinkFrame) -> Void
    ) async {
        do {
            send(.result(id: id, result: try await service.call(app, call)))
        } catch {
            send(.failure(id: id, failure: error as? AppLinkFailure ?? .protocolError("\(error)")))
        }
    }
}

/// What waits to be written to one app's connection (``AppLinkServer/maximumBacklog``).
private final class Backlog: Sendable {
    /// Bytes handed to the writer and not yet written.
    let bytes = Atomic<Int>(0)
    /// Whether the limit was passed (the link is closing).
    let overflowed = Atomic<Bool>(false)
    /// The app, once it has said `hello`.
    let app = Mutex<String?>(nil)
}

/// The app link as a `Service` of the daemon: serves until graceful shutdown (then stops accepting
/// and closes the apps' connections) or cancellation.
struct AppLinkService: Service {
    let server: AppLinkServer
    let device: DeviceService
    let logger: Logger

    func run() async throws {
        let server = self.server
        await withGracefulShutdownHandler {
            await server.run(service: device, logger: logger)
        } onGracefulShutdown: { [device] in
            // A call waiting for the user's answer in the permission dialog ends first, with an error:
            // the connection it holds would otherwise keep the server from closing.
            Task {
                await device.abandonPrompts()
                await server.close()
            }
        }
    }
}
