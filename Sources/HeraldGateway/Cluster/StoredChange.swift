/// A device for which some node just stored pushes, as the nodes of a cluster tell each other
/// (PostgreSQL `NOTIFY` on ``channel``, the payload the device id, sent when the storing
/// transaction commits): the node that holds the device's link sends them (docs/cluster.md).
public enum StoredChange: ClusterChange {
    /// Pushes were stored for this device.
    case device(String)
    /// Look at every device held here (after notifications could have been missed).
    case everything

    /// The PostgreSQL notification channel.
    public static let channel = "herald_stored"

    /// For log lines.
    public static let subject = "the pushes other nodes stored"

    /// The device a notification names.
    public init?(payload: String) {
        guard !payload.isEmpty else { return nil }
        self = .device(payload)
    }
}
