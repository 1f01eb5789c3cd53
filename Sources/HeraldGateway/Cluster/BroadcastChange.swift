/// A message some node of a cluster just broadcast (PostgreSQL `NOTIFY` on ``channel``, the payload
/// its `apns-unique-id`, sent when it commits): every node reads it and sends it to the devices
/// subscribed to its channel there (docs/broadcast.md).
public enum BroadcastChange: ClusterChange {
    /// This message was broadcast.
    case message(uniqueID: String)
    /// Notifications could have been missed: look at the channels subscribed to here again.
    case everything

    /// The PostgreSQL notification channel.
    public static let channel = "herald_broadcast"

    /// For log lines.
    public static let subject = "the messages other nodes broadcast"

    /// The message a notification names.
    public init?(payload: String) {
        guard !payload.isEmpty else { return nil }
        self = .message(uniqueID: payload)
    }
}
