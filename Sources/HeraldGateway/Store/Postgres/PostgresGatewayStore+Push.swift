import Foundation
import HeraldCore
import NIOCore
import PostgresNIO

/// Offline pushes, the delivery log and the feedback lists.
extension PostgresGatewayStore: PushStore {
    public func commit(_ batch: StoreBatch, policy: OfflinePolicy, durable: Bool) async throws -> [String] {
        if batch.isEmpty { return [] }
        // Pushes the policy would push out within this very batch are never written.
        let (survivors, replacedInBatch) = policy.coalesce(batch.pushes)
        let pushes = try survivors.map { ($0, try records.metadata(of: $0)) }
        let logRows = LogRow.rows(of: batch)
        let removals = batch.removals
        // In one order (this process's rows only, but its own commits may overlap).
        let counts = batch.counts.map { (key: $0.key, count: $0.value) }.sorted {
            ($0.key.day, $0.key.app, $0.key.state.rawValue) < ($1.key.day, $1.key.app, $1.key.state.rawValue)
        }
        let writer = countWriter
        // The queues this batch stores into, locked in one order by every node (no deadlock).
        let queueLocks = Array(Set(survivors.map { Self.queueLock(device: $0.deviceID, topic: $0.topic) })).sorted()
        return try await transaction { connection in
            if !durable {
                // Log only: committed without waiting for the WAL flush (atomic; survives a killed
                // gateway; a crash of the database server itself may lose it).
                try await self.drain("SET LOCAL synchronous_commit = off", on: connection)
            }
            if !queueLocks.isEmpty {
                try await self.drain(
                    "SELECT pg_advisory_xact_lock(k) FROM unnest(\(queueLocks)::bigint[]) AS t(k)", on: connection)
            }
            var replaced = replacedInBatch
            for (p, meta) in pushes {
                replaced += try await self.enqueue(p, metadata: meta, policy: policy, on: connection)
            }
            if !pushes.isEmpty {
                // Heard when this commits by whichever node holds the device (``StoredChange``).
                let devices = Array(Set(pushes.map(\.0.deviceID)))
                try await self.drain(
                    "SELECT pg_notify(\(StoredChange.channel), d) FROM unnest(\(devices)::text[]) AS t(d)",
                    on: connection)
            }
            if !removals.isEmpty {
                try await self.drain(
                    """
                    DELETE FROM stored WHERE (device_id, apns_id) IN (
                        SELECT * FROM unnest(\(removals.map(\.deviceID))::text[], \(removals.map(\.apnsID))::text[]))
                    """, on: connection)
            }
            // What the policy pushed out is logged in this same transaction.
            let all = replaced.isEmpty ? logRows : logRows + LogRow.rows(of: replaced)
            if !all.isEmpty { try await self.appendLog(all, on: connection) }
            if !counts.isEmpty {
                try await self.drain(
                    """
                    INSERT INTO delivery_count (day, app, state, writer, count)
                    SELECT d, a, s, \(writer), c FROM unnest(\(counts.map(\.key.day))::text[],
                        \(counts.map(\.key.app))::text[], \(counts.map(\.key.state.rawValue))::text[],
                        \(counts.map { Int64($0.count) })::bigint[]) AS t(d, a, s, c)
                    ON CONFLICT (day, app, state, writer) DO UPDATE SET count = delivery_count.count + excluded.count
                    """, on: connection)
            }
            return replaced.map(\.apnsID)
        }
    }

