import Foundation
import HeraldCore

/// How many notifications to keep per (device, topic) while the device is offline.
public struct OfflinePolicy: Sendable, Equatable {
    /// APNs keeps one (the newest). More is a Herald extension.
    public var depth: Int = 1
    /// The longest anything is kept, whatever `apns-expiration` says (30 days).
    public var maximumAge: Duration = .seconds(30 * 24 * 3600)
    /// How long a push without `apns-expiration` is kept.
    public var defaultAge: Duration = .seconds(30 * 24 * 3600)

    /// APNs's policy.
    public init(depth: Int = 1) { self.depth = max(1, depth) }

    /// Applies the policy within one batch, in order: a push replaces an earlier one of the same
    /// (device, topic) and collapse id, and beyond `depth` the oldest go. Returns what is left to
    /// write, in order, and the pushes pushed out, each with the push that replaced it. Writing the
    /// survivors one by one under the same rules gives the same queues as writing every push one
    /// by one.
    public func coalesce(_ pushes: [StoredPush]) -> (survivors: [StoredPush], replaced: [Replacement]) {
        if pushes.count < 2 { return (pushes, []) }
        var queues: [String: [Int]] = [:]
        var dropped = Set<Int>()
        var replaced: [Replacement] = []
        for (i, p) in pushes.enumerated() {
            let key = p.deviceID + "\u{0}" + p.topic
            var queue = queues[key, default: []]
            if let collapse = p.collapseID {
                queue.removeAll { j in
                    guard pushes[j].collapseID == collapse else { return false }
                    dropped.insert(j)
                    replaced.append(Replacement(apnsID: pushes[j].apnsID, by: p))
                    return true
                }
            }
            queue.append(i)
            while queue.count > depth {
                let j = queue.removeFirst()
                dropped.insert(j)
                replaced.append(Replacement(apnsID: pushes[j].apnsID, by: p))
            }
            queues[key] = queue
        }
        let survivors = pushes.indices.filter { !dropped.contains($0) }.map { pushes[$0] }
        return (survivors, replaced)
    }

    /// A stored push the policy pushed out, and the newer push that did it.
    public struct Replacement: Sendable {
        /// The `apns-id` pushed out.
        public var apnsID: String
        /// The push that replaced it.
        public var by: StoredPush

        /// Its delivery-log line, which a store writes in the same transaction as the replacement.
        public var event: DeliveryEvent {
            DeliveryEvent(
                apnsID: apnsID, uniqueID: nil, kind: .replaced, at: by.receivedAt,
                detail: "replaced by \(by.apnsID), a newer push for the same device and topic (or collapse id)")
        }
    }
}
