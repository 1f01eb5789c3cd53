import Foundation
import HeraldCore
import NIOCore
import PostgresNIO

/// The directory: one table per kind of record, each record the model's JSON (``StoreRecords``).
extension PostgresGatewayStore: DirectoryStore {
    public func loadDirectory() async throws -> DirectorySnapshot {
        func records(_ table: String) async throws -> [Data] {
            try await rows(PostgresQuery(unsafeSQL: "SELECT record FROM \(table)"), as: Data.self)
        }
        return try self.records.snapshot(
            teams: try await records("team"), keys: try await records("provider_key"),
            apps: try await records("app"), devices: try await records("device"),
            registrations: try await records("registration"))
    }

    /// What the store holds now for `changes` (``DirectoryFollower``): the records that exist, and
    /// for each device its registrations.
    public func reload(_ changes: Set<DirectoryChange>) async throws -> DirectoryReload {
        if changes.contains(.everything) {
            return DirectoryReload(changes: changes, found: try await loadDirectory())
        }
        var ids: [DirectoryChange.Kind: [String]] = [:]
        for change in changes {
            switch change {
            case .team(let id): ids[.team, default: []].append(id)
            case .key(let id): ids[.key, default: []].append(id)
            case .app(let id): ids[.app, default: []].append(id)
            case .device(let id): ids[.device, default: []].append(id)
            case .everything: break
            }
        }
        func records(_ table: String, _ key: String, _ kind: DirectoryChange.Kind) async throws -> [Data] {
            guard let wanted = ids[kind] else { return [] }
            return try await rows(
                "SELECT record FROM \(unescaped: table) WHERE \(unescaped: key) = ANY(\(wanted)::text[])",
                as: Data.self)
        }
        let registrations: [Data] =
            if let devices = ids[.device] {
                try await rows(
                    "SELECT record FROM registration WHERE device_id = ANY(\(devices)::text[])", as: Data.self)
            } else { [] }
        return DirectoryReload(
            changes: changes,
            found: try self.records.snapshot(
                teams: try await records("team", "id", .team), keys: try await records("provider_key", "id", .key),
                apps: try await records("app", "bundle_id", .app), devices: try await records("device", "id", .device),
                registrations: registrations))
    }

    // Every change to the directory notifies `herald_directory` in its own transaction (delivered
    // on commit, in commit order) with `kind<TAB>id`, so that every node re-reads that record
    // (``DirectoryFollower``).

    private func upsert(_ table: String, key: String, kind: DirectoryChange.Kind, id: String, record: Data) async throws
    {
        try await drain(
            """
            WITH changed AS (
                INSERT INTO \(unescaped: table) (\(unescaped: key), record) VALUES (\(id), \(record))
                ON CONFLICT (\(unescaped: key)) DO UPDATE SET record = excluded.record RETURNING \(unescaped: key) AS id)
            SELECT pg_notify(\(DirectoryChange.channel), \(kind.rawValue) || chr(9) || id) FROM changed
            """)
    }

    private func delete(_ table: String, key: String, kind: DirectoryChange.Kind, id: String) async throws {
        try await drain(
            """
            WITH changed AS (DELETE FROM \(unescaped: table) WHERE \(unescaped: key) = \(id) RETURNING \(unescaped: key) AS id)
            SELECT pg_notify(\(DirectoryChange.channel), \(kind.rawValue) || chr(9) || id) FROM changed
            """)
    }

    public func save(_ team: Team) async throws {
        try await upsert("team", key: "id", kind: .team, id: team.id, record: records.encoder.encode(team))
    }
    public func deleteTeam(_ id: String) async throws { try await delete("team", key: "id", kind: .team, id: id) }
    public func save(_ key: ProviderKey) async throws {
        try await upsert("provider_key", key: "id", kind: .key, id: key.id, record: records.encoder.encode(key))
    }
    public func deleteKey(_ id: String) async throws {
        try await delete("provider_key", key: "id", kind: .key, id: id)
    }
    public func save(_ app: TeamApp) async throws {
        try await upsert("app", key: "bundle_id", kind: .app, id: app.bundleID, record: records.encoder.encode(app))
    }
    public func deleteApp(_ bundleID: String) async throws {
        try await delete("app", key: "bundle_id", kind: .app, id: bundleID)
    }
    public func save(_ device: DeviceRecord) async throws {
        try await upsert("device", key: "id", kind: .device, id: device.id, record: records.encoder.encode(device))
    }

