import NIOCore
import Synchronization

/// The open connections of a listener, so that it can stop them all.
public final class ChannelRegistry: Sendable {
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])

    /// No connection yet.
    public init() {}

    /// Adds an accepted connection.
    public func add(_ channel: any Channel) { channels.withLock { $0[ObjectIdentifier(channel)] = channel } }
    /// Removes a connection (once it closed).
    public func remove(_ channel: any Channel) {
        channels.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(channel)) }
    }
    /// The connections open now.
    public var all: [any Channel] { channels.withLock { Array($0.values) } }
    /// How many connections are open.
    public var count: Int { channels.withLock { $0.count } }

    /// Tells every open connection to stop (fires `event` into its pipeline, the listener's own
    /// shutdown event) and waits for each to close; after `timeout` closes whatever is left.
    public func stopAll(timeout: TimeAmount, event: any Sendable) async {
        let open = all
        for channel in open {
            channel.pipeline.fireUserInboundEventTriggered(event)
        }
        // Whatever is still open after `timeout` is closed, each on its own loop's time.
        let closing = open.map { channel in
            channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
        }
        for channel in open { try? await channel.closeFuture.get() }
        for scheduled in closing { scheduled.cancel() }
    }
}
