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

/// The active fault rules. Checking costs one atomic load while there are none.
public final class FaultInjector: Sendable {
    private let rules = Mutex<[FaultRule]>([])
    private let count = Atomic<Int>(0)
    private let nextID = Atomic<Int>(1)

    /// No rules.
    public init() {}

    /// Adds a rule and returns it with its id.
    @discardableResult
    public func add(_ rule: FaultRule) -> FaultRule {
        var rule = rule
        if rule.id.isEmpty { rule.id = "fault-\(nextID.wrappingAdd(1, ordering: .relaxed).oldValue)" }
        let stored = rule
        rules.withLock { list in
            list.removeAll { $0.id == stored.id }
            list.append(stored)
            count.store(list.count, ordering: .releasing)
        }
        return rule
    }

    /// Removes a rule; `false` if there was none with that id.
    @discardableResult
    public func remove(id: String) -> Bool {
        rules.withLock { list in
            let before = list.count
            list.removeAll { $0.id == id }
            count.store(list.count, ordering: .releasing)
            return list.count != before
        }
    }

    /// Removes every rule.
    public func removeAll() {
        rules.withLock { list in
            list.removeAll()
            count.store(0, ordering: .releasing)
        }
    }

    /// The rules.
    public var all: [FaultRule] { rules.withLock { $0 } }

    /// The first rule matching a push, counting it against the rule's `remaining`.
    public func match(topic: String?, tokenHex: Substring) -> FaultRule? {
        if count.load(ordering: .acquiring) == 0 { return nil }
        return rules.withLock { list in
            guard
                let index = list.firstIndex(where: { rule in
                    (rule.topic == nil || rule.topic == topic)
                        && (rule.tokenPrefix.map { tokenHex.lowercased().hasPrefix($0) } ?? true)
                })
            else { return nil }
            let rule = list[index]
            if let remaining = rule.remaining {
                if remaining <= 1 {
                    list.remove(at: index)
                } else {
                    list[index].remaining = remaining - 1
                }
                count.store(list.count, ordering: .releasing)
            }
            return rule
        }
    }
}
