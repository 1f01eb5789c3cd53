/// A set of ids that remembers only the newest `capacity`: inserting one more forgets the oldest.
/// The gateway uses it for the pushes a device link just took, the device for the pushes it already
/// took, so that one sent twice is dropped the second time.
public struct RecentIDs: Sendable {
    /// How many ids it remembers.
    public let capacity: Int
    private var set = Set<String>()
    private var order: [String] = []
    private var head = 0

    /// An empty set remembering up to `capacity` ids (at least one).
    public init(capacity: Int) { self.capacity = max(1, capacity) }

    /// Whether `id` is among the newest `capacity` inserted.
    public func contains(_ id: String) -> Bool { set.contains(id) }

    /// Remembers `id`, forgetting the oldest when full; an id already there stays where it is.
    public mutating func insert(_ id: String) {
        guard set.insert(id).inserted else { return }
        if order.count < capacity {
            order.append(id)
        } else {
            set.remove(order[head])
            order[head] = id
            head = (head + 1) % capacity
        }
    }
}
