import NIOCore
import Synchronization

/// The open connections of a listener.
final class ChannelRegistry: Sendable {
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])
    func add(_ channel: any Channel) { channels.withLock { $0[ObjectIdentifier(channel)] = channel } }
    func remove(_ channel: any Channel) { channels.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(channel)) } }
    var all: [any Channel] { channels.withLock { Array($0.values) } }
    var count: Int { channels.withLock { $0.count } }

    /// Tells every open connection to stop (``ProviderShutdownEvent``) and waits for each to close;
    /// after `timeout` closes whatever is left.
    func stopAll(timeout: TimeAmount) async {
        let open = all
        for channel in open {
            channel.pipeline.fireUserInboundEventTriggered(ProviderShutdownEvent())
        }
        // Whatever is still open after `timeout` is closed, each on its own loop's time.
        let closing = open.map { channel in
            channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
        }
        for channel in open { try? await channel.closeFuture.get() }
        for scheduled in closing { scheduled.cancel() }
    }
}
