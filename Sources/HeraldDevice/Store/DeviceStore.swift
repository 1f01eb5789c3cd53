import Foundation
import GRDB
import HeraldCore

/// Where the device keeps everything the engine knows. Each role keeps persistence behind a protocol.
public protocol DeviceStore: Sendable {
    /// Everything kept: the apps' records with their notifications, the device's state, and the
    /// `apns-id`s of the newest pushes taken.
    func load() async throws -> DeviceSnapshot
    /// Writes what changed in one transaction.
    func save(_ changes: DeviceChanges) async throws
}

/// What a ``DeviceStore`` holds, as loaded.
public struct DeviceSnapshot: Sendable {
    /// Every app's record, by bundle id, with its delivered and held notifications.
    public var records: [AppRecord]
    /// The Focus modes, Scheduled Summary and summaries; `nil` when never saved.
    public var device: DeviceState?
    /// The `apns-id`s of the newest pushes taken, oldest first (at most ``SQLiteDeviceStore/takenLimit``).
    public var taken: [String]
}

/// The embedded SQLite store (GRDB, WAL): one row per app with its record as JSON, one row per
/// delivered or held notification, the device's state, and the `apns-id`s taken. A push costs a row
/// or two, whatever the device already keeps.
public final class SQLiteDeviceStore: DeviceStore {
    let writer: any DatabaseWriter
    /// How many `apns-id`s of pushes taken are kept, at least (a push sent again after a crash is known
    /// by them).
    public static let takenLimit = 20_000

