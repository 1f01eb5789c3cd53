import Foundation

/// One record of the directory that changed in the shared store, as the nodes of a cluster tell
/// each other (PostgreSQL `NOTIFY` on ``channel``, payload `kind<TAB>id`): whoever caches the
/// directory re-reads that record. ``everything`` asks for the whole directory again (after the
/// notifications could have been missed).
public enum DirectoryChange: ClusterChange {
    /// A team by id.
    case team(String)
    /// A provider key by key id.
    case key(String)
    /// An app by bundle id.
    case app(String)
    /// A device by id, with every registration of its apps.
    case device(String)
    /// The whole directory.
    case everything

    /// The kinds of record, as the payload names them.
    public enum Kind: String, Sendable {
        /// ``DirectoryChange/team(_:)``.
        case team
        /// ``DirectoryChange/key(_:)``.
        case key
        /// ``DirectoryChange/app(_:)``.
        case app
        /// ``DirectoryChange/device(_:)``.
        case device
    }

    /// The PostgreSQL notification channel.
    public static let channel = "herald_directory"

    /// For log lines.
    public static let subject = "the directory's changes"

    /// The change a notification's payload names; `nil` for a payload this binary does not know
    /// (a newer node's), which is ignored.
    public init?(payload: String) {
        guard let tab = payload.firstIndex(of: "\t"), let kind = Kind(rawValue: String(payload[..<tab])) else {
            return nil
        }
        let id = String(payload[payload.index(after: tab)...])
        switch kind {
        case .team: self = .team(id)
        case .key: self = .key(id)
        case .app: self = .app(id)
        case .device: self = .device(id)
        }
    }
}

/// What the store holds now for some changed records: each record asked for that is not in
/// `found` is gone.
public struct DirectoryReload: Sendable {
    /// The records asked for.
    public var changes: Set<DirectoryChange>
    /// Those that exist (for a device, its registrations too; for ``DirectoryChange/everything``,
    /// the whole directory).
    public var found: DirectorySnapshot

    /// A reload of `changes` that found `found`.
    public init(changes: Set<DirectoryChange>, found: DirectorySnapshot) {
        self.changes = changes
        self.found = found
    }
}
