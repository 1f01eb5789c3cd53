import Foundation
import HeraldCore
import Synchronization

/// A fault-injection rule, set through the admin API, for people testing how their provider
/// handles APNs errors: pushes whose topic or token matches answer `reason` (any of the 32),
/// and/or answer only after `delayMilliseconds`.
public struct FaultRule: Sendable, Codable, Equatable {
    /// The rule's id (assigned when it is added).
    public var id: String
    /// Matches pushes to exactly this `apns-topic`; `nil` matches every topic.
    public var topic: String?
    /// Matches tokens whose hex (lowercase) starts with this; `nil` matches every token.
    public var tokenPrefix: String?
    /// The reason to answer; `nil` handles the push normally (after the delay).
    public var reason: APNsReason?
    /// How long to wait before answering.
    public var delayMilliseconds: Int?
    /// How many more pushes the rule applies to; `nil` = until removed.
    public var remaining: Int?

    enum CodingKeys: String, CodingKey { case id, topic, tokenPrefix, reason, delayMilliseconds, remaining }

    /// Decodes a rule; every field is optional (the id is assigned when the rule is added).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try c.decodeIfPresent(String.self, forKey: .id) ?? "",
            topic: try c.decodeIfPresent(String.self, forKey: .topic),
            tokenPrefix: try c.decodeIfPresent(String.self, forKey: .tokenPrefix),
            reason: try c.decodeIfPresent(APNsReason.self, forKey: .reason),
            delayMilliseconds: try c.decodeIfPresent(Int.self, forKey: .delayMilliseconds),
            remaining: try c.decodeIfPresent(Int.self, forKey: .remaining))
    }

    /// Creates a rule.
    public init(
        id: String = "", topic: String? = nil, tokenPrefix: String? = nil, reason: APNsReason? = nil,
        delayMilliseconds: Int? = nil, remaining: Int? = nil
    ) {
        self.id = id
        self.topic = topic
        self.tokenPrefix = tokenPrefix?.lowercased()
        self.reason = reason
        self.delayMilliseconds = delayMilliseconds
        self.remaining = remaining
    }
}

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
    }
    private let state = Mutex(State())
    private let count = Atomic<Int>(0)
    private let nextID = Atomic<Int>(1)
    /// Where the rules are shared, when they are.
    public let shared: (any FaultRuleStore)?

    /// No rules; `shared` when the rules are the cluster's.
    public init(shared: (any FaultRuleStore)? = nil) {
        self.shared = shared
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
            count.store(state.rules.count, ordering: .releasing)
            return state.rules.count != before
        }
    }

    /// Removes every rule.
    public func removeAll() {
        state.withLock { state in
            state.rules.removeAll()
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
            count.store(state.rules.count, ordering: .releasing)
        }
    }

    /// The rules.
    public var all: [FaultRule] { state.withLock { $0.rules } }

    /// The first rule matching a push, counting it against the rule's `remaining`.
    public func match(topic: String?, tokenHex: Substring) -> FaultRule? {
        if count.load(ordering: .acquiring) == 0 { return nil }
        return state.withLock { state in
            guard
                let index = state.rules.firstIndex(where: { rule in
                    (rule.topic == nil || rule.topic == topic)
                        && (rule.tokenPrefix.map { tokenHex.lowercased().hasPrefix($0) } ?? true)
                })
            else { return nil }
            let rule = state.rules[index]
            if let remaining = rule.remaining {
                if remaining <= 1 {
                    state.rules.remove(at: index)
                    state.usedUp.insert(rule.id)
                } else {
                    state.rules[index].remaining = remaining - 1
                }
                count.store(state.rules.count, ordering: .releasing)
            }
            return rule
        }
    }
}