    /// Opens (creating if needed) the database at `path`, bringing an older one's schema up to date.
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
        migrator.registerMigration("v2-notifications") { db in
            // Notifications leave the app's record for rows of their own, so that a push writes one
            // row instead of the whole list; the device's state and the pushes taken get tables.
            try db.create(table: "notification") { t in
                t.column("bundleID", .text).notNull()
                t.column("held", .integer).notNull()
                t.column("identifier", .text).notNull()
                t.column("seq", .integer).notNull()
                t.column("notification", .blob).notNull()
                t.primaryKey(["bundleID", "held", "identifier"])
            }
            try db.create(table: "device") { t in
                t.primaryKey("key", .text)
                t.column("value", .blob).notNull()
            }
            try db.execute(
                sql: "CREATE TABLE taken (seq INTEGER PRIMARY KEY AUTOINCREMENT, apnsID TEXT NOT NULL UNIQUE)")
            let decoder = JSONDecoder()
            let encoder = Self.encoder
            // Every app's notifications numbered in the order they arrived, across apps (each list is
            // newest first; the date decides between apps).
            var all: [(app: String, position: Int, notification: DeliveredNotification)] = []
            for row in try Row.fetchAll(db, sql: "SELECT bundleID, record FROM app") {
                let id: String = row["bundleID"]
                var record = try decoder.decode(AppRecord.self, from: row["record"] as Data)
                for (position, notification) in record.delivered.enumerated() {
                    all.append((id, position, notification))
                }
                record.delivered = []
                try db.execute(
                    sql: "UPDATE app SET record = ? WHERE bundleID = ?", arguments: [try encoder.encode(record), id])
            }
            all.sort { ($0.notification.date, -$0.position) < ($1.notification.date, -$1.position) }
            for (index, item) in all.enumerated() {
                let seq = Int64(index + 1)
                var placed = item.notification
                placed.placement = placed.placement ?? NotificationPlacement()
                placed.placement!.sequence = seq
                try db.execute(
                    sql: "INSERT INTO notification (bundleID, held, identifier, seq, notification) "
                        + "VALUES (?, 0, ?, ?, ?)",
                    arguments: [item.app, placed.identifier, seq, try encoder.encode(placed)])
                if let apnsID = item.notification.apnsID {
                    try db.execute(sql: "INSERT OR IGNORE INTO taken (apnsID) VALUES (?)", arguments: [apnsID])
                }
            }
        }
        return migrator
    }

    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }

    /// Reads everything kept.
    public func load() async throws -> DeviceSnapshot {
        try await writer.read { db in
            let decoder = JSONDecoder()
            var records: [String: AppRecord] = [:]
            var order: [String] = []
            for row in try Row.fetchAll(db, sql: "SELECT bundleID, record FROM app ORDER BY bundleID") {
                var record = try decoder.decode(AppRecord.self, from: row["record"] as Data)
                record.delivered = []
                record.held = nil
                records[row["bundleID"]] = record
                order.append(row["bundleID"])
            }
            for row in try Row.fetchAll(
                db, sql: "SELECT bundleID, held, notification FROM notification ORDER BY seq DESC")
            {
                let id: String = row["bundleID"]
                guard records[id] != nil else { continue }
                let notification = try decoder.decode(DeliveredNotification.self, from: row["notification"] as Data)
                if (row["held"] as Int) != 0 {
                    records[id]!.held = (records[id]!.held ?? []) + [notification]
                } else {
                    records[id]!.delivered.append(notification)
                }
            }
            let device = try Data.fetchOne(db, sql: "SELECT value FROM device WHERE key = 'state'").map {
                try decoder.decode(DeviceState.self, from: $0)
            }
            let taken = try String.fetchAll(
                db, sql: "SELECT apnsID FROM taken ORDER BY seq DESC LIMIT ?", arguments: [Self.takenLimit])
            return DeviceSnapshot(records: order.compactMap { records[$0] }, device: device, taken: taken.reversed())
        }
    }

    /// Writes what changed atomically: removed apps first (record and rows), then records, then
    /// notification rows, the device's state and the pushes taken.
    public func save(_ changes: DeviceChanges) async throws {
        guard !changes.isEmpty else { return }
        let encoder = Self.encoder
        let records = try changes.records.map { record -> (String, Data) in
            var bare = record
            bare.delivered = []
            bare.held = nil
            return (record.app.bundleID, try encoder.encode(bare))
        }
        let rows = try changes.notifications.map { row -> (NotificationRow, Data?) in
            (row, try row.notification.map { try encoder.encode($0) })
        }
        let device = try changes.device.map { try encoder.encode($0) }
        let now = Date()
        try await writer.write { db in
            for id in changes.removed {
                try db.execute(sql: "DELETE FROM app WHERE bundleID = ?", arguments: [id])
                try db.execute(sql: "DELETE FROM notification WHERE bundleID = ?", arguments: [id])
            }
            // The statements of every push are compiled once per connection (GRDB's statement cache).
            for (id, data) in records {
                try db.cachedStatement(
                    sql: "INSERT INTO app (bundleID, record, updatedAt) VALUES (?, ?, ?) "
                        + "ON CONFLICT(bundleID) DO UPDATE SET record = excluded.record, updatedAt = excluded.updatedAt"
                ).execute(arguments: [id, data, now])
            }
            for (row, data) in rows {
                if let data, let notification = row.notification {
                    try db.cachedStatement(
                        sql:
                            "INSERT INTO notification (bundleID, held, identifier, seq, notification) VALUES (?, ?, ?, ?, ?) "
                            + "ON CONFLICT(bundleID, held, identifier) DO UPDATE SET seq = excluded.seq, "
                            + "notification = excluded.notification"
                    ).execute(arguments: [
                        row.app, row.held ? 1 : 0, row.identifier, notification.placement?.sequence ?? 0, data,
                    ])
                } else {
                    try db.cachedStatement(
                        sql: "DELETE FROM notification WHERE bundleID = ? AND held = ? AND identifier = ?"
                    ).execute(arguments: [row.app, row.held ? 1 : 0, row.identifier])
                }
            }
            if let device {
                try db.execute(
                    sql: "INSERT INTO device (key, value) VALUES ('state', ?) "
                        + "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    arguments: [device])
            }
            if !changes.taken.isEmpty {
                let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO taken (apnsID) VALUES (?)")
                for apnsID in changes.taken { try insert.execute(arguments: [apnsID]) }
                // Trimmed to the limit each time the row ids cross a multiple of 512, not on every
                // write: the table holds at most 511 more than the limit.
                let last = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM taken") ?? 0
                if last / 512 != (last - Int64(changes.taken.count)) / 512 {
                    try db.cachedStatement(sql: "DELETE FROM taken WHERE seq <= ?")
                        .execute(arguments: [last - Int64(Self.takenLimit)])
                }
            }
        }
    }

    /// The journal mode in force (`wal`).
    public func journalMode() async throws -> String {
        try await writer.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "" }
    }
}