    /// Stores one push in its (device, topic) queue, inside the batch's transaction: the stored push
    /// with its collapse id and those beyond the policy's depth leave the queue, replaced by it.
    func enqueue(
        _ p: StoredPush, metadata meta: Data, policy: OfflinePolicy, on connection: PostgresConnection
    ) async throws -> [OfflinePolicy.Replacement] {
        var replaced: [OfflinePolicy.Replacement] = []
        if let collapse = p.collapseID {
            for try await id in try await connection.query(
                """
                DELETE FROM stored WHERE device_id = \(p.deviceID) AND topic = \(p.topic)
                AND collapse_id = \(collapse) RETURNING apns_id
                """, logger: logger
            ).decode(String.self) {
                replaced.append(OfflinePolicy.Replacement(apnsID: id, by: p))
            }
        }
        try await drain(
            """
            INSERT INTO stored (apns_id, device_id, topic, collapse_id, expires_at, record, payload)
            VALUES (\(p.apnsID), \(p.deviceID), \(p.topic), \(p.collapseID),
                    \(p.expiresAt.timeIntervalSince1970), \(meta), \(p.payload))
            """, on: connection)
        for try await id in try await connection.query(
            """
            DELETE FROM stored WHERE seq IN (
                SELECT seq FROM stored WHERE device_id = \(p.deviceID) AND topic = \(p.topic)
                ORDER BY seq DESC OFFSET \(policy.depth))
            RETURNING apns_id
            """, logger: logger
        ).decode(String.self) {
            replaced.append(OfflinePolicy.Replacement(apnsID: id, by: p))
        }
        return replaced
    }

    /// Appends delivery-log rows in one statement, inside the batch's transaction. Rows come out of
    /// unnest in order, so `seq` follows the batch.
    func appendLog(_ all: [LogRow], on connection: PostgresConnection) async throws {
        var apnsIDs: [String] = []
        var uniqueIDs: [String] = []
        var logRecords: [ByteBuffer] = []
        apnsIDs.reserveCapacity(all.count)
        uniqueIDs.reserveCapacity(all.count)
        logRecords.reserveCapacity(all.count)
        var writer = JSONWriter(capacity: 320)
        for row in all {
            apnsIDs.append(row.apnsID)
            // No array of optionals: an empty unique id stands for none (a real one never is).
            uniqueIDs.append(row.uniqueID ?? "")
            writer.clear()
            row.writeRecord(to: &writer)
            logRecords.append(ByteBuffer(bytes: writer.bytes))
        }
        try await drain(
            """
            INSERT INTO event (apns_id, unique_id, record)
            SELECT a, NULLIF(u, ''), r FROM unnest(\(apnsIDs)::text[], \(uniqueIDs)::text[], \(logRecords)::bytea[])
            AS t(a, u, r)
            """, on: connection)
    }

    /// A (device, topic) queue's advisory-lock key: 64 bits of FNV-1a.
    static func queueLock(device: String, topic: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in device.utf8 + [0] + topic.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }

    public func pending(device: String, now: Date) async throws -> [StoredPush] {
        try await rows(
            """
            SELECT record, payload FROM stored WHERE device_id = \(device)
            AND expires_at > \(now.timeIntervalSince1970) ORDER BY seq
            """, as: (Data, Data).self
        ).map { try records.storedPush(record: $0.0, payload: $0.1) }
    }

    public func pending(devices: [String], now: Date) async throws -> [String: [StoredPush]] {
        var found: [String: [StoredPush]] = [:]
        for row in try await rows(
            """
            SELECT device_id, record, payload FROM stored WHERE device_id = ANY(\(devices))
            AND expires_at > \(now.timeIntervalSince1970) ORDER BY seq
            """, as: (String, Data, Data).self)
        {
            found[row.0, default: []].append(try records.storedPush(record: row.1, payload: row.2))
        }
        return found
    }

    public func purgeExpired(now: Date) async throws -> [StoredPush] {
        try await rows(
            "DELETE FROM stored WHERE expires_at <= \(now.timeIntervalSince1970) RETURNING seq, record, payload",
            as: (Int64, Data, Data).self
        ).sorted { $0.0 < $1.0 }.map { try records.storedPush(record: $0.1, payload: $0.2) }
    }

    public func deliveryLogRead(id: String) async throws -> DeliveryLogRead {
        let rows = try await rows(
            "SELECT apns_id, unique_id, record FROM event WHERE apns_id = \(id) OR unique_id = \(id) ORDER BY seq",
            as: (String, String?, Data).self)
        return records.deliveryLog(rows: rows.map { (apnsID: $0.0, uniqueID: $0.1, record: $0.2) })
    }

