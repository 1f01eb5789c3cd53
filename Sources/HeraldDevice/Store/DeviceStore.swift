import Foundation
import GRDB

/// Where the device keeps everything the engine knows. Each role keeps persistence behind a protocol.
public protocol DeviceStore: Sendable {
    /// Every app's record.
    func loadAll() async throws -> [AppRecord]
    /// Writes the changed records and deletes the removed apps in one transaction.
    func save(_ records: [AppRecord], removing removed: [String]) async throws
}

/// The embedded SQLite store (GRDB, WAL): one row per app, its record as JSON.
public final class SQLiteDeviceStore: DeviceStore {
    let writer: any DatabaseWriter

    /// Opens (creating if needed) the database at `path`.
    public init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        writer = try DatabasePool(path: path, configuration: configuration)  // DatabasePool uses WAL
        try Self.migrator.migrate(writer)
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "app") { t in
                t.primaryKey("bundleID", .text)
                t.column("record", .blob).notNull()
                t.column("updatedAt", .datetime).notNull()
            }
        }
        return migrator
    }

    /// Reads every app's record.
    public func loadAll() async throws -> [AppRecord] {
        let rows = try await writer.read { db in
            try Data.fetchAll(db, sql: "SELECT record FROM app ORDER BY bundleID")
        }
        let decoder = JSONDecoder()
        return try rows.map { try decoder.decode(AppRecord.self, from: $0) }
    }

    /// Writes records and deletes removed apps atomically.
    public func save(_ records: [AppRecord], removing removed: [String]) async throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let encoded = try records.map { ($0.app.bundleID, try encoder.encode($0)) }
        try await writer.write { db in
            for (id, data) in encoded {
                try db.execute(
                    sql: "INSERT INTO app (bundleID, record, updatedAt) VALUES (?, ?, ?) "
                        + "ON CONFLICT(bundleID) DO UPDATE SET record = excluded.record, updatedAt = excluded.updatedAt",
                    arguments: [id, data, Date()])
            }
            for id in removed { try db.execute(sql: "DELETE FROM app WHERE bundleID = ?", arguments: [id]) }
        }
    }

    /// The journal mode in force (`wal`).
    public func journalMode() async throws -> String {
        try await writer.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "" }
    }
}

/// The app records to write and the apps to delete, taken from the engine in one piece
/// (``DeviceEngine/takeChanges()``).
public struct DeviceChanges: Sendable {
    /// Records of apps that changed, in bundle-id order.
    public var records: [AppRecord]
    /// Apps removed, in bundle-id order.
    public var removed: [String]

    /// Nothing to write.
    public var isEmpty: Bool { records.isEmpty && removed.isEmpty }
}

extension DeviceStore {
    /// Writes what changed, atomically: the one way the engine's state reaches the store.
    public func save(_ changes: DeviceChanges) async throws {
        guard !changes.isEmpty else { return }
        try await save(changes.records, removing: changes.removed)
    }
}
