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

    /// Every change a payload names: a `claims` or `releases` batch names one per device. A batch
    /// is read from its bytes in one pass (every node reads every node's batches, one item per
    /// device that came online: 100,000 of them in a storm); an item that is not `device epoch` is
    /// skipped.
    public static func changes(payload: String) -> [ClaimChange] {
        var payload = payload
        return payload.withUTF8 { bytes in
            Self.batch(bytes) ?? Self(payload: String(decoding: bytes, as: UTF8.self)).map { [$0] } ?? []
        }
    }

    /// The items of a `claims` or `releases` payload; `nil` for any other payload.
    static func batch(_ bytes: UnsafeBufferPointer<UInt8>) -> [ClaimChange]? {
        let tab = UInt8(ascii: "\t")
        let released: Bool
        var index: Int
        if bytes.starts(with: "claims\t".utf8) {
            (released, index) = (false, 7)
        } else if bytes.starts(with: "releases\t".utf8) {
            (released, index) = (true, 9)
        } else {
            return nil
        }
        let nodeEnd = bytes[index...].firstIndex(of: tab) ?? bytes.endIndex
        guard nodeEnd > index else { return [] }
        let node = String(decoding: UnsafeBufferPointer(rebasing: bytes[index..<nodeEnd]), as: UTF8.self)
        var changes: [ClaimChange] = []
        changes.reserveCapacity(bytes.count / 24)
        index = nodeEnd
        while index < bytes.endIndex {
            index += 1  // the tab
            let end = bytes[index...].firstIndex(of: tab) ?? bytes.endIndex
            if let (device, epoch) = item(UnsafeBufferPointer(rebasing: bytes[index..<end])) {
                changes.append(
                    released
                        ? .released(device: device, node: node, epoch: epoch)
                        : .claimed(device: device, node: node, epoch: epoch))
            }
            index = end
        }
        return changes
    }

    /// `device epoch`: a non-empty device id, one space, a decimal epoch.
    private static func item(_ bytes: UnsafeBufferPointer<UInt8>) -> (String, Int64)? {
        guard let space = bytes.firstIndex(of: UInt8(ascii: " ")), space > 0, space + 1 < bytes.count else {
            return nil
        }
        var epoch: Int64 = 0
        for byte in bytes[(space + 1)...] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times, overflowTimes) = epoch.multipliedReportingOverflow(by: 10)
            let (sum, overflowSum) = times.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            guard !overflowTimes, !overflowSum else { return nil }
            epoch = sum
        }
        return (String(decoding: UnsafeBufferPointer(rebasing: bytes[..<space]), as: UTF8.self), epoch)
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
