import Logging
import ServiceLifecycle
import Testing

@testable import HeraldRuntime

/// The log says why a process stops: a service that ends the group by ending before it was asked to
/// is named, with its error; a stop that was asked for logs no such line.
struct ServiceRunnerTests {
    /// Returns at once, before anything asked it to.
    struct EndsAtOnce: Service {
        func run() async throws {}
    }

    /// Throws at once.
    struct FailsAtOnce: Service {
        struct Broken: Error, CustomStringConvertible {
            var description: String { "the disk is gone" }
        }
        func run() async throws { throw Broken() }
    }

    /// Runs until the group stops gracefully.
    struct RunsUntilStopped: Service {
        func run() async throws { try await gracefulShutdown() }
    }

    /// Runs `services` with a listener that is listening already; the lines about stopping, and
    /// the error the run ended with.
    static func run(_ services: [any Service], stopper: ServiceRunner.Stopper? = nil) async -> (
        lines: [String], error: (any Error)?
    ) {
        let lines = LogLines()
        let logger = Logger(label: "test", factory: { _ in CapturingLogHandler(lines) })
        let listening = ServiceRunner.Readiness()
        listening.listening(on: 8080)
        var failure: (any Error)?
        do {
            try await ServiceRunner.run(
                services, signals: false, logger: logger, listening: listening, listener: "test API",
                address: "127.0.0.1:8080", stopper: stopper
            ) { _ in await stopper?.stop() }
        } catch {
            failure = error
        }
        return (lines.all.filter { $0.contains("stopping") }, failure)
    }

    @Test func aServiceThatEndsOnItsOwnIsNamed() async {
        let (lines, error) = await Self.run([RunsUntilStopped(), EndsAtOnce()])
        #expect(lines == ["EndsAtOnce ended on its own; stopping"])
        // The group says so too, less plainly: the run fails, naming the service (not its wrapper).
        #expect(error is ServiceGroupError)
        let message = error.map { "\($0)" } ?? ""
        #expect(message.contains("EndsAtOnce") && !message.contains("Announced"), "\(message)")
    }

    @Test func aServiceThatFailsIsNamedWithItsError() async {
        let (lines, error) = await Self.run([RunsUntilStopped(), FailsAtOnce()])
        #expect(lines == ["FailsAtOnce failed; stopping error=the disk is gone"])
        #expect(error is FailsAtOnce.Broken)
    }

    @Test func aStopThatWasAskedForLogsNoSuchLine() async {
        let (lines, error) = await Self.run([RunsUntilStopped(), RunsUntilStopped()], stopper: .init())
        #expect(lines.isEmpty)
        #expect(error == nil)
    }
}
