import Foundation
import GRDB
import GRDBSQLite
import HeraldCore

/// Offline pushes, the delivery log and the feedback lists.
extension SQLiteGatewayStore: PushStore {
    public func commit(_ batch: StoreBatch, policy: OfflinePolicy, durable: Bool) async throws -> [String] {
        if batch.isEmpty { return [] }
        // Pushes the policy would push out within this very batch are never written.
        let (survivors, replacedInBatch) = policy.coalesce(batch.pushes)
        let pushes = try survivors.map { ($0, try records.metadata(of: $0)) }
        let events = LogRow.rows(of: batch)
        let removals = batch.removals
        let counts = batch.counts
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
            for (key, count) in counts {
                try db.cachedStatement(
                    sql: "INSERT INTO deliveryCount (day, app, state, count) VALUES (?, ?, ?, ?) "
                        + "ON CONFLICT (day, app, state) DO UPDATE SET count = count + excluded.count"
                ).execute(arguments: [key.day, key.app, key.state.rawValue, count])
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

    /// `INSERT OR FAIL INTO event … VALUES (?, ?, ?), …` for `count` rows. `OR FAIL`: a row that
    /// broke a constraint would end the statement without undoing the rows before it, so SQLite
    /// keeps no statement journal (a copy of every page the statement changes, in memory); the
    /// statement runs only inside a transaction that any failure rolls back whole.
    static func insertEvents(_ count: Int) -> String {
        "INSERT OR FAIL INTO event (apnsID, uniqueID, record) VALUES "
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

    public func pending(devices: [String], now: Date) async throws -> [String: [StoredPush]] {
        var found: [String: [StoredPush]] = [:]
        // SQLite takes at most 32,766 parameters in a statement; a storm's batches are far smaller.
        for chunk in stride(from: 0, to: devices.count, by: 1000).map({ devices[$0..<min($0 + 1000, devices.count)] }) {
            let rows = try await writer.read { db in
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT deviceID, record, payload FROM stored
                        WHERE deviceID IN (\(databaseQuestionMarks(count: chunk.count))) AND expiresAt > ? ORDER BY seq
                        """,
                    arguments: StatementArguments(
                        Array(chunk) + [now.timeIntervalSince1970] as [any DatabaseValueConvertible])
                )
                .map {
                    (device: $0["deviceID"] as String, record: $0["record"] as Data, payload: $0["payload"] as Data)
                }
            }
            for row in rows {
                found[row.device, default: []].append(try records.storedPush(record: row.record, payload: row.payload))
            }
        }
        return found
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

    public func deliveryLogRead(id: String) async throws -> DeliveryLogRead {
        let rows = try await writer.read { db in
            try Self.logRows(
                Row.fetchAll(
                    db, sql: "SELECT apnsID, uniqueID, record FROM event WHERE apnsID = ? OR uniqueID = ? ORDER BY seq",
                    arguments: [id, id]))
        }
        return records.deliveryLog(rows: rows)
    }

    public func recentDeliveryLog(rows count: Int) async throws -> DeliveryLogRead {
        let rows = try await writer.read { db in
            try Self.logRows(
                Row.fetchAll(
                    db, sql: "SELECT apnsID, uniqueID, record FROM event ORDER BY seq DESC LIMIT ?",
                    arguments: [max(0, count)]))
        }
        return records.recent(rowsNewestFirst: rows)
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
            // The counts go by whole days, those wholly before the cutoff.
            try db.execute(
                sql: "DELETE FROM deliveryCount WHERE day < ?", arguments: [DeliveryCount.day(of: cutoff)])
            return deleted
        }
    }

    public func eraseTestData() async throws {
        try await writer.write { db in
            for table in ["device", "registration", "feedback", "stored", "event", "eventMark", "deliveryCount"] {
                try db.execute(sql: "DELETE FROM \(table)")
            }
        }
    }

    public func deliveryCounts(since day: String) async throws -> [DeliveryCount] {
        try await writer.read { db in
            try Row.fetchAll(
                db, sql: "SELECT day, app, state, count FROM deliveryCount WHERE day >= ? ORDER BY day, app, state",
                arguments: [day]
            ).compactMap { row in
                AppleDeliveryState(rawValue: row["state"]).map {
                    DeliveryCount(day: row["day"], app: row["app"], state: $0, count: row["count"])
                }
            }
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

    public func storedCount(device: String) async throws -> Int {
        try await writer.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM stored WHERE deviceID = ?", arguments: [device]) ?? 0
        }
    }

    public func ping() async throws {
        _ = try await writer.read { db in try Int.fetchOne(db, sql: "SELECT 1 FROM stored LIMIT 1") }
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
