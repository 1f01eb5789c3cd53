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

    /// Counts one push of `topic` reaching `state` at `at`.
    public mutating func count(_ state: AppleDeliveryState, topic: String, at: Date) {
        counts[
            DeliveryCount.Key(day: DeliveryCount.day(of: at), app: DeliveryCount.app(ofTopic: topic), state: state),
            default: 0] += 1
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
        var apps: [String: String] = [:]
        for push in delivered {
            let app: String
            if let known = apps[push.topic] {
                app = known
            } else {
                app = DeliveryCount.app(ofTopic: push.topic)
                apps[push.topic] = app
            }
            counts[DeliveryCount.Key(day: day(push.acceptedAt), app: app, state: .received), default: 0] += 1
            counts[DeliveryCount.Key(day: day(push.deliveredAt), app: app, state: .delivered), default: 0] += 1
        }
    }
}