    public func recentDeliveryLog(rows count: Int) async throws -> DeliveryLogRead {
        let rows = try await rows(
            "SELECT apns_id, unique_id, record FROM event ORDER BY seq DESC LIMIT \(max(0, count))",
            as: (String, String?, Data).self)
        return records.recent(rowsNewestFirst: rows.map { (apnsID: $0.0, uniqueID: $0.1, record: $0.2) })
    }

    public func purgeDeliveryLog(now: Date, before cutoff: Date) async throws -> Int {
        try await transaction { connection in
            try await self.drain(
                """
                INSERT INTO event_mark (at, seq) SELECT \(now.timeIntervalSince1970), coalesce(max(seq), 0) FROM event
                ON CONFLICT (at) DO UPDATE SET seq = excluded.seq
                """, on: connection)
            guard
                let due = try await self.rows(
                    "SELECT at, seq FROM event_mark WHERE at <= \(cutoff.timeIntervalSince1970) ORDER BY at DESC LIMIT 1",
                    as: (Double, Int64).self, on: connection
                ).first
            else { return 0 }
            let deleted = try await self.rows(
                "WITH gone AS (DELETE FROM event WHERE seq <= \(due.1) RETURNING 1) SELECT count(*) FROM gone",
                as: Int.self, on: connection
            ).first
            try await self.drain("DELETE FROM event_mark WHERE at < \(due.0)", on: connection)
            try await self.drain(
                "DELETE FROM delivery_count WHERE day < \(DeliveryCount.day(of: cutoff))", on: connection)
            return deleted ?? 0
        }
    }

    public func eraseTestData() async throws {
        try await transaction { connection in
            try await self.drain(
                """
                TRUNCATE device, registration, feedback, stored, event, event_mark, delivery_count, device_node
                """, on: connection)
        }
    }

    public func deliveryCounts(since day: String) async throws -> [DeliveryCount] {
        let found: [(String, String, String, Int64)] = try await rows(
            """
            SELECT day, app, state, sum(count)::bigint FROM delivery_count WHERE day >= \(day)
            GROUP BY day, app, state ORDER BY day, app, state
            """,
            as: (String, String, String, Int64).self)
        return found.compactMap { (day: String, app: String, state: String, count: Int64) -> DeliveryCount? in
            guard let state = AppleDeliveryState(rawValue: state) else { return nil }
            return DeliveryCount(day: day, app: app, state: state, count: Int(count))
        }
    }

    public func takeFeedback(bundleID: String, environment: APNsEnvironment) async throws -> [FeedbackEntry] {
        let rows = try await rows(
            """
            DELETE FROM feedback WHERE bundle_id = \(bundleID) AND environment = \(environment.rawValue)
            RETURNING token, removed_at
            """, as: (String, Double).self)
        return Self.entries(rows.sorted { $0.1 < $1.1 }, bundleID: bundleID, environment: environment)
    }

    public func feedback(bundleID: String, environment: APNsEnvironment) async throws -> [FeedbackEntry] {
        let rows = try await rows(
            """
            SELECT token, removed_at FROM feedback WHERE bundle_id = \(bundleID)
            AND environment = \(environment.rawValue) ORDER BY removed_at
            """, as: (String, Double).self)
        return Self.entries(rows, bundleID: bundleID, environment: environment)
    }

    private static func entries(
        _ rows: [(String, Double)], bundleID: String, environment: APNsEnvironment
    ) -> [FeedbackEntry] {
        rows.compactMap { row in
            guard let token = DeviceToken(hex: row.0) else { return nil }
            return FeedbackEntry(
                bundleID: bundleID, token: token, environment: environment,
                removedAt: Date(timeIntervalSince1970: row.1))
        }
    }

    public func storedCountsByDevice() async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for (device, count) in try await rows(
            "SELECT device_id, count(*) FROM stored GROUP BY device_id", as: (String, Int).self)
        {
            counts[device] = count
        }
        return counts
    }

    public func storedCount(device: String) async throws -> Int {
        try await rows("SELECT count(*) FROM stored WHERE device_id = \(device)", as: Int.self).first ?? 0
    }

    public func ping() async throws {
        _ = try await rows("SELECT 1", as: Int.self)
    }

    public func storedCount() async throws -> Int {
        try await rows("SELECT count(*) FROM stored", as: Int.self).first ?? 0
    }
}
