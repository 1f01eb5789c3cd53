/// What the nodes of a cluster tell each other on one PostgreSQL `NOTIFY` channel.
public protocol ClusterChange: Hashable, Sendable {
    /// The notification channel.
    static var channel: String { get }
    /// The change that stands for all of them: applied whenever listening (re)starts, since what
    /// changed while no one listened was not heard.
    static var everything: Self { get }
    /// What this channel is about, for log lines ("the directory's changes").
    static var subject: String { get }
    /// The change a notification's payload names; `nil` for one this binary does not know (a newer
    /// node's), which is ignored.
    init?(payload: String)
    /// Every change a payload names (a batch may name many); by default the one ``init(payload:)`` reads.
    static func changes(payload: String) -> [Self]
}

extension ClusterChange {
    /// The changes one notification's payload names: most payloads name one, a few (``ClaimChange``'s
    /// batches) many; none for a payload this binary does not know.
    public static func changes(payload: String) -> [Self] {
        Self(payload: payload).map { [$0] } ?? []
    }
}
