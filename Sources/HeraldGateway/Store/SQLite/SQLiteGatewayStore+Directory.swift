import Foundation
import GRDB
import HeraldCore

/// The directory: one table per kind of record, each record the model's JSON (``StoreRecords``).
extension SQLiteGatewayStore: DirectoryStore {
    public func loadDirectory() async throws -> DirectorySnapshot {
        let (teams, keys, apps, devices, registrations) = try await writer.read { db in
            (
                try Data.fetchAll(db, sql: "SELECT record FROM team"),
                try Data.fetchAll(db, sql: "SELECT record FROM providerKey"),
                try Data.fetchAll(db, sql: "SELECT record FROM app"),
                try Data.fetchAll(db, sql: "SELECT record FROM device"),
                try Data.fetchAll(db, sql: "SELECT record FROM registration")
            )
        }
        return try records.snapshot(
            teams: teams, keys: keys, apps: apps, devices: devices, registrations: registrations)
    }

    private func upsert(_ table: String, key: String, id: String, record: Data) async throws {
        try await writer.write { db in
            try db.execute(
                sql: "INSERT INTO \(table) (\(key), record) VALUES (?, ?) "
                    + "ON CONFLICT(\(key)) DO UPDATE SET record = excluded.record",
                arguments: [id, record])
        }
    }

    private func delete(_ table: String, key: String, id: String) async throws {
        try await writer.write { db in try db.execute(sql: "DELETE FROM \(table) WHERE \(key) = ?", arguments: [id]) }
    }

    public func save(_ team: Team) async throws {
        try await upsert("team", key: "id", id: team.id, record: encoder.encode(team))
    }
    public func deleteTeam(_ id: String) async throws { try await delete("team", key: "id", id: id) }
    public func save(_ key: ProviderKey) async throws {
        try await upsert("providerKey", key: "id", id: key.id, record: encoder.encode(key))
    }
    public func deleteKey(_ id: String) async throws { try await delete("providerKey", key: "id", id: id) }
    public func save(_ app: TeamApp) async throws {
        try await upsert("app", key: "bundleID", id: app.bundleID, record: encoder.encode(app))
    }
    public func deleteApp(_ bundleID: String) async throws { try await delete("app", key: "bundleID", id: bundleID) }
    public func save(_ device: DeviceRecord) async throws {
        try await upsert("device", key: "id", id: device.id, record: encoder.encode(device))
    }

    public func save(devices: [DeviceRecord]) async throws {
        let rows = try devices.map { ($0.id, try encoder.encode($0)) }
        try await writer.write { db in
            let statement = try db.cachedStatement(
                sql:
                    "INSERT INTO device (id, record) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET record = excluded.record"
            )
            for (id, record) in rows { try statement.execute(arguments: [id, record]) }
        }
    }

    public func save(_ registrations: [Registration], feedback: [FeedbackEntry], device: DeviceRecord?) async throws {
        let rows = try registrations.map { r in (r, try encoder.encode(r)) }
        let deviceRow = try device.map { ($0.id, try encoder.encode($0)) }
        try await writer.write { db in
            if let (id, record) = deviceRow {
                try db.execute(
                    sql:
                        "INSERT INTO device (id, record) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET record = excluded.record",
                    arguments: [id, record])
            }
            for (r, record) in rows {
                try db.execute(
                    sql: "INSERT INTO registration (environment, token, deviceID, record) VALUES (?, ?, ?, ?) "
                        + "ON CONFLICT(environment, token) DO UPDATE SET record = excluded.record",
                    arguments: [r.environment.rawValue, r.token.hex, r.deviceID, record])
                if r.invalidatedAt == nil {
                    // Re-registered: it no longer belongs on the feedback list.
                    try db.execute(
                        sql: "DELETE FROM feedback WHERE environment = ? AND token = ?",
                        arguments: [r.environment.rawValue, r.token.hex])
                }
            }
            for f in feedback {
                try db.execute(
                    sql:
                        "INSERT OR REPLACE INTO feedback (bundleID, environment, token, removedAt) VALUES (?, ?, ?, ?)",
                    arguments: [f.bundleID, f.environment.rawValue, f.token.hex, f.removedAt.timeIntervalSince1970])
            }
        }
    }
}
