import Foundation
import NIOCore
import Synchronization

/// Reads what the offline store holds for devices that just came online, many devices per query:
/// a reconnect storm brings thousands a second, and a query (and a task) each would cost more than
/// the rest of their connection. One read runs at a time; devices that come online meanwhile wait
/// for the next, which takes them all (up to ``batchLimit``). With nothing running, a read starts
/// ``window`` after the event loop that asked has finished its turn: the devices that come online
/// meanwhile, on any loop, go together, and a lone device's stored pushes wait that much longer.
final class BacklogReader: Sendable {
    /// What a device's read hands back: its stored pushes, oldest first; `nil` when the read failed.
    typealias Delivery = @Sendable ([StoredPush]?) -> Void

    /// The most devices in one query.
    static let batchLimit = 1000

    private struct State {
        var waiting: [(device: String, deliver: Delivery)] = []
        var reading = false
    }

    private let state = Mutex(State())
    private let read: @Sendable ([String]) async -> [String: [StoredPush]]?
    /// How long a read waits, once asked for with nothing running, for more devices to join it.
    let window: Duration
    /// Waits out the window (`Task.sleep`; a test's own).
    private let wait: @Sendable (Duration) async -> Void

    /// A reader over `read`, which answers for a batch of devices, leaving out those with nothing
    /// stored (and never throws: it logs and answers `nil`), gathering devices for `window` before a
    /// read that starts with nothing running.
    init(
        window: Duration = BacklogReader.defaultWindow,
        wait: @escaping @Sendable (Duration) async -> Void = { try? await Task.sleep(for: $0) },
        read: @escaping @Sendable ([String]) async -> [String: [StoredPush]]?
    ) {
        self.window = window
        self.wait = wait
        self.read = read
    }

    /// Eight milliseconds. In the one-node reconnect storm a read started at the end of each
    /// event-loop turn took about two devices, and each read cost a task, a hop to GRDB's dispatch
    /// queue and back and a statement prepared anew: waiting 2 ms took the gateway's CPU per
    /// reconnection to 0.84-0.89 of before, 8 ms to about 0.9 of that (BENCHMARKS.md, "The backlog
    /// read waits for company"). When reads are busy (six nodes, 100,000 devices) the devices
    /// gather while one runs and the window changes nothing.
    static let defaultWindow = Duration.milliseconds(8)

    /// Reads `device`'s backlog and hands it to `deliver` (on whatever thread the read ends on);
    /// `loop` is the event loop asking.
    func read(device: String, on loop: any EventLoop, then deliver: @escaping Delivery) {
        let start = state.withLock { state in
            state.waiting.append((device, deliver))
            if state.reading { return false }
            state.reading = true
            return true
        }
        guard start else { return }
        let window = self.window
        loop.execute {
            Task {
                if window > .zero { await self.wait(window) }
                await self.drain()
            }
        }
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
            for (device, deliver) in batch { deliver(found.map { $0[device] ?? [] }) }
        }
    }
}
