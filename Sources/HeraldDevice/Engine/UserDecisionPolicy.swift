import HeraldCore

/// Answers the first authorization request of an app, as the device's user would.
public protocol UserDecisionPolicy: Sendable {
    /// Whether the user allows `app` to use `options`.
    func decide(app: String, options: AuthorizationOptions) -> Bool
}

/// A policy with a fixed answer.
public struct FixedDecision: UserDecisionPolicy {
    public var allow: Bool
    /// Creates the policy.
    public init(allow: Bool) { self.allow = allow }
    /// Returns the fixed answer.
    public func decide(app: String, options: AuthorizationOptions) -> Bool { allow }
}
