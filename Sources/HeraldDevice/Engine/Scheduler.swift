import Foundation

/// The device's timer queue: every pending request with a fire date, across all apps, in an indexed binary
/// min-heap. Add, reschedule and remove are O(log n); the next wake time is O(1); taking what is due is
/// O(k log n) for k due entries. Holds a million entries in a few tens of megabytes.
public struct Scheduler: Sendable {
    /// Identifies a pending request: app and request identifier.
    public struct Key: Hashable, Sendable, Codable {
        public var app: String
        public var id: String
        /// Creates a key.
        public init(app: String, id: String) {
            self.app = app
            self.id = id
        }
    }

    private struct Entry: Sendable {
        var time: Double
        var key: Key
    }

    private var heap: [Entry] = []
    private var position: [Key: Int] = [:]

    /// Creates an empty scheduler.
    public init() {}

    /// Number of scheduled entries.
    public var count: Int { heap.count }

    /// When the earliest entry fires, or `nil` when nothing is scheduled.
    public var nextWake: Date? { heap.first.map { Date(timeIntervalSince1970: $0.time) } }

    /// Schedules `key` at `date`, replacing an earlier schedule of the same key.
    public mutating func schedule(_ key: Key, at date: Date) {
        let time = date.timeIntervalSince1970
        if let i = position[key] {
            let old = heap[i].time
            heap[i].time = time
            if time < old { siftUp(i) } else { siftDown(i) }
            return
        }
        heap.append(Entry(time: time, key: key))
        position[key] = heap.count - 1
        siftUp(heap.count - 1)
    }

    /// Removes `key`; returns whether it was scheduled.
    @discardableResult
    public mutating func remove(_ key: Key) -> Bool {
        guard let i = position.removeValue(forKey: key) else { return false }
        let last = heap.removeLast()
        if i < heap.count {
            heap[i] = last
            position[last.key] = i
            siftDown(i)
            siftUp(i)
        }
        return true
    }

    /// Removes and returns every entry due at or before `now`, earliest first, with its fire date.
    public mutating func takeDue(now: Date) -> [(key: Key, date: Date)] {
        let limit = now.timeIntervalSince1970
        var due: [(Key, Date)] = []
        while let first = heap.first, first.time <= limit {
            remove(first.key)
            due.append((first.key, Date(timeIntervalSince1970: first.time)))
        }
        return due
    }

    private mutating func swapAt(_ a: Int, _ b: Int) {
        heap.swapAt(a, b)
        position[heap[a].key] = a
        position[heap[b].key] = b
    }

    private mutating func siftUp(_ index: Int) {
        var i = index
        while i > 0 {
            let parent = (i - 1) >> 1
            guard heap[i].time < heap[parent].time else { return }
            swapAt(i, parent)
            i = parent
        }
    }

    private mutating func siftDown(_ index: Int) {
        var i = index
        let n = heap.count
        while true {
            let l = 2 * i + 1
            let r = l + 1
            var smallest = i
            if l < n, heap[l].time < heap[smallest].time { smallest = l }
            if r < n, heap[r].time < heap[smallest].time { smallest = r }
            if smallest == i { return }
            swapAt(i, smallest)
            i = smallest
        }
    }
}
