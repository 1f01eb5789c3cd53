import Foundation
import HeraldCore
import Synchronization
import Testing

@testable import HeraldGateway
@testable import HeraldProvider

/// HeraldProvider against the gateway's connection faults (docs/admin-api.md): what APNs does to
/// real providers, and what the client does about each: retry, back off, open a new connection.
@Suite(.serialized) struct ConnectionFaultTests {
    func rule(_ change: (inout FaultRule) -> Void) -> FaultRule {
        var rule = FaultRule()
        change(&rule)
        #expect(rule.problem == nil, "\(rule)")
        return rule
    }

    @Test func aGoAwayAfterSomeStreamsSendsTheRestOnANewConnection() async throws {
        let g = try await RunningGateway.start()
        let client = try g.client(retry: APNsRetryPolicy(maximumAttempts: 3))
        try await with(g, client) { client async throws in
            // The connection's 5th push gets its answer, then GOAWAY: what the client sent after it
            // was not taken, and goes on a new connection without counting as an attempt.
            g.gateway.faults.add(
                rule {
                    $0.connection = .goaway
                    $0.afterStreams = 5
                    $0.remaining = 1
                })
            let tokens = try await g.testbed.tokens(for: RunningGateway.bundle, devices: 40)
            let tally = await client.send(alert("bulk"), to: tokens, concurrency: 20)
            #expect(tally.done == 40 && tally.answers["200"] == 40, "\(tally.answers)")
            #expect(g.gateway.faults.all.isEmpty, "the rule fired")
        }
    }

    @Test func aClosedConnectionIsRetriedOnANewOne() async throws {
        let g = try await RunningGateway.start()
        let client = try g.client(retry: APNsRetryPolicy(maximumAttempts: 3))
        try await with(g, client) { client async throws in
            g.gateway.faults.add(
                rule {
                    $0.connection = .close
                    $0.remaining = 1
                })
            let delivery = try await client.send(alert(), to: g.token)
            #expect(delivery.attempts == 2)
        }
    }

    @Test func aRefusedHandshakeIsRetriedAndNeverRetriedPastThePolicy() async throws {
        let g = try await RunningGateway.start()
        let client = try g.client(retry: APNsRetryPolicy(maximumAttempts: 2))
        try await with(g, client) { client async throws in
            g.gateway.faults.add(
                rule {
                    $0.connection = .refuseHandshake
                    $0.remaining = 1
                })
            #expect(try await client.send(alert(), to: g.token).attempts == 2)
        }
        let g2 = try await RunningGateway.start()
        let once = try g2.client(retry: .never)
        try await with(g2, once) { client async throws in
            g2.gateway.faults.add(
                rule {
                    $0.connection = .refuseHandshake
                    $0.remaining = 1
                })
            await #expect(throws: APNsClientError.self) { _ = try await client.send(alert(), to: g2.token) }
        }
    }

    @Test func loweredConcurrentStreamsAreRespected() async throws {
        let g = try await RunningGateway.start()
        let client = try g.client(retry: .never)
        try await with(g, client) { client async throws in
            // After the first push the connection allows one stream at a time; a bulk send over it
            // still gets every answer (the client queues what the server does not allow yet).
            g.gateway.faults.add(
                rule {
                    $0.connection = .lowerStreams
                    $0.maxConcurrentStreams = 1
                    $0.remaining = 1
                })
            _ = try await client.send(alert(), to: g.token)
            let tokens = try await g.testbed.tokens(for: RunningGateway.bundle, devices: 30)
            let tally = await client.send(alert("one at a time"), to: tokens, concurrency: 30)
            #expect(tally.done == 30 && tally.answers["200"] == 30, "\(tally.answers)")
        }
    }

    @Test func aDrainAnswers503AndGoAwayAndTheClientMovesOn() async throws {
        let g = try await RunningGateway.start()
        let client = try g.client(retry: APNsRetryPolicy(maximumAttempts: 3))
        try await with(g, client) { client async throws in
            g.gateway.faults.add(
                rule {
                    $0.reason = .shutdown
                    $0.connection = .goaway
                    $0.remaining = 1
                })
            #expect(try await client.send(alert(), to: g.token).attempts == 2)
        }
    }

    @Test func theDeviceLimitAnswers429UntilItsWindowPasses() async throws {
        let g = try await RunningGateway.start()
        let waits = Mutex<[Duration]>([])
        let client = try g.client(
            retry: APNsRetryPolicy(maximumAttempts: 3), sleep: { d in waits.withLock { $0.append(d) } })
        try await with(g, client) { client async throws in
            g.gateway.faults.add(
                rule {
                    $0.deviceLimit = 2
                    $0.windowSeconds = 3600
                })
            for _ in 0..<2 { _ = try await client.send(alert(), to: g.token) }
            // The third within the hour: 429, retried with backoff, then the answer.
            await #expect {
                _ = try await client.send(alert(), to: g.token)
            } throws: { error in
                (error as? APNsError)?.reason == .known(.tooManyRequests)
            }
            #expect(waits.withLock { $0.count } == 2, "backed off twice")
            // Another device is not limited.
            let other = try await g.testbed.token(for: RunningGateway.bundle, device: "another")
            #expect(try await client.send(alert(), to: other).attempts == 1)
        }
    }

    @Test func latencyBeyondTheDeadlineEndsTheSend() async throws {
        let g = try await RunningGateway.start()
        let client = try g.client(retry: .never, timeout: .milliseconds(300))
        try await with(g, client) { client async throws in
            g.gateway.faults.add(
                rule {
                    $0.latency = FaultLatency(distribution: .fixed, milliseconds: 2000)
                    $0.remaining = 1
                })
            await #expect(throws: APNsClientError.self) { _ = try await client.send(alert(), to: g.token) }
        }
    }
}
