import Foundation
import HeraldCore
import Synchronization

/// Where fault rules live when several nodes share them (the PostgreSQL store): each node's
/// ``FaultInjector`` writes there and is told of the others' changes (docs/cluster.md).
public protocol FaultRuleStore: Sendable {
    /// Adds or replaces a rule.
    func saveFaultRule(_ rule: FaultRule) async throws
    /// Removes a rule; `false` if there was none with that id.
    func deleteFaultRule(id: String) async throws -> Bool
    /// Removes every rule.
    func deleteAllFaultRules() async throws
    /// Every rule, oldest first.
    func faultRules() async throws -> [FaultRule]
}

/// The active fault rules. Checking costs one atomic load while there are none.
///
/// With a ``FaultRuleStore`` (several nodes), the admin API's changes go through it
/// (``addEverywhere(_:)`` and the like) and every node takes the list the store holds
/// (``replace(with:)``). A rule's `remaining` then counts on each node separately: the store keeps
/// the number it was added with, and a node that used a rule up does not take it back.
public final class FaultInjector: Sendable {
    private struct State {
        var rules: [FaultRule] = []
        /// Rules this node used up: a shared list that still has them does not bring them back.
        var usedUp: Set<String> = []
        /// For device-limit rules: when each device's recent pushes came, by rule id and device.
        var recent: [String: [String: [Date]]] = [:]
        /// Rules' random draws: injectable, so that tests draw what they choose.
        var random: @Sendable () -> Double
    }
    private let state: Mutex<State>
    private let count = Atomic<Int>(0)
    private let nextID = Atomic<Int>(1)
    /// Where the rules are shared, when they are.
    public let shared: (any FaultRuleStore)?

    /// No rules; `shared` when the rules are the cluster's. `random` draws uniformly from [0, 1)
    /// for probabilities and latencies.
    public init(
        shared: (any FaultRuleStore)? = nil, random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.shared = shared
        self.state = Mutex(State(random: random))
    }

    /// Adds a rule and returns it with its id.
    @discardableResult
    public func add(_ rule: FaultRule) -> FaultRule {
        var rule = rule
        if rule.id.isEmpty { rule.id = "fault-\(nextID.wrappingAdd(1, ordering: .relaxed).oldValue)" }
        let stored = rule
        state.withLock { state in
            state.rules.removeAll { $0.id == stored.id }
            state.rules.append(stored)
            state.usedUp.remove(stored.id)
            count.store(state.rules.count, ordering: .releasing)
        }
        return rule
    }

    /// Removes a rule; `false` if there was none with that id.
    @discardableResult
    public func remove(id: String) -> Bool {
        state.withLock { state in
            let before = state.rules.count
            state.rules.removeAll { $0.id == id }
            state.recent[id] = nil
            count.store(state.rules.count, ordering: .releasing)
            return state.rules.count != before
        }
    }

    /// Removes every rule.
    public func removeAll() {
        state.withLock { state in
            state.rules.removeAll()
            state.recent.removeAll()
            count.store(0, ordering: .releasing)
        }
    }

    /// ``add(_:)`` on every node: written to the shared store first (a rule the store did not take
    /// is not added here either). Ids are random there, so that two nodes never give the same one.
    public func addEverywhere(_ rule: FaultRule) async throws -> FaultRule {
        guard let shared else { return add(rule) }
        var rule = rule
        if rule.id.isEmpty { rule.id = "fault-" + String(UInt32.random(in: .min ... .max), radix: 16) }
        try await shared.saveFaultRule(rule)
        return add(rule)
    }

    /// ``remove(id:)`` on every node.
    public func removeEverywhere(id: String) async throws -> Bool {
        guard let shared else { return remove(id: id) }
        let removed = try await shared.deleteFaultRule(id: id)
        return remove(id: id) || removed
    }

    /// ``removeAll()`` on every node.
    public func removeAllEverywhere() async throws {
        try await shared?.deleteAllFaultRules()
        removeAll()
    }

