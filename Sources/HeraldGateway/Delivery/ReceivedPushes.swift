import Foundation
import HeraldCore
import Synchronization

/// What devices linked to this node received lately: the test API's `GET /test/received`
/// (docs/testing.md). A ring of the last ``capacity`` pushes acknowledged by any device, with their
/// payloads (the `Data` the link already holds: no copy), so that a test in any language can ask what
/// a device got since a mark.
public final class ReceivedPushes: Sendable {
    /// One push a device acknowledged.
    public struct Entry: Sendable, Equatable {
        /// `apns-id`.
        public var apnsID: String
        /// `apns-unique-id`.
        public var uniqueID: String?
        /// The device.
        public var deviceID: String
        /// `apns-topic`.
        public var topic: String
        /// The payload as the provider sent it.
        public var payload: Data
        /// When it was written to the device.
        public var deliveredAt: Date
        /// When the device acknowledged it.
        public var acknowledgedAt: Date
        /// Whether it came from the offline store.
        public var fromStorage: Bool
    }

    /// How many pushes are kept, across devices.
    public let capacity: Int
    /// Whether anything is kept (the test API is on): otherwise recording costs nothing.
    public let isEnabled: Bool
    private struct State {
        var ring: [Entry] = []
        var next = 0
        /// The latest acknowledgement among the entries the ring has overwritten (records come from
        /// several threads, not always in time order).
        var forgottenBefore: Date?
    }
    private let state = Mutex(State())

    /// A ring of `capacity` pushes; `enabled: false` keeps nothing.
    public init(capacity: Int = 10_000, enabled: Bool = true) {
        self.capacity = capacity
        self.isEnabled = enabled
    }

    /// Records a push a device acknowledged.
    public func record(_ entry: @autoclosure () -> Entry) {
        guard isEnabled else { return }
        let entry = entry()
        state.withLock { s in
            if s.ring.count < capacity {
                s.ring.append(entry)
            } else {
                s.forgottenBefore = Swift.max(s.forgottenBefore ?? .distantPast, s.ring[s.next].acknowledgedAt)
                s.ring[s.next] = entry
            }
            s.next = (s.next + 1) % capacity
        }
    }

    /// What `deviceID` acknowledged at or after `since`, oldest first, and whether that is all of it (the
    /// ring may have forgotten older ones).
    public func received(by deviceID: String, since: Date) -> (entries: [Entry], complete: Bool) {
        state.withLock { s in
            let ordered = s.ring.count < capacity ? s.ring : Array(s.ring[s.next...] + s.ring[..<s.next])
            let entries = ordered.filter { $0.deviceID == deviceID && $0.acknowledgedAt >= since }
            return (entries, s.forgottenBefore.map { $0 < since } ?? true)
        }
    }

    /// Forgets everything (the test API's reset).
    public func removeAll() { state.withLock { $0 = State() } }
}

/// Wakes whoever waits on the delivery log (the test API's long polls) each time a group of its lines
/// is written on this node. Costs one atomic load per group while nobody waits.
public final class CommitSignal: Sendable {
    private let waiters = Mutex<[Int: AsyncStream<Void>.Continuation]>([:])
    private let count = Atomic<Int>(0)
    private let nextID = Atomic<Int>(0)

    /// No waiters.
    public init() {}

    /// A group was written.
    public func signal() {
        guard count.load(ordering: .relaxed) > 0 else { return }
        waiters.withLock { for continuation in $0.values { continuation.yield() } }
    }

    /// A stream that yields after each group written from now on (at most one wake-up waits), and
    /// the call that ends it.
    public func subscribe() -> (AsyncStream<Void>, @Sendable () -> Void) {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        waiters.withLock {
            $0[id] = continuation
            count.store($0.count, ordering: .relaxed)
        }
        return (
            stream,
            { [self] in
                waiters.withLock {
                    $0[id]?.finish()
                    $0[id] = nil
                    count.store($0.count, ordering: .relaxed)
                }
            }
        )
    }
}
