/// The fault rules changed in the shared store (PostgreSQL `NOTIFY` on ``channel``, sent when the
/// change commits): every node reads the list again (``FaultInjector/replace(with:)``).
public enum FaultChange: ClusterChange {
    /// The list changed; there is nothing finer to say.
    case everything

    /// The PostgreSQL notification channel.
    public static let channel = "herald_faults"

    /// For log lines.
    public static let subject = "the fault rules' changes"

    /// Any payload: the list changed.
    public init?(payload: String) { self = .everything }
}