    /// Takes the shared list: each rule this node has keeps its own `remaining`, and one it used
    /// up stays gone.
    public func replace(with rules: [FaultRule]) {
        state.withLock { state in
            let here = Dictionary(state.rules.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            state.rules = rules.filter { !state.usedUp.contains($0.id) }.map { rule in
                var rule = rule
                if let local = here[rule.id] { rule.remaining = local.remaining }
                return rule
            }
            // Forget what the shared list no longer has.
            state.usedUp.formIntersection(rules.map(\.id))
            let kept = Set(rules.map(\.id))
            state.recent = state.recent.filter { kept.contains($0.key) }
            count.store(state.rules.count, ordering: .releasing)
        }
    }

    /// The rules.
    public var all: [FaultRule] { state.withLock { $0.rules } }

    /// What a matching rule does to one push: the rule, and the delay it drew (milliseconds).
    public struct Fired: Sendable {
        /// The rule.
        public var rule: FaultRule
        /// How long to hold the answer, in milliseconds, when the rule holds it.
        public var delay: Double?
    }

    /// The first rule that matches a push (the `request`th on its connection, counting from 1) and
    /// fires (its probability drawn), counted against its `remaining`. Device limits and refused
    /// handshakes are not matched here.
    public func match(topic: String?, tokenHex: Substring, request: Int = 1) -> Fired? {
        if count.load(ordering: .acquiring) == 0 { return nil }
        return state.withLock { state in
            for index in state.rules.indices {
                let rule = state.rules[index]
                guard rule.deviceLimit == nil, rule.connection != .refuseHandshake,
                    rule.topic == nil || rule.topic == topic,
                    rule.tokenPrefix.map({ tokenHex.lowercased().hasPrefix($0) }) ?? true,
                    request >= rule.afterStreams ?? 1
                else { continue }
                if let probability = rule.probability, state.random() >= probability { continue }
                let delay = rule.delay(state.random)
                Self.use(index, in: &state, count: count)
                return Fired(rule: rule, delay: delay)
            }
            return nil
        }
    }

    /// Whether a new TLS connection's handshake is to be refused (a `refuse-handshake` rule fires).
    public func refusesHandshake() -> FaultRule? {
        if count.load(ordering: .acquiring) == 0 { return nil }
        return state.withLock { state in
            for index in state.rules.indices where state.rules[index].connection == .refuseHandshake {
                let rule = state.rules[index]
                if let probability = rule.probability, state.random() >= probability { continue }
                Self.use(index, in: &state, count: count)
                return rule
            }
            return nil
        }
    }

    /// Apple's per-device limit: the first device-limit rule matching a push to `device` under which
    /// the device already got its limit of pushes within the window (the push is then refused and not
    /// counted); otherwise the push is counted under each such rule, and `nil`.
    public func overDeviceLimit(device: String, topic: String, tokenHex: Substring, now: Date) -> FaultRule? {
        if count.load(ordering: .acquiring) == 0 { return nil }
        return state.withLock { state in
            var counted: [Int] = []
            for index in state.rules.indices {
                let rule = state.rules[index]
                guard let limit = rule.deviceLimit, let window = rule.windowSeconds,
                    rule.topic == nil || rule.topic == topic,
                    rule.tokenPrefix.map({ tokenHex.lowercased().hasPrefix($0) }) ?? true
                else { continue }
                var times = state.recent[rule.id, default: [:]][device, default: []]
                times.removeAll { now.timeIntervalSince($0) >= window }
                state.recent[rule.id, default: [:]][device] = times
                if times.count >= limit {
                    if let probability = rule.probability, state.random() >= probability { continue }
                    Self.use(index, in: &state, count: count)
                    return rule
                }
                counted.append(index)
            }
            for index in counted { state.recent[state.rules[index].id, default: [:]][device, default: []].append(now) }
            return nil
        }
    }

    /// Counts a firing against rule `index`'s `remaining`, removing it when used up.
    private static func use(_ index: Int, in state: inout State, count: borrowing Atomic<Int>) {
        guard let remaining = state.rules[index].remaining else { return }
        if remaining <= 1 {
            let rule = state.rules.remove(at: index)
            state.usedUp.insert(rule.id)
            state.recent[rule.id] = nil
        } else {
            state.rules[index].remaining = remaining - 1
        }
        count.store(state.rules.count, ordering: .releasing)
    }
}
