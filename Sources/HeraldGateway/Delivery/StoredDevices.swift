import Synchronization

/// The devices that may have pushes in the offline store. It lets a device that connects with
/// nothing stored skip the backlog read: in a reconnect storm almost every device has nothing
/// stored, and the read (a hop to the store's thread, a query, a hop back) was a sixth of the
/// gateway's work per reconnection (BENCHMARKS.md, "Only the devices with something stored read").
///
/// It may name devices that have nothing stored. A read for such a device finds nothing, and then
/// the device is taken out unless a write for it began meanwhile. Once ``isComplete``, it never
/// leaves out a device that has something stored:
///
/// - every push written through this node's ``GroupCommitter`` is added before its transaction
///   starts (``storing(_:)``) and counted as being written until it ends (``settled(_:)``);
/// - what the store held when the gateway started is loaded once (``load(_:)``);
/// - in a cluster, what other nodes store is added as their notifications are heard (``heard(_:)``).
///   While the node is not listening, it is not complete: until listening starts again and the
///   store's content is loaded anew, every device reads.
///
/// A device that is left out because the write it raced with had not begun is no different from
/// one whose read ran just before that write's commit: the router, or the cluster's follower, offers
/// the committed push to the device's link (docs/device-link.md, "Who reads the backlog").
public final class StoredDevices: Sendable {
    /// What a device that just came online does about its backlog.
    public enum Check: Equatable, Sendable {
        /// Nothing is stored for it: no read.
        case nothing
        /// Read it, and hand `mark` to ``readNothing(_:mark:)`` if the read finds nothing (0: the
        /// device stays named whatever the read finds).
        case read(mark: UInt64)
    }

    private struct Entry {
        /// The ``State/generation`` of the last time the device was added.
        var generation: UInt64
        /// How many writes of pushes for the device are under way.
        var writing: Int
    }

    private struct State {
        var complete = false
        var entries: [String: Entry] = [:]
        /// Counts every addition; each takes the next number.
        var generation: UInt64 = 0

        mutating func add(_ device: String, writing: Int) {
            generation += 1
            let old = entries[device]
            entries[device] = Entry(generation: generation, writing: (old?.writing ?? 0) + writing)
        }
    }

    private let state = Mutex(State())

    /// An empty set, not complete: every device reads until ``load(_:)``.
    public init() {}

    /// Whether the set names every device with something stored (after ``load(_:)``, and while a
    /// cluster's node is listening).
    public var isComplete: Bool { state.withLock { $0.complete } }

    /// How many devices it names.
    public var count: Int { state.withLock { $0.entries.count } }

    /// Whether `device` may have something stored. Asked when it comes online, after its link is
    /// attached (so that a push stored after this answer is offered to the link).
    public func check(_ device: String) -> Check {
        state.withLock { state in
            // Generations start at 1, so a mark of 0 never matches.
            guard let entry = state.entries[device] else { return state.complete ? .nothing : .read(mark: 0) }
            // A write under way may commit after the read looked and before it ends, so a read that
            // finds nothing proves nothing: the device stays named.
            return .read(mark: entry.writing > 0 ? 0 : entry.generation)
        }
    }

    /// A read that started after ``check(_:)`` answered `mark` found nothing for `device`: the device
    /// is taken out, unless it was added again since. (Every write announced before the check had
    /// ended, so the read saw it; a write announced since made the device's generation newer.)
    public func readNothing(_ device: String, mark: UInt64) {
        state.withLock { state in
            guard mark != 0, let entry = state.entries[device], entry.generation == mark, entry.writing == 0 else {
                return
            }
            state.entries[device] = nil
        }
    }

    /// Pushes for `devices` are about to be written (a device may come twice: once per push).
    public func storing(_ devices: some Sequence<String>) { add(devices, writing: 1) }

    /// The writes ``storing(_:)`` announced for `devices` ended, committed or not.
    public func settled(_ devices: some Sequence<String>) {
        state.withLock { state in
            for device in devices {
                guard var entry = state.entries[device] else { continue }
                entry.writing = max(0, entry.writing - 1)
                state.entries[device] = entry
            }
        }
    }

    /// Another node stored pushes for `devices` (a cluster's notification).
    public func heard(_ devices: some Sequence<String>) { add(devices, writing: 0) }

    /// Adds every device the store holds pushes for (read after anything ``heard(_:)`` meanwhile
    /// could be heard) and makes the set complete.
    public func load(_ devices: some Sequence<String>) { add(devices, writing: 0, completing: true) }

    /// Adds `devices`, each with `writing` more writes under way; `completing`: the set is complete
    /// from then on.
    private func add(_ devices: some Sequence<String>, writing: Int, completing: Bool = false) {
        state.withLock { state in
            for device in devices { state.add(device, writing: writing) }
            if completing { state.complete = true }
        }
    }

    /// A cluster's node stopped hearing what other nodes store: every device reads until the next
    /// ``load(_:)``.
    public func lostTrack() {
        state.withLock { $0.complete = false }
    }
}
