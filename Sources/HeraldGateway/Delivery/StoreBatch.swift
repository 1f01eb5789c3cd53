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

    /// An empty batch.
    public init() {}

    /// Whether there is nothing to write.
    public var isEmpty: Bool { pushes.isEmpty && events.isEmpty && delivered.isEmpty && removals.isEmpty }

    /// Appends another batch.
    public mutating func append(_ other: StoreBatch) {
        pushes += other.pushes
        events += other.events
        delivered += other.delivered
        removals += other.removals
    }
}
