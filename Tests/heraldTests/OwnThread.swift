import Dispatch
import Testing

/// Runs each test of a suite on a thread of its own instead of one of Swift concurrency's.
///
/// The end-to-end tests are synchronous: they start processes and wait on their output, their exit
/// or a poll. Swift Testing calls a synchronous test on Swift concurrency's cooperative threads, and
/// on Linux there are only as many of those as cores (two on the CI machine) and a blocked one is
/// not replaced. Two such tests waiting at once used to hold both, and every test that serves
/// from inside the test process (a gateway answering curl, a device link) stalled until its
/// clients timed out: one CI run never finished. Under this trait the test's body runs on its
/// own serial Dispatch queue, whose thread Dispatch adds when it is needed.
struct OwnThreadTrait: TestTrait, SuiteTrait, TestScoping {
    /// Set on the queue a test runs on, so that a test can check where it runs.
    static let marker = DispatchSpecificKey<Bool>()

    var isRecursive: Bool { true }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(QueueExecutor()) { try await function() }
    }
}

extension Trait where Self == OwnThreadTrait {
    /// Each test runs on a thread of its own, not one of Swift concurrency's (see ``OwnThreadTrait``).
    static var ownThread: Self { Self() }
}

/// A task executor that runs its jobs on a serial Dispatch queue of its own.
private final class QueueExecutor: TaskExecutor {
    private let queue: DispatchQueue

    init() {
        queue = DispatchQueue(label: "herald.test.own-thread")
        queue.setSpecific(key: OwnThreadTrait.marker, value: true)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}

@Suite(.ownThread) struct OwnThreadTests {
    /// The trait does what the end-to-end suites rely on: a synchronous test's body runs on the
    /// trait's queue, and so does an asynchronous one's between its awaits.
    @Test func aSynchronousTestRunsOnItsOwnQueue() {
        #expect(DispatchQueue.getSpecific(key: OwnThreadTrait.marker) == true)
    }

    @Test func anAsynchronousTestRunsOnItsOwnQueue() async {
        await Task.yield()
        #expect(DispatchQueue.getSpecific(key: OwnThreadTrait.marker) == true)
    }
}

@Suite struct WithoutOwnThreadTests {
    /// And without it a test is on Swift concurrency's threads (so the check above can fail).
    @Test func aTestWithoutTheTraitIsNotOnTheQueue() {
        #expect(DispatchQueue.getSpecific(key: OwnThreadTrait.marker) == nil)
    }
}
