import Foundation
import NIOCore
import Synchronization

/// Reads what the offline store holds for devices that just came online, many devices per query:
/// a reconnect storm brings thousands a second, and a query (and a task) each would cost more than
/// the rest of their connection. One read runs at a time; devices that come online meanwhile wait
/// for the next, which takes them all (up to ``batchLimit``). With nothing running, a read starts
/// once the event loop that asked has finished its turn: the devices whose `hello` or `resume` that
/// turn read (a busy loop reads many sockets per turn) go together, and a lone device waits for no
/// more than the rest of the turn.
final class BacklogReader: Sendable {
    /// What a device's read hands back: its stored pushes, oldest first.
    typealias Delivery = @Sendable ([StoredPush]) -> Void

    /// The most devices in one query.
    static let batchLimit = 1000

    private struct State {
        var waiting: [(device: String, deliver: Delivery)] = []
        var reading = false
    }

    private let state = Mutex(State())
    private let read: @Sendable ([String]) async -> [String: [StoredPush]]

    /// A reader over `read`, which answers for a batch of devices (and never throws: it logs and
    /// answers nothing).
    init(read: @escaping @Sendable ([String]) async -> [String: [StoredPush]]) {
        self.read = read
    }

    /// Reads `device`'s backlog and hands it to `deliver` (on whatever thread the read ends on);
    /// `loop` is the event loop asking.
    func read(device: String, on loop: any EventLoop, then deliver: @escaping Delivery) {
        let start = state.withLock { state in
            state.waiting.append((device, deliver))
            if state.reading { return false }
            state.reading = true
            return true
        }
        if start { loop.execute { Task { await self.drain() } } }
    }

    private func drain() async {
        while true {
            let batch = state.withLock { state in
                let count = min(Self.batchLimit, state.waiting.count)
                if count == 0 { state.reading = false }
                defer { state.waiting.removeFirst(count) }
                return Array(state.waiting.prefix(count))
            }
            if batch.isEmpty { return }
            var devices = Set<String>()
            let unique = batch.map(\.device).filter { devices.insert($0).inserted }
            let found = await read(unique)
            for (device, deliver) in batch { deliver(found[device] ?? []) }
        }
    }
}
