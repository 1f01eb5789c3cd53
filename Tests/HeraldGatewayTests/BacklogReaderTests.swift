import Foundation
import HeraldCore
import NIOEmbedded
import Synchronization
import Testing

@testable import HeraldGateway

/// Devices coming online while a backlog read runs are read together in the next query, each
/// getting its own pushes; a lone device is read at once. The store answers behind a ``Gate``, so
/// the test decides when each query ends.
@Suite(.timeLimit(.minutes(1))) struct BacklogReaderTests {
    /// The batches the reader asked for, in order.
    final class Queries: Sendable {
        let batches = Mutex<[[String]]>([])
        let gate = Gate()
    }

    static func push(_ id: String, for device: String) -> StoredPush {
        var push = LinkMachineDriver.stored(id)
        push.deviceID = device
        return push
    }

    @Test func devicesThatComeOnlineDuringAReadAreReadTogetherNext() async throws {
        let queries = Queries()
        let reader = BacklogReader(window: .zero) { devices in
            queries.batches.withLock { $0.append(devices) }
            await queries.gate.pass()
            return Dictionary(
                uniqueKeysWithValues: devices.filter { $0 != "empty" }.map { ($0, [Self.push("p-\($0)", for: $0)]) })
        }
        let loop = NIOAsyncTestingEventLoop()
        let delivered = Mutex<[String: [String]]>([:])
        let done = Tally()
        func read(_ device: String) {
            reader.read(device: device, on: loop) { stored in
                delivered.withLock { $0[device, default: []].append(contentsOf: (stored ?? []).map(\.apnsID)) }
                done.increment()
            }
        }
        queries.gate.close()
        read("a")
        // The read starts once the loop that asked has finished its turn.
        #expect(queries.batches.withLock { $0 }.isEmpty)
        await loop.run()
        // The first query is under way (and held); three more come meanwhile, one of them twice.
        await queries.gate.arrivals.reached(1)
        read("b")
        read("empty")
        read("c")
        read("b")
        queries.gate.open()
        await done.reached(5)
        #expect(queries.batches.withLock { $0 } == [["a"], ["b", "empty", "c"]])
        #expect(
            delivered.withLock { $0 } == ["a": ["p-a"], "b": ["p-b", "p-b"], "c": ["p-c"], "empty": []])

        // Nothing running: the next device is read after the window (here none), alone.
        read("d")
        await loop.run()
        await done.reached(6)
        #expect(queries.batches.withLock { $0.last } == ["d"])
    }

    /// With nothing running, a read waits out the window first: devices that come online meanwhile,
    /// on any loop, are read with the first. The wait is the test's, so no time passes.
    @Test func aReadWaitsOutItsWindowForMoreDevices() async throws {
        let queries = Queries()
        let window = Gate()
        let waited = Mutex<[Duration]>([])
        // Whichever comes first, the wait or a read, is counted: a reader that did not wait fails
        // here rather than hanging.
        let started = Tally()
        let reader = BacklogReader(
            window: .milliseconds(8),
            wait: { duration in
                waited.withLock { $0.append(duration) }
                started.increment()
                await window.pass()
            },
            read: { devices in
                queries.batches.withLock { $0.append(devices) }
                started.increment()
                return [:]
            })
        let (first, second) = (NIOAsyncTestingEventLoop(), NIOAsyncTestingEventLoop())
        let done = Tally()
        window.close()
        reader.read(device: "a", on: first) { _ in done.increment() }
        await first.run()
        await started.reached(1)
        let early = queries.batches.withLock { $0 }
        #expect(early.isEmpty, "nothing is read before the window ends")
        guard early.isEmpty else { return window.open() }
        reader.read(device: "b", on: second) { _ in done.increment() }
        reader.read(device: "c", on: first) { _ in done.increment() }
        window.open()
        await done.reached(3)
        #expect(queries.batches.withLock { $0 } == [["a", "b", "c"]])
        #expect(waited.withLock { $0 } == [.milliseconds(8)])
    }

    /// A read that failed hands every device of its batch `nil`, not an empty backlog: the link
    /// then keeps its device among those that may have something stored.
    @Test func aFailedReadSaysSoToEveryDeviceOfItsBatch() async throws {
        let reader = BacklogReader(window: .zero) { _ in nil }
        let loop = NIOAsyncTestingEventLoop()
        // Whether each device was told the read failed.
        let failed = Mutex<[String: Bool]>([:])
        let done = Tally()
        for device in ["a", "b"] {
            reader.read(device: device, on: loop) { stored in
                failed.withLock { $0[device] = stored == nil }
                done.increment()
            }
        }
        await loop.run()
        await done.reached(2)
        #expect(failed.withLock { $0 } == ["a": true, "b": true])
    }
}
