import Dispatch
import HeraldNIO
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// What crosses between event loops in batches (``LoopMailbox``): everything posted arrives, in
/// the order posted, in one task for all that waited, and before what the poster ran after it.
@Suite struct LoopMailboxTests {
    final class Item: Sendable {
        let number: Int
        init(_ number: Int) { self.number = number }
    }

    @Test func whatWaitsArrivesInOrderInOneTaskBeforeWhatWasRunAfterIt() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let log = Mutex<[String]>([])
        let mailbox = LoopMailbox<Item>(loop: loop) { items in
            loop.preconditionInEventLoop()
            log.withLock { $0.append("batch of \(items.count): \(items.map(\.number))") }
        }
        // The loop is held until everything is posted: all of it waits in the mailbox.
        let gate = DispatchSemaphore(value: 0)
        loop.execute { gate.wait() }
        for number in 1...5 { mailbox.post(Item(number)) }
        let after = loop.makePromise(of: Void.self)
        loop.execute {
            log.withLock { $0.append("after") }
            after.succeed()
        }
        gate.signal()
        try await after.futureResult.get()
        #expect(log.withLock { $0 } == ["batch of 5: [1, 2, 3, 4, 5]", "after"])

        // Posted once the batch was taken: a task of its own.
        mailbox.post(Item(6))
        try await loop.submit {}.get()
        #expect(log.withLock { $0.last } == "batch of 1: [6]")
        try await group.shutdownGracefully()
    }
}
