import Foundation
import HeraldCore
import Synchronization
import Testing

@testable import HeraldGateway

/// The fault rules beyond a reason and a delay: latencies drawn from distributions, probabilities,
/// rules for a connection's Nth push, refused handshakes and Apple's per-device limit; and the checks
/// that name what is wrong with a rule.
@Suite struct ConnectionFaultRuleTests {
    /// A fixed sequence of "random" draws, repeated.
    final class Draws: Sendable {
        let values: [Double]
        let next = Mutex(0)
        init(_ values: [Double]) { self.values = values }
        func draw() -> Double {
            next.withLock { n in
                defer { n += 1 }; return values[n % values.count]
            }
        }
    }

    @Test func latenciesFollowTheirDistribution() {
        #expect(FaultLatency(distribution: .fixed, milliseconds: 250).sample { 0.9 } == 250)
        let uniform = FaultLatency(distribution: .uniform, min: 100, max: 300)
        #expect(uniform.sample { 0 } == 100 && uniform.sample { 0.5 } == 200)
        // Log-normal: median p50 and 99th percentile p99, checked over 20,000 draws of a seeded generator.
        var generator = SeededGenerator(seed: 42)
        let lognormal = FaultLatency(distribution: .lognormal, p50: 80, p99: 900)
        let samples = (0..<20_000).map { _ in lognormal.sample { Double.random(in: 0..<1, using: &generator) } }
            .sorted()
        let median = samples[10_000]
        let p99 = samples[19_800]
        #expect(abs(median - 80) < 80 * 0.05, "median \(median)")
        #expect(abs(p99 - 900) < 900 * 0.12, "p99 \(p99)")
        #expect(samples.allSatisfy { $0 > 0 && $0.isFinite })
        // A tail past ten minutes is cut there.
        let wild = FaultLatency(distribution: .lognormal, p50: 1000, p99: 600_000)
        #expect(wild.sample { 0.999_999_999 } <= FaultLatency.longest && wild.sample { 0.5 } >= 0)
    }

    @Test func probabilityAfterStreamsAndTheDrawnDelay() {
        let draws = Draws([0.3, 0.8])
        let faults = FaultInjector(random: { draws.draw() })
        var half = FaultRule(reason: .shutdown)
        half.probability = 0.5
        faults.add(half)
        // Draws 0.3 (fires), 0.8 (does not), 0.3 (fires).
        #expect(faults.match(topic: "t", tokenHex: "00")?.rule.reason == .shutdown)
        #expect(faults.match(topic: "t", tokenHex: "00") == nil)
        #expect(faults.match(topic: "t", tokenHex: "00")?.rule.reason == .shutdown)
        faults.removeAll()
        var goaway = FaultRule()
        goaway.connection = .goaway
        goaway.afterStreams = 3
        goaway.latency = FaultLatency(distribution: .uniform, min: 10, max: 20)
        faults.add(goaway)
        #expect(faults.match(topic: "t", tokenHex: "00", request: 2) == nil)
        let fired = faults.match(topic: "t", tokenHex: "00", request: 3)
        #expect(fired?.rule.connectionAction == .goAway(errorCode: 0, debugData: #"{"reason":"Shutdown"}"#))
        #expect(fired?.delay.map { (10...20).contains($0) } == true)
    }

    @Test func handshakesAndDeviceLimitsAreTheirOwnMatches() {
        let faults = FaultInjector()
        var refuse = FaultRule(remaining: 1)
        refuse.connection = .refuseHandshake
        faults.add(refuse)
        #expect(faults.match(topic: "t", tokenHex: "00") == nil, "not a push's rule")
        #expect(faults.refusesHandshake() != nil)
        #expect(faults.refusesHandshake() == nil, "used up")

        var limit = FaultRule(topic: "t")
        limit.deviceLimit = 2
        limit.windowSeconds = 10
        faults.add(limit)
        let start = Date(timeIntervalSince1970: 1000)
        #expect(faults.match(topic: "t", tokenHex: "00") == nil, "a device limit answers only when over")
        #expect(faults.overDeviceLimit(device: "d", topic: "t", tokenHex: "00", now: start) == nil)
        #expect(faults.overDeviceLimit(device: "d", topic: "t", tokenHex: "00", now: start + 1) == nil)
        #expect(faults.overDeviceLimit(device: "d", topic: "t", tokenHex: "00", now: start + 2) != nil)
        #expect(faults.overDeviceLimit(device: "e", topic: "t", tokenHex: "00", now: start + 2) == nil, "per device")
        #expect(faults.overDeviceLimit(device: "d", topic: "other", tokenHex: "00", now: start + 2) == nil)
        // The window slides: ten seconds after the first, one more fits.
        #expect(faults.overDeviceLimit(device: "d", topic: "t", tokenHex: "00", now: start + 10) == nil)
        #expect(faults.overDeviceLimit(device: "d", topic: "t", tokenHex: "00", now: start + 10.5) != nil)
    }

    @Test func aRuleThatCannotWorkIsNamedByItsField() {
        func problem(_ change: (inout FaultRule) -> Void) -> String? {
            var rule = FaultRule()
            change(&rule)
            return rule.problem
        }
        #expect(
            problem { _ in }
                == "reason: a rule does something: a reason, a delay or latency, a connection fault or a device limit")
        #expect(
            problem {
                $0.reason = .badTopic; $0.probability = 1.5
            } == "probability: from 0 to 1")
        #expect(
            problem { $0.latency = FaultLatency(distribution: .uniform, min: 5, max: 1) }
                == "latency.max: at least latency.min")
        #expect(
            problem { $0.latency = FaultLatency(distribution: .lognormal, p50: 0, p99: 5) }
                == "latency.p50: more than 0 milliseconds")
        #expect(
            problem {
                $0.reason = .badTopic; $0.afterStreams = 2
            } == "afterStreams: only with connection goaway")
        #expect(
            problem {
                $0.connection = .goaway; $0.goawayError = "OOPS"
            }?.hasPrefix("goawayError: one of") == true)
        #expect(
            problem {
                $0.connection = .close; $0.maxConcurrentStreams = 1
            } == "maxConcurrentStreams: only with connection lower-streams")
        #expect(
            problem {
                $0.connection = .refuseHandshake; $0.tokenPrefix = "ab"
            }?.hasPrefix("topic:") == true)
        #expect(problem { $0.deviceLimit = 3 } == "windowSeconds: more than 0, with deviceLimit")
        #expect(
            problem {
                $0.deviceLimit = 3; $0.windowSeconds = 1; $0.reason = .badTopic
            }?.hasPrefix("deviceLimit:") == true)
        #expect(problem { $0.delayMilliseconds = 700_000 } == "delayMilliseconds: from 0 to 600000 (10 minutes)")
        #expect(
            problem { $0.latency = FaultLatency(distribution: .fixed, milliseconds: 1e13) }
                == "latency.milliseconds: a number of milliseconds, from 0 to 600000 (10 minutes)")
        #expect(
            problem {
                $0.reason = .badTopic; $0.goawayReason = "x"
            } == "goawayReason: only with connection goaway")
        #expect(problem { $0.connection = .lowerStreams } == nil)
        #expect(
            problem {
                $0.deviceLimit = 3; $0.windowSeconds = 60
            } == nil)
    }
}
