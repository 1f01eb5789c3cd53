import Foundation
import GRDB
import GRDBSQLite
import HeraldCore

/// The embedded gateway store: SQLite through GRDB, in WAL mode, one transaction per call.
/// With `synchronous = FULL` (the default) a committed batch survives power loss; `NORMAL`
/// survives a killed process.
public final class SQLiteGatewayStore: GatewayStore {
    let writer: any DatabaseWriter
    private let records = StoreRecords()
    private var encoder: JSONEncoder { records.encoder }

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
        }
        if let path {
            writer = try DatabasePool(path: path, configuration: configuration)
        } else {
            writer = try DatabaseQueue(configuration: configuration)
        }
        try Self.migrator.migrate(writer)
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("gateway-v1") { db in
            for (table, key) in [("team", "id"), ("providerKey", "id"), ("app", "bundleID"), ("device", "id")] {
                try db.create(table: table) { t in
                    t.primaryKey(key, .text)
                    t.column("record", .blob).notNull()
                }
            }
            try db.create(table: "registration") { t in
                t.column("environment", .text).notNull()
                t.column("token", .text).notNull()
                t.column("deviceID", .text).notNull().indexed()
                t.column("record", .blob).notNull()
                t.primaryKey(["environment", "token"])
            }
            try db.create(table: "feedback") { t in
                t.column("bundleID", .text).notNull()
                t.column("environment", .text).notNull()
                t.column("token", .text).notNull()
                t.column("removedAt", .double).notNull()
                t.primaryKey(["bundleID", "environment", "token"])
            }
            try db.create(table: "stored") { t in
                t.autoIncrementedPrimaryKey("seq")
                t.column("apnsID", .text).notNull()
                t.column("deviceID", .text).notNull()
                t.column("topic", .text).notNull()
                t.column("collapseID", .text)
                t.column("expiresAt", .double).notNull()
                t.column("record", .blob).notNull()
                t.column("payload", .blob).notNull()
            }
            try db.create(index: "stored_device_topic", on: "stored", columns: ["deviceID", "topic", "seq"])
            try db.create(index: "stored_apnsID", on: "stored", columns: ["deviceID", "apnsID"])
            try db.create(index: "stored_expiry", on: "stored", columns: ["expiresAt"])
            try db.create(table: "event") { t in
                t.autoIncrementedPrimaryKey("seq")
                t.column("apnsID", .text).notNull().indexed()
                t.column("uniqueID", .text).indexed()
                t.column("record", .blob).notNull()
            }
        }
        // Where the delivery log stood at each hourly purge (its newest `seq` then): the purge deletes
        // the rows up to the newest mark older than the retention period, and the rows themselves
        // need no time column (the hot path writes them as they are).
        migrator.registerMigration("gateway-v2-log-marks") { db in
            try db.create(table: "eventMark") { t in
                t.primaryKey("at", .double)
                t.column("seq", .integer).notNull()
            }
        }
        // Broadcast channels (docs/broadcast.md).
        migrator.registerMigration("gateway-v3-channels") { db in
            try db.create(table: "channel") { t in
                t.column("bundleID", .text).notNull()
                t.column("environment", .text).notNull()
                t.column("id", .text).notNull()
                t.column("storagePolicy", .integer).notNull()
                t.column("createdAt", .double).notNull()
                t.primaryKey(["bundleID", "environment", "id"])
            }
            // Messages broadcast on them (``BroadcastMessage``): the recent ones, and the most recent.
            try db.create(table: "broadcast") { t in
                t.primaryKey("uniqueID", .text)
                t.column("channelID", .text).notNull()
                t.column("bundleID", .text).notNull()
                t.column("environment", .text).notNull()
                t.column("storagePolicy", .integer).notNull()
                t.column("requestID", .text).notNull()
                t.column("priority", .integer).notNull()
                t.column("expiration", .integer)
                t.column("payload", .blob).notNull()
                t.column("sentAt", .double).notNull()
            }
            try db.create(index: "broadcast_channel", on: "broadcast", columns: ["channelID", "environment", "sentAt"])
        }
        return migrator
    }

    // MARK: Directory

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

    // MARK: Offline store and delivery log

    public func commit(_ batch: StoreBatch, policy: OfflinePolicy, durable: Bool) async throws -> [String] {
        if batch.isEmpty { return [] }
        // Pushes the policy would push out within this very batch are never written.
        let (survivors, replacedInBatch) = policy.coalesce(batch.pushes)
        let pushes = try survivors.map { ($0, try records.metadata(of: $0)) }
        let events = LogRow.rows(of: batch)
        let removals = batch.removals
        let write = { @Sendable (db: Database) throws -> [String] in
            // Cached statements: this runs for every group commit, and parsing the SQL each time
            // costs more than executing it.
            var replaced = replacedInBatch
            for (p, meta) in pushes {
                if let collapse = p.collapseID {
                    let ids = try String.fetchAll(
                        db.cachedStatement(
                            sql: "SELECT apnsID FROM stored WHERE deviceID = ? AND topic = ? AND collapseID = ?"),
                        arguments: [p.deviceID, p.topic, collapse])
                    replaced += ids.map { OfflinePolicy.Replacement(apnsID: $0, by: p) }
                    try db.cachedStatement(
                        sql: "DELETE FROM stored WHERE deviceID = ? AND topic = ? AND collapseID = ?"
                    )
                    .execute(arguments: [p.deviceID, p.topic, collapse])
                }
                try db.cachedStatement(
                    sql: "INSERT INTO stored (apnsID, deviceID, topic, collapseID, expiresAt, record, payload) "
                        + "VALUES (?, ?, ?, ?, ?, ?, ?)"
                ).execute(arguments: [
                    p.apnsID, p.deviceID, p.topic, p.collapseID, p.expiresAt.timeIntervalSince1970, meta, p.payload,
                ])
                let overflow = try Row.fetchAll(
                    db.cachedStatement(
                        sql:
                            "SELECT seq, apnsID FROM stored WHERE deviceID = ? AND topic = ? ORDER BY seq DESC LIMIT -1 OFFSET ?"
                    ),
                    arguments: [p.deviceID, p.topic, policy.depth])
                for row in overflow {
                    replaced.append(OfflinePolicy.Replacement(apnsID: row["apnsID"], by: p))
                    try db.cachedStatement(sql: "DELETE FROM stored WHERE seq = ?").execute(arguments: [
                        row["seq"] as Int64
                    ])
                }
            }
            for (deviceID, apnsID) in removals {
                try db.cachedStatement(sql: "DELETE FROM stored WHERE deviceID = ? AND apnsID = ?")
                    .execute(arguments: [deviceID, apnsID])
            }
            // What the policy pushed out is logged in this same transaction: a crash can never keep
            // the replacement and lose the line that explains where the older push went.
            let rows = replaced.isEmpty ? events : events + LogRow.rows(of: replaced)
            // Many rows per statement: a group commit carries up to thousands of log rows, and each
            // statement run costs more than the row it inserts.
            var next = rows.startIndex
            var arena = JSONWriter(capacity: min(rows.count, Self.eventRowsPerInsert) * 320)
            while next < rows.endIndex {
                let count = min(Self.eventRowsPerInsert, rows.endIndex - next)
                let insert = try db.cachedStatement(
                    sql: count == Self.eventRowsPerInsert ? Self.insertFullEventRun : Self.insertEvents(count))
                try Self.insert(rows[next..<next + count], with: insert, in: db, arena: &arena)
                next += count
            }
            return replaced.map(\.apnsID)
        }
        guard !durable, durability == .full else { return try await writer.write(write) }
        // Log only: commit without the fsync (WAL with synchronous NORMAL: atomic, survives a
        // killed process; the next durable commit or checkpoint puts it on disk).
        return try await writer.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            defer { try? db.execute(sql: "PRAGMA synchronous = FULL") }
            var replaced: [String] = []
            try db.inTransaction {
                replaced = try write(db)
                return .commit
            }
            return replaced
        }
    }

    /// Runs `insert` (``insertEvents(_:)`` for `rows.count` rows) with the rows' values bound in
    /// place. The values (identifiers and each record's JSON) are laid end to end in `arena` (one
    /// buffer for a whole commit, emptied here) and bound with the SQLite API without copies
    /// (`SQLITE_STATIC`), where GRDB's `StatementArguments` would box each value, copy each string
    /// and have SQLite copy each value again: about a third of the delivery log's cost per push.
    /// The bindings are cleared before the buffer can change. Stepping the statement directly skips
    /// GRDB's per-statement hooks (transaction observers, change counts), which the gateway does not
    /// use; it runs only inside `commit`'s GRDB write transaction, which a failure here rolls back.
    static func insert(
        _ rows: ArraySlice<LogRow>, with insert: Statement, in db: Database, arena: inout JSONWriter
    ) throws {
        arena.clear()
        var spans: [(start: Int, count: Int)] = []
        spans.reserveCapacity(rows.count * 3)
        func span(_ write: (inout JSONWriter) -> Void) {
            let start = arena.bytes.count
            write(&arena)
            spans.append((start, arena.bytes.count - start))
        }
        for row in rows {
            span { $0.text(row.apnsID) }
            if let uniqueID = row.uniqueID { span { $0.text(uniqueID) } } else { spans.append((-1, 0)) }
            span { row.writeRecord(to: &$0) }
        }
        let statement = insert.sqliteStatement
        let code = arena.bytes.withUnsafeBytes { buffer -> CInt in
            guard let base = buffer.baseAddress else { return SQLITE_MISUSE }
            sqlite3_reset(statement)
            for (index, span) in spans.enumerated() {
                let parameter = CInt(index + 1)
                if span.start < 0 {
                    sqlite3_bind_null(statement, parameter)
                } else if index % 3 == 2 {
                    sqlite3_bind_blob(statement, parameter, base + span.start, CInt(span.count), nil)
                } else {
                    sqlite3_bind_text(
                        statement, parameter, (base + span.start).assumingMemoryBound(to: CChar.self),
                        CInt(span.count), nil)
                }
            }
            let code = sqlite3_step(statement)
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
            return code
        }
        guard code == SQLITE_DONE else {
            throw DatabaseError(
                resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)),
                sql: insert.sql)
        }
    }

    /// How many delivery-log rows one `INSERT` carries (SQLite allows 32,766 parameters).
    static let eventRowsPerInsert = 64

    /// ``insertEvents(_:)`` for a whole ``eventRowsPerInsert`` rows, built once: the statement cache
    /// is looked up by this text for every full run.
    static let insertFullEventRun = insertEvents(eventRowsPerInsert)

    /// `INSERT INTO event … VALUES (?, ?, ?), …` for `count` rows.
    static func insertEvents(_ count: Int) -> String {
        "INSERT INTO event (apnsID, uniqueID, record) VALUES "
            + repeatElement("(?, ?, ?)", count: count).joined(separator: ", ")
    }

    private func decodeStored(_ rows: [(record: Data, payload: Data)]) throws -> [StoredPush] {
        try rows.map { try records.storedPush(record: $0.record, payload: $0.payload) }
    }

    private static func storedColumns(_ rows: [Row]) -> [(record: Data, payload: Data)] {
        rows.map { (record: $0["record"], payload: $0["payload"]) }
    }

    public func pending(device: String, now: Date) async throws -> [StoredPush] {
        let rows = try await writer.read { db in
            Self.storedColumns(
                try Row.fetchAll(
                    db, sql: "SELECT record, payload FROM stored WHERE deviceID = ? AND expiresAt > ? ORDER BY seq",
                    arguments: [device, now.timeIntervalSince1970]))
        }
        return try decodeStored(rows)
    }

    public func purgeExpired(now: Date) async throws -> [StoredPush] {
        let rows = try await writer.write { db in
            let rows = try Row.fetchAll(
                db, sql: "SELECT record, payload FROM stored WHERE expiresAt <= ?",
                arguments: [now.timeIntervalSince1970])
            try db.execute(sql: "DELETE FROM stored WHERE expiresAt <= ?", arguments: [now.timeIntervalSince1970])
            return Self.storedColumns(rows)
        }
        return try decodeStored(rows)
    }

    public func deliveryLog(id: String) async throws -> [DeliveryEvent] {
        let rows = try await writer.read { db in
            try Self.logRows(
                Row.fetchAll(
                    db, sql: "SELECT apnsID, uniqueID, record FROM event WHERE apnsID = ? OR uniqueID = ? ORDER BY seq",
                    arguments: [id, id]))
        }
        return try records.deliveryLog(rows: rows)
    }

    public func recentDeliveryEvents(rows count: Int) async throws -> [DeliveryEvent] {
        let rows = try await writer.read { db in
            try Self.logRows(
                Row.fetchAll(
                    db, sql: "SELECT apnsID, uniqueID, record FROM event ORDER BY seq DESC LIMIT ?",
                    arguments: [max(0, count)]))
        }
        return try rows.reversed().flatMap {
            try records.events(apnsID: $0.apnsID, uniqueID: $0.uniqueID, record: $0.record)
        }
    }

    public func purgeDeliveryLog(now: Date, before cutoff: Date) async throws -> Int {
        try await writer.write { db in
            let newest = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM event") ?? 0
            try db.execute(
                sql: "INSERT OR REPLACE INTO eventMark (at, seq) VALUES (?, ?)",
                arguments: [now.timeIntervalSince1970, newest])
            guard
                let due = try Row.fetchOne(
                    db, sql: "SELECT at, seq FROM eventMark WHERE at <= ? ORDER BY at DESC LIMIT 1",
                    arguments: [cutoff.timeIntervalSince1970])
            else { return 0 }
            try db.execute(sql: "DELETE FROM event WHERE seq <= ?", arguments: [due["seq"] as Int64])
            let deleted = db.changesCount
            try db.execute(sql: "DELETE FROM eventMark WHERE at < ?", arguments: [due["at"] as Double])
            return deleted
        }
    }

    private static func logRows(_ rows: [Row]) -> [(apnsID: String, uniqueID: String?, record: Data)] {
        rows.map { (apnsID: $0["apnsID"] as String, uniqueID: $0["uniqueID"] as String?, record: $0["record"] as Data) }
    }

    public func takeFeedback(bundleID: String, environment: APNsEnvironment) async throws -> [FeedbackEntry] {
        try await feedback(bundleID: bundleID, environment: environment, emptying: true)
    }

    public func feedback(bundleID: String, environment: APNsEnvironment) async throws -> [FeedbackEntry] {
        try await feedback(bundleID: bundleID, environment: environment, emptying: false)
    }

    private func feedback(bundleID: String, environment: APNsEnvironment, emptying: Bool) async throws
        -> [FeedbackEntry]
    {
        let rows = try await writer.write { db in
            let rows = try Row.fetchAll(
                db,
                sql: "SELECT token, removedAt FROM feedback WHERE bundleID = ? AND environment = ? ORDER BY removedAt",
                arguments: [bundleID, environment.rawValue])
            if emptying {
                try db.execute(
                    sql: "DELETE FROM feedback WHERE bundleID = ? AND environment = ?",
                    arguments: [bundleID, environment.rawValue])
            }
            return rows.map { (token: $0["token"] as String, removedAt: $0["removedAt"] as Double) }
        }
        return rows.compactMap { row in
            guard let token = DeviceToken(hex: row.token) else { return nil }
            return FeedbackEntry(
                bundleID: bundleID, token: token, environment: environment,
                removedAt: Date(timeIntervalSince1970: row.removedAt))
        }
    }

    public func storedCountsByDevice() async throws -> [String: Int] {
        try await writer.read { db in
            var counts: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT deviceID, COUNT(*) AS n FROM stored GROUP BY deviceID") {
                counts[row["deviceID"]] = row["n"]
            }
            return counts
        }
    }

    // MARK: Broadcast channels

    public func createChannel(_ channel: BroadcastChannel, limit: Int) async throws -> Bool {
        try await writer.write { db in
            let count =
                try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM channel WHERE bundleID = ? AND environment = ?",
                    arguments: [channel.bundleID, channel.environment.rawValue]) ?? 0
            guard count < limit else { return false }
            try db.execute(
                sql: """
                    INSERT INTO channel (bundleID, environment, id, storagePolicy, createdAt) VALUES (?, ?, ?, ?, ?)
                    """,
                arguments: [
                    channel.bundleID, channel.environment.rawValue, channel.id, channel.storagePolicy.rawValue,
                    channel.createdAt.timeIntervalSince1970,
                ])
            return true
        }
    }

    public func channel(bundleID: String, environment: APNsEnvironment, id: String) async throws -> BroadcastChannel? {
        try await writer.read { db in
            try Row.fetchOne(
                db,
                sql: "SELECT storagePolicy, createdAt FROM channel WHERE bundleID = ? AND environment = ? AND id = ?",
                arguments: [bundleID, environment.rawValue, id]
            ).flatMap { row in
                ChannelStoragePolicy(rawValue: row["storagePolicy"]).map {
                    BroadcastChannel(
                        id: id, bundleID: bundleID, environment: environment, storagePolicy: $0,
                        createdAt: Date(timeIntervalSince1970: row["createdAt"]))
                }
            }
        }
    }

    public func deleteChannel(bundleID: String, environment: APNsEnvironment, id: String) async throws -> Bool {
        try await writer.write { db in
            try db.execute(
                sql: "DELETE FROM channel WHERE bundleID = ? AND environment = ? AND id = ?",
                arguments: [bundleID, environment.rawValue, id])
            let existed = db.changesCount > 0
            try db.execute(
                sql: "DELETE FROM broadcast WHERE channelID = ? AND environment = ? AND bundleID = ?",
                arguments: [id, environment.rawValue, bundleID])
            return existed
        }
    }

    public func saveBroadcast(_ m: BroadcastMessage) async throws {
        try await writer.write { db in
            try db.execute(
                sql: "DELETE FROM broadcast WHERE channelID = ? AND environment = ? AND sentAt < ?",
                arguments: [m.channelID, m.environment.rawValue, m.sentAt.timeIntervalSince1970 - 60])
            try db.execute(
                sql: """
                    INSERT INTO broadcast (uniqueID, channelID, bundleID, environment, storagePolicy, requestID,
                        priority, expiration, payload, sentAt)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    m.uniqueID, m.channelID, m.bundleID, m.environment.rawValue, m.storagePolicy.rawValue, m.requestID,
                    m.priority.rawValue, m.expiration, m.payload, m.sentAt.timeIntervalSince1970,
                ])
        }
    }

    public func broadcast(uniqueID: String) async throws -> BroadcastMessage? {
        try await writer.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM broadcast WHERE uniqueID = ?", arguments: [uniqueID])
                .flatMap(Self.broadcast(row:))
        }
    }

    public func latestBroadcast(channelID: String, environment: APNsEnvironment) async throws -> BroadcastMessage? {
        try await writer.read { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT * FROM broadcast WHERE channelID = ? AND environment = ?
                    ORDER BY sentAt DESC, uniqueID DESC LIMIT 1
                    """,
                arguments: [channelID, environment.rawValue]
            ).flatMap(Self.broadcast(row:))
        }
    }

    static func broadcast(row: Row) -> BroadcastMessage? {
        guard let environment = APNsEnvironment(rawValue: row["environment"]),
            let policy = ChannelStoragePolicy(rawValue: row["storagePolicy"]),
            let priority = PushPriority(rawValue: row["priority"])
        else { return nil }
        return BroadcastMessage(
            uniqueID: row["uniqueID"], requestID: row["requestID"], channelID: row["channelID"],
            bundleID: row["bundleID"], environment: environment, storagePolicy: policy, priority: priority,
            expiration: row["expiration"], payload: row["payload"],
            sentAt: Date(timeIntervalSince1970: row["sentAt"]))
    }

    public func channelIDs(bundleID: String, environment: APNsEnvironment) async throws -> [String] {
        try await writer.read { db in
            try String.fetchAll(
                db, sql: "SELECT id FROM channel WHERE bundleID = ? AND environment = ? ORDER BY createdAt, id",
                arguments: [bundleID, environment.rawValue])
        }
    }

    public func storedCount(device: String) async throws -> Int {
        try await writer.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM stored WHERE deviceID = ?", arguments: [device]) ?? 0
        }
    }

    public func storedCount() async throws -> Int {
        try await writer.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM stored") ?? 0 }
    }

    /// How many tokens a topic's feedback list holds in an environment, without emptying it.
    public func feedbackCount(bundleID: String, environment: APNsEnvironment) async throws -> Int {
        try await writer.read { db in
            try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM feedback WHERE bundleID = ? AND environment = ?",
                arguments: [bundleID, environment.rawValue]) ?? 0
        }
    }
}
