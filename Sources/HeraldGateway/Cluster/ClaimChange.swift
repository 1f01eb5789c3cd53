/// Where device links are held, as the nodes of a cluster tell each other (PostgreSQL `NOTIFY` on
/// ``channel``, sent when a claim or a release commits): a node that forwards pushes keeps its
/// idea of who holds which device up to date with them (``DeviceHolders``, docs/cluster.md).
///
/// Payloads: `claim<TAB>device<TAB>node<TAB>epoch`, `release<TAB>device<TAB>node<TAB>epoch` (sent by
/// nodes of an earlier version; this one releases in batches),
/// `claims<TAB>node<TAB>device epoch<TAB>device epoch…` for the claims one statement made (many links
/// opened at once: a node takes its devices' claims in batches), `releases<TAB>node<TAB>device epoch…`
/// likewise for the releases of many links closed at once, and `nodes` when a node starts,
/// stops or moves (its claims are dropped wholesale then).
public enum ClaimChange: ClusterChange {
    /// `node` claimed `device`'s link with connection epoch `epoch`.
    case claimed(device: String, node: String, epoch: Int64)
    /// `node` released the claim it made with `epoch` (the link closed).
    case released(device: String, node: String, epoch: Int64)
    /// A node registered, changed its address or stopped.
    case nodes
    /// Forget everything known (notifications could have been missed).
    case everything

    /// The PostgreSQL notification channel.
    public static let channel = "herald_claims"

    /// For log lines.
    public static let subject = "where devices are linked"

    /// Every change a payload names: a `claims` or `releases` batch names one per device.
    public static func changes(payload: String) -> [ClaimChange] {
        let released: Bool
        if payload.hasPrefix("claims\t") {
            released = false
        } else if payload.hasPrefix("releases\t") {
            released = true
        } else {
            return Self(payload: payload).map { [$0] } ?? []
        }
        let fields = payload.split(separator: "\t", omittingEmptySubsequences: false)
        guard fields.count >= 3, !fields[1].isEmpty else { return [] }
        let node = String(fields[1])
        return fields.dropFirst(2).compactMap { item in
            let parts = item.split(separator: " ")
            guard parts.count == 2, !parts[0].isEmpty, let epoch = Int64(parts[1]) else { return nil }
            let device = String(parts[0])
            return released
                ? .released(device: device, node: node, epoch: epoch)
                : .claimed(device: device, node: node, epoch: epoch)
        }
    }

    /// The change a payload names; `nil` for one this binary does not know.
    public init?(payload: String) {
        if payload == "nodes" {
            self = .nodes
            return
        }
        let fields = payload.split(separator: "\t", omittingEmptySubsequences: false)
        guard fields.count == 4, !fields[1].isEmpty, !fields[2].isEmpty, let epoch = Int64(fields[3]) else {
            return nil
        }
        switch fields[0] {
        case "claim": self = .claimed(device: String(fields[1]), node: String(fields[2]), epoch: epoch)
        case "release": self = .released(device: String(fields[1]), node: String(fields[2]), epoch: epoch)
        default: return nil
        }
    }
}
