import Foundation
import GRDB
import GRDBSQLite
import HeraldCore

/// The embedded gateway store: SQLite through GRDB, in WAL mode, one transaction per call.
/// With `synchronous = FULL` (the default) a committed batch survives power loss; `NORMAL`
/// survives a killed process.
public final class SQLiteGatewayStore: GatewayStore, Sendable {
    let writer: any DatabaseWriter
    let records = StoreRecords()
    var encoder: JSONEncoder { records.encoder }

    /// How hard SQLite works to make a commit durable.
    public enum Durability: String, Sendable, CaseIterable {
        /// fsync on every commit: survives power loss.
        case full
        /// fsync at checkpoints: survives a killed process, not a power cut.
        case normal
    }

    let durability: Durability

    /// Opens (creating if needed) the database at `path`; `nil` opens an in-memory database.
    public init(path: String?, durability: Durability = .full) throws {
        self.durability = durability
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        let pragma = durability == .full ? "FULL" : "NORMAL"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(pragma)")
            // The delivery log's indexes take random (UUID) keys; a 64 MiB page cache keeps their
            // inner pages in memory instead of SQLite's 2 MiB default.
            try db.execute(sql: "PRAGMA cache_size = -65536")
            // A statement that may fail after writing some of its rows keeps the pages it changed
            // in a statement journal, which SQLite writes to a temporary file past 64 KiB: two
            // writes per page. The delivery log's many-row INSERT did (about half of the writer's
            // system calls under load) until it became OR FAIL, which needs none; any other such
            // statement keeps its journal in memory.
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
        }
        if let path {
            writer = try DatabasePool(path: path, configuration: configuration)
        } else {
            writer = try DatabaseQueue(configuration: configuration)
        }
        try Self.migrator.migrate(writer)
    }
}
