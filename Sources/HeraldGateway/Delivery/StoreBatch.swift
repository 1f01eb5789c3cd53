import Foundation
import HeraldCore

/// One durable write: pushes to store and events to log, committed together.
public struct StoreBatch: Sendable {
    /// Pushes to add to the offline store under the policy.
    public var pushes: [StoredPush] = []
    /// Events to append to the delivery log.
    public var events: [DeliveryEvent] = []
    /// Pushes delivered and acknowledged at once, for the delivery log (each stands for its
    /// accepted, delivered and acknowledged events).
    public var delivered: [DeliveredPush] = []
    /// `apns-id`s to remove from the offline store (acknowledged or discarded), per device.
    public var removals: [(deviceID: String, apnsID: String)] = []
    /// Pushes that reached one of Apple's states, by day, app and state (``DeliveryCount``),
    /// written with the batch. Those of ``delivered`` are added by ``tallyDelivered()``.
    public var counts: [DeliveryCount.Key: Int] = [:]

    /// An empty batch.
    public init() {}

    /// Whether there is nothing to write.
    public var isEmpty: Bool {
        pushes.isEmpty && events.isEmpty && delivered.isEmpty && removals.isEmpty && counts.isEmpty
    }

    /// Appends another batch.
    public mutating func append(_ other: StoreBatch) {
        pushes += other.pushes
        events += other.events
        delivered += other.delivered
        removals += other.removals
        counts.merge(other.counts, uniquingKeysWith: +)
    }

    /// Counts one push of `topic` (a push of `pushType`) reaching `state` at `at`.
    public mutating func count(_ state: AppleDeliveryState, topic: String, pushType: PushType, at: Date) {
        let app = DeliveryCount.app(ofTopic: topic, pushType: pushType)
        counts[DeliveryCount.Key(day: DeliveryCount.day(of: at), app: app, state: state), default: 0] += 1
    }

    /// Adds the counts of ``delivered`` (each received, then delivered): done once, when the batch
    /// is written, off the event loops that answered those pushes.
    public mutating func tallyDelivered() {
        guard !delivered.isEmpty else { return }
        var days: (Int64, String)?
        func day(_ date: Date) -> String {
            let number = Int64((date.timeIntervalSince1970 / 86400).rounded(.down))
            if let days, days.0 == number { return days.1 }
            let text = DeliveryCount.day(of: date)
            days = (number, text)
            return text
        }
        // A group carries thousands of pushes to a handful of topics: each topic's app is found once.
        // A group carries thousands of pushes, mostly to one topic on one day: runs of those are
        // summed locally and added to the dictionary once per run, not twice per push.
        var run: (topic: String, pushType: PushType, received: String, delivered: String, count: Int)?
        func flush() {
            guard let run else { return }
            let app = DeliveryCount.app(ofTopic: run.topic, pushType: run.pushType)
            counts[DeliveryCount.Key(day: run.received, app: app, state: .received), default: 0] += run.count
            counts[DeliveryCount.Key(day: run.delivered, app: app, state: .delivered), default: 0] += run.count
        }
        for push in delivered {
            let received = day(push.acceptedAt)
            let delivered = day(push.deliveredAt)
            if let current = run, current.pushType == push.pushType, current.received == received,
                current.delivered == delivered, current.topic == push.topic
            {
                run!.count += 1
                continue
            }
            flush()
            run = (push.topic, push.pushType, received, delivered, 1)
        }
        flush()
    }
}
