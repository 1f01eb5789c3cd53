import Foundation
import HeraldCore
import HeraldRuntime
import Logging
import NIOCore
import Synchronization

/// The broadcast channels as one node sees them (docs/broadcast.md): which device links are
/// subscribed to which channel, each channel's most recent message, and the fan-out of a message to
/// its subscribers. A message is written to the store first (on PostgreSQL every node hears of it,
/// ``BroadcastChange``) and then sent to the subscribers here; each node sends it to its own.
public final class BroadcastHub: Sendable {
    /// A channel, named as the device link names it.
    struct Key: Hashable, Sendable {
        var channelID: String
        var environment: APNsEnvironment
    }

    /// A device link subscribed to a channel.
    struct Subscriber: Sendable {
        let loop: any EventLoop
        let connection: NIOLoopBound<any DeviceConnection>
    }

    /// A channel with subscribers here (or that had some).
    struct Channel {
        var bundleID: String
        var latest: BroadcastMessage?
        var subscribers: [ObjectIdentifier: Subscriber] = [:]
    }

    private struct State {
        var channels: [Key: Channel] = [:]
        /// Messages already sent to the subscribers here.
        var delivered = RecentIDs(capacity: 4096)
    }

    private let state = Mutex(State())
    let store: any ChannelStore
    let logger: Logger

    /// A hub over `store`, with no subscribers yet.
    public init(store: any ChannelStore, logger: Logger = .silent) {
        self.store = store
        self.logger = logger
    }

    /// Why a subscription was refused.
    struct Refusal: Error {
        var code: LinkErrorCode
        var message: String
    }

    /// How many device links are subscribed to a channel here.
    public func subscriberCount(channelID: String, environment: APNsEnvironment) -> Int {
        state.withLock { $0.channels[Key(channelID: channelID, environment: environment)]?.subscribers.count ?? 0 }
    }

    /// Subscribes a link (`id`) to an app's channels; returns the messages it should be sent now:
    /// each channel's most recent one while it is kept (storage policy 1). Every channel must be
    /// the app's, in that environment; otherwise nothing changes.
    func subscribe(
        _ subscriber: Subscriber, id: ObjectIdentifier, bundleID: String, environment: APNsEnvironment,
        channels: [String], now: Date
    ) async throws(Refusal) -> [BroadcastMessage] {
        let keys = channels.map { Key(channelID: $0, environment: environment) }
        let unknown = state.withLock { state in keys.filter { state.channels[$0] == nil } }
        var loaded: [Key: Channel] = [:]
        for key in Set(unknown) {
            do {
                guard try await store.channel(bundleID: bundleID, environment: environment, id: key.channelID) != nil
                else {
                    throw Refusal(
                        code: .notFound,
                        message: "no channel \(key.channelID) for \(bundleID) in \(environment.rawValue)")
                }
                let latest = try await store.latestBroadcast(channelID: key.channelID, environment: environment)
                loaded[key] = Channel(bundleID: bundleID, latest: latest)
            } catch let refusal as Refusal {
                throw refusal
            } catch {
                throw Refusal(code: .`internal`, message: "the store failed: \(error)")
            }
        }
        return try state.withLock { state throws(Refusal) in
            for (key, channel) in loaded where state.channels[key] == nil { state.channels[key] = channel }
            for key in keys where state.channels[key]?.bundleID != bundleID {
                throw Refusal(
                    code: .notFound, message: "no channel \(key.channelID) for \(bundleID) in \(environment.rawValue)")
            }
            var kept: [BroadcastMessage] = []
            for key in Set(keys) {
                state.channels[key]?.subscribers[id] = subscriber
                if let latest = state.channels[key]?.latest, latest.isKept(at: now) { kept.append(latest) }
            }
            return kept.sorted { ($0.sentAt, $0.uniqueID) < ($1.sentAt, $1.uniqueID) }
        }
    }

    /// Ends a link's subscriptions.
    func unsubscribe(id: ObjectIdentifier, channels: [String], environment: APNsEnvironment) {
        state.withLock { state in
            for channel in channels {
                state.channels[Key(channelID: channel, environment: environment)]?.subscribers[id] = nil
            }
        }
    }

    /// Records a message and sends it to the subscribers here; returns how many links it went to.
    /// On PostgreSQL the other nodes hear of it and send it to theirs.
    public func publish(_ message: BroadcastMessage) async throws -> Int {
        try await store.saveBroadcast(message)
        return deliver(message)
    }

    /// Sends a message to the links subscribed to its channel here, once: a message already sent
    /// here is not sent again. Returns how many links it went to.
    @discardableResult
    public func deliver(_ message: BroadcastMessage) -> Int {
        let key = Key(channelID: message.channelID, environment: message.environment)
        let subscribers: [Subscriber] = state.withLock { state in
            guard !state.delivered.contains(message.uniqueID) else { return [] }
            state.delivered.insert(message.uniqueID)
            guard var channel = state.channels[key], channel.bundleID == message.bundleID else { return [] }
            if channel.latest.map({ ($0.sentAt, $0.uniqueID) < (message.sentAt, message.uniqueID) }) ?? true {
                channel.latest = message
                state.channels[key] = channel
            }
            return Array(channel.subscribers.values)
        }
        if subscribers.isEmpty { return 0 }
        let bytes = LinkMessage.broadcast(message.linkBroadcast).encoded()
        var frame = ByteBufferAllocator().buffer(capacity: bytes.count)
        frame.writeBytes(bytes)
        var byLoop: [ObjectIdentifier: (loop: any EventLoop, subscribers: [Subscriber])] = [:]
        for subscriber in subscribers {
            byLoop[ObjectIdentifier(subscriber.loop), default: (subscriber.loop, [])].subscribers.append(subscriber)
        }
        for (_, group) in byLoop {
            group.loop.execute { [frame] in
                for subscriber in group.subscribers { subscriber.connection.value.send(frame: frame) }
            }
        }
        return subscribers.count
    }

    /// Applies what other nodes broadcast (``BroadcastChange``): each message is read and sent to
    /// the subscribers here; after notifications could have been missed, each channel subscribed to
    /// here has its most recent message read again and sent if it was not.
    public func apply(_ changes: Set<BroadcastChange>) async throws {
        var messages: [BroadcastMessage] = []
        for change in changes {
            switch change {
            case .message(let uniqueID):
                if state.withLock({ $0.delivered.contains(uniqueID) }) { continue }
                if let message = try await store.broadcast(uniqueID: uniqueID) { messages.append(message) }
            case .everything:
                let keys = state.withLock { Array($0.channels.keys) }
                for key in keys {
                    if let latest = try await store.latestBroadcast(
                        channelID: key.channelID, environment: key.environment)
                    {
                        messages.append(latest)
                    }
                }
            }
        }
        // Heard together, sent in the order they were broadcast.
        for message in messages.sorted(by: { ($0.sentAt, $0.uniqueID) < ($1.sentAt, $1.uniqueID) }) {
            deliver(message)
        }
    }
}
