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
}