    public func save(devices: [DeviceRecord]) async throws {
        // One statement for them all; the last record of an id wins, as one by one.
        let kept = Self.lastOfEach(devices) { $0.id }
        let ids = kept.map { devices[$0].id }
        let records = try kept.map { ByteBuffer(data: try self.records.encoder.encode(devices[$0])) }
        try await drain(
            """
            WITH changed AS (
                INSERT INTO device (id, record) SELECT * FROM unnest(\(ids)::text[], \(records)::bytea[])
                ON CONFLICT (id) DO UPDATE SET record = excluded.record RETURNING id)
            SELECT pg_notify(\(DirectoryChange.channel), \(DirectoryChange.Kind.device.rawValue) || chr(9) || id)
            FROM changed
            """)
    }

    public func save(_ registrations: [Registration], feedback: [FeedbackEntry], device: DeviceRecord?) async throws {
        let rows = try registrations.map { ($0, try records.encoder.encode($0)) }
        let deviceRow = try device.map { ($0.id, try records.encoder.encode($0)) }
        let changedDevices = Array(Set(registrations.map(\.deviceID) + (device.map { [$0.id] } ?? [])))
        try await transaction { connection in
            if let (id, record) = deviceRow {
                try await self.drain(
                    """
                    INSERT INTO device (id, record) VALUES (\(id), \(record))
                    ON CONFLICT (id) DO UPDATE SET record = excluded.record
                    """, on: connection)
            }
            // Two statements for them all, not two round trips each: a bulk registration of
            // hundreds of devices is one transaction, and under load its round trips alone could
            // outlast the request's deadline. The last record of a token wins, as one by one.
            let kept = Self.lastOfEach(rows) { $0.0.environment.rawValue + "\t" + $0.0.token.hex }
            if !kept.isEmpty {
                let environments = kept.map { rows[$0].0.environment.rawValue }
                let tokens = kept.map { rows[$0].0.token.hex }
                let deviceIDs = kept.map { rows[$0].0.deviceID }
                let records = kept.map { ByteBuffer(data: rows[$0].1) }
                try await self.drain(
                    """
                    INSERT INTO registration (environment, token, device_id, record)
                    SELECT * FROM unnest(
                        \(environments)::text[], \(tokens)::text[], \(deviceIDs)::text[], \(records)::bytea[])
                    ON CONFLICT (environment, token) DO UPDATE SET record = excluded.record
                    """, on: connection)
            }
            // Registered (again): such a token no longer belongs on the feedback list.
            let live = registrations.filter { $0.invalidatedAt == nil }
            if !live.isEmpty {
                try await self.drain(
                    """
                    DELETE FROM feedback USING unnest(\(live.map(\.environment.rawValue))::text[],
                        \(live.map(\.token.hex))::text[]) AS t(environment, token)
                    WHERE feedback.environment = t.environment AND feedback.token = t.token
                    """, on: connection)
            }
            for f in feedback {
                try await self.drain(
                    """
                    INSERT INTO feedback (bundle_id, environment, token, removed_at)
                    VALUES (\(f.bundleID), \(f.environment.rawValue), \(f.token.hex), \(f.removedAt.timeIntervalSince1970))
                    ON CONFLICT (bundle_id, environment, token) DO UPDATE SET removed_at = excluded.removed_at
                    """, on: connection)
            }
            // A device's record and its registrations are re-read together.
            try await self.drain(
                """
                SELECT pg_notify(\(DirectoryChange.channel), \(DirectoryChange.Kind.device.rawValue) || chr(9) || id)
                FROM unnest(\(changedDevices)::text[]) AS t(id)
                """, on: connection)
        }
    }
}

extension PostgresGatewayStore {
    /// The indices of `items` whose key does not come again later, in order: one statement may not
    /// update a row twice, and one by one the last record of a key would win.
    static func lastOfEach<T>(_ items: [T], key: (T) -> String) -> [Int] {
        var latest: [String: Int] = [:]
        for (i, item) in items.enumerated() { latest[key(item)] = i }
        return items.indices.filter { latest[key(items[$0])] == $0 }
    }
}
