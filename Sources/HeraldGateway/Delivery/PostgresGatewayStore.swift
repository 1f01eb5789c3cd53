import Foundation
import HeraldCore
import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// The gateway store of many nodes: PostgreSQL through PostgresNIO's pooled client, one
/// transaction per call, the schema migrated at start (``PostgresSchema``). It keeps what the
/// SQLite store keeps, in the same record formats, and passes the same store tests.
///
/// Several gateways may share one database: the offline-queue policy takes a transaction-scoped
/// advisory lock per (device, topic) queue it touches, so two nodes storing for one queue at once
/// still leave it at the policy's depth.
public final class PostgresGatewayStore: GatewayStore {
    let client: PostgresClient
    let logger: Logger
    /// How long one call may take, waiting for a pooled connection included (the statement timeout).
    let requestTimeout: Duration
    private let records = StoreRecords()
    private let running: Task<Void, Never>

    /// Why the store could not open.
    public struct OpenError: Error, CustomStringConvertible {
        /// One line a person can act on.
        public var description: String
    }

    /// Connects to the database at `url` (`postgres://user[:password]@host[:port]/database`,
    /// `?sslmode=disable|prefer|require`), migrates its schema and returns the store. Throws with a
    /// message naming the problem when the URL is wrong, the server cannot be reached within
    /// `connectTimeout`, or its schema is newer than this binary's.
    public static func open(
        url: String, statementTimeout: Duration = .seconds(10), connectTimeout: Duration = .seconds(10),
        poolSize: Int = 20, logger: Logger = Logger(label: "herald.postgres")
    ) async throws -> PostgresGatewayStore {
        var configuration: PostgresClient.Configuration
        do {
            configuration = try PostgresURL.configuration(url)
        } catch {
            throw OpenError(description: "\(error)")
        }
        configuration.options.connectTimeout = connectTimeout
        configuration.options.maximumConnections = max(2, poolSize)
        configuration.options.additionalStartupParameters = [
            ("statement_timeout", String(statementTimeout.components.seconds * 1000)),
            ("application_name", "herald-gateway"),
        ]
        let store = PostgresGatewayStore(
            configuration: configuration, requestTimeout: statementTimeout, logger: logger)
        do {
            try await withDeadline(connectTimeout) {
                for try await _ in try await store.client.query("SELECT 1", logger: logger) {}
            }
            _ = try await Self.unwrapping { try await PostgresSchema.migrate(store.client, logger: logger) }
        } catch let error as PostgresSchema.TooNew {
            store.close()
            throw OpenError(description: error.description)
        } catch {
            store.close()
            throw OpenError(description: "could not open the database \(PostgresURL.redacted(url)): \(describe(error))")
        }
        return store
    }

    private init(configuration: PostgresClient.Configuration, requestTimeout: Duration, logger: Logger) {
        self.requestTimeout = requestTimeout
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        self.logger = logger
        running = Task { await client.run() }
    }

    /// The secrets every node of the cluster shares (``GatewayStateDirectory/SharedSecrets``): the
    /// first node's proposal is kept, later ones get it back. Returns what the database holds.
    public func clusterSecrets(proposing proposal: [String: String]) async throws -> [String: String] {
        try await transaction { connection in
            let names = Array(proposal.keys)
            let values = names.map { proposal[$0]! }
            try await self.drain(
                """
                INSERT INTO cluster_secret (name, value)
                SELECT * FROM unnest(\(names)::text[], \(values)::text[]) ON CONFLICT (name) DO NOTHING
                """, on: connection)
            let held = try await self.rows(
                "SELECT name, value FROM cluster_secret", as: (String, String).self, on: connection)
            return Dictionary(held, uniquingKeysWith: { first, _ in first })
        }
    }

    /// Closes the pool's connections.
    public func close() { running.cancel() }

    deinit { running.cancel() }

    /// One transaction on one pooled connection, bounded by ``requestTimeout``; the error thrown
    /// inside it comes out as itself.
    ///
    /// Every statement's rows are read to the end (``drain(_:on:)``), even a `SELECT` of `void`s:
    /// with PostgresNIO 1.33, statements queued behind a result nobody reads never complete when
    /// the connection dies, and a gateway whose database restarted would hang instead of answering
    /// 503.
    func transaction<Result: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let client = client
        let leased = Mutex<PostgresConnection?>(nil)
        do {
            return try await withDeadline(requestTimeout) {
                try await client.withConnection { connection in
                    leased.withLock { $0 = connection }
                    return try await self.inTransaction(on: connection, body)
                }
            }
        } catch let error as DeadlineExceeded {
            // Answered as failed: the transaction should not commit later (unless its COMMIT is
            // already on the wire), and a connection stuck on a dead socket must not stay leased.
            // Closing it ends both; the pool opens another.
            if let connection = leased.withLock({ $0 }) { Task { try? await connection.close() } }
            throw error
        }
    }

    private func inTransaction<Result: Sendable>(
        on connection: PostgresConnection, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await self.drain("BEGIN", on: connection)
        do {
            let result = try await body(connection)
            try await self.drain("COMMIT", on: connection)
            return result
        } catch {
            // A connection that died took its transaction with it; ROLLBACK is for the
            // living (a statement sent on a closed connection may never complete).
            if !connection.isClosed { try? await self.drain("ROLLBACK", on: connection) }
            throw error
        }
    }

    /// A statement on a pooled connection, the wait for the connection and the reading of its rows
    /// included, bounded by ``requestTimeout``: with the database down, a request fails in that time
    /// (the provider is answered 503) instead of waiting for the pool's next attempt to connect.
    private func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        let client = client
        let logger = logger
        return try await withDeadline(requestTimeout) {
            try await Self.collect(client.query(query, logger: logger))
        }
    }

    private static func collect(_ sequence: PostgresRowSequence) async throws -> [PostgresRow] {
        var rows: [PostgresRow] = []
        for try await row in sequence { rows.append(row) }
        return rows
    }

    private static func unwrapping<Result>(_ body: () async throws -> Result) async throws -> Result {
        do {
            return try await body()
        } catch let error as PostgresTransactionError {
            throw error.closureError ?? error.commitError ?? error.beginError ?? error
        }
    }

    /// A message for a PostgresNIO error: the server's own message when there is one.
    static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] {
                return "\(message) (SQLSTATE \(error.serverInfo?[.sqlState] ?? "?"))"
            }
            return "\(error.code)"
        }
        return "\(error)"
    }

    func rows<each Column: PostgresDecodable>(
        _ query: PostgresQuery, as type: (repeat each Column).Type, on connection: PostgresConnection? = nil
    ) async throws -> [(repeat each Column)] {
        try await results(query, on: connection).map { try $0.decode(type) }
    }

    // MARK: Directory

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

    /// Runs a statement and reads its rows to the end.
    func drain(_ query: PostgresQuery, on connection: PostgresConnection? = nil) async throws {
        _ = try await results(query, on: connection)
    }

    /// A statement's rows, read to the end: on `connection` (inside a transaction, which has its
    /// own deadline), else on a pooled connection within ``requestTimeout``.
    private func results(_ query: PostgresQuery, on connection: PostgresConnection?) async throws -> [PostgresRow] {
        if let connection {
            try await Self.collect(connection.query(query, logger: logger))
        } else {
            try await self.query(query)
        }
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
        var latest: [String: Int] = [:]
        for (i, device) in devices.enumerated() { latest[device.id] = i }
        let kept = devices.indices.filter { latest[devices[$0].id] == $0 }
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
            for (r, record) in rows {
                try await self.drain(
                    """
                    INSERT INTO registration (environment, token, device_id, record)
                    VALUES (\(r.environment.rawValue), \(r.token.hex), \(r.deviceID), \(record))
                    ON CONFLICT (environment, token) DO UPDATE SET record = excluded.record
                    """, on: connection)
                if r.invalidatedAt == nil {
                    // Re-registered: it no longer belongs on the feedback list.
                    try await self.drain(
                        "DELETE FROM feedback WHERE environment = \(r.environment.rawValue) AND token = \(r.token.hex)",
                        on: connection)
                }
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

    // MARK: Offline store and delivery log

    public func commit(_ batch: StoreBatch, policy: OfflinePolicy, durable: Bool) async throws -> [String] {
        if batch.isEmpty { return [] }
        // Pushes the policy would push out within this very batch are never written.
        let (survivors, replacedInBatch) = policy.coalesce(batch.pushes)
        let pushes = try survivors.map { ($0, try records.metadata(of: $0)) }
        let logRows = LogRow.rows(of: batch)
        let removals = batch.removals
        // The queues this batch stores into, locked in one order by every node (no deadlock).
        let queueLocks = Array(Set(survivors.map { Self.queueLock(device: $0.deviceID, topic: $0.topic) })).sorted()
        let logger = logger
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
                try await self.drain(
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
            if !all.isEmpty {
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
                // Rows come out of unnest in order, so `seq` follows the batch.
                try await self.drain(
                    """
                    INSERT INTO event (apns_id, unique_id, record)
                    SELECT a, NULLIF(u, ''), r FROM unnest(\(apnsIDs)::text[], \(uniqueIDs)::text[], \(logRecords)::bytea[])
                    AS t(a, u, r)
                    """, on: connection)
            }
            return replaced.map(\.apnsID)
        }
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

    public func purgeExpired(now: Date) async throws -> [StoredPush] {
        try await rows(
            "DELETE FROM stored WHERE expires_at <= \(now.timeIntervalSince1970) RETURNING seq, record, payload",
            as: (Int64, Data, Data).self
        ).sorted { $0.0 < $1.0 }.map { try records.storedPush(record: $0.1, payload: $0.2) }
    }

    public func deliveryLog(id: String) async throws -> [DeliveryEvent] {
        let rows = try await rows(
            "SELECT apns_id, unique_id, record FROM event WHERE apns_id = \(id) OR unique_id = \(id) ORDER BY seq",
            as: (String, String?, Data).self)
        return try records.deliveryLog(rows: rows.map { (apnsID: $0.0, uniqueID: $0.1, record: $0.2) })
    }

    public func recentDeliveryEvents(rows count: Int) async throws -> [DeliveryEvent] {
        try await rows(
            "SELECT apns_id, unique_id, record FROM event ORDER BY seq DESC LIMIT \(max(0, count))",
            as: (String, String?, Data).self
        ).reversed().flatMap { try records.events(apnsID: $0.0, uniqueID: $0.1, record: $0.2) }
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
            return deleted ?? 0
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

    // MARK: Broadcast channels

    public func createChannel(_ channel: BroadcastChannel, limit: Int) async throws -> Bool {
        try await transaction { connection in
            // One creation at a time per app and environment, across nodes: the count holds.
            try await self.drain(
                """
                SELECT pg_advisory_xact_lock(hashtext(\(channel.bundleID) || chr(9) || \(channel.environment.rawValue)))
                """, on: connection)
            let count =
                try await self.rows(
                    """
                    SELECT count(*) FROM channel WHERE bundle_id = \(channel.bundleID)
                    AND environment = \(channel.environment.rawValue)
                    """, as: Int.self, on: connection
                ).first ?? 0
            guard count < limit else { return false }
            try await self.drain(
                """
                INSERT INTO channel (bundle_id, environment, id, storage_policy, created_at)
                VALUES (\(channel.bundleID), \(channel.environment.rawValue), \(channel.id),
                        \(channel.storagePolicy.rawValue), \(channel.createdAt.timeIntervalSince1970))
                """, on: connection)
            return true
        }
    }

    public func channel(bundleID: String, environment: APNsEnvironment, id: String) async throws -> BroadcastChannel? {
        try await rows(
            """
            SELECT storage_policy, created_at FROM channel
            WHERE bundle_id = \(bundleID) AND environment = \(environment.rawValue) AND id = \(id)
            """, as: (Int, Double).self
        ).first.flatMap { policy, created in
            ChannelStoragePolicy(rawValue: policy).map {
                BroadcastChannel(
                    id: id, bundleID: bundleID, environment: environment, storagePolicy: $0,
                    createdAt: Date(timeIntervalSince1970: created))
            }
        }
    }

    public func deleteChannel(bundleID: String, environment: APNsEnvironment, id: String) async throws -> Bool {
        try await transaction { connection in
            let existed = try await !self.rows(
                """
                DELETE FROM channel WHERE bundle_id = \(bundleID) AND environment = \(environment.rawValue) AND id = \(id)
                RETURNING id
                """, as: String.self, on: connection
            ).isEmpty
            try await self.drain(
                """
                DELETE FROM broadcast
                WHERE channel_id = \(id) AND environment = \(environment.rawValue) AND bundle_id = \(bundleID)
                """, on: connection)
            return existed
        }
    }

    public func saveBroadcast(_ m: BroadcastMessage) async throws {
        try await transaction { connection in
            try await self.drain(
                """
                DELETE FROM broadcast WHERE channel_id = \(m.channelID) AND environment = \(m.environment.rawValue)
                AND sent_at < \(m.sentAt.timeIntervalSince1970 - 60)
                """, on: connection)
            try await self.drain(
                """
                INSERT INTO broadcast (unique_id, channel_id, bundle_id, environment, storage_policy, request_id,
                    priority, expiration, payload, sent_at)
                VALUES (\(m.uniqueID), \(m.channelID), \(m.bundleID), \(m.environment.rawValue),
                    \(m.storagePolicy.rawValue), \(m.requestID), \(m.priority.rawValue), \(m.expiration),
                    \(m.payload), \(m.sentAt.timeIntervalSince1970))
                """, on: connection)
            // Heard by every node (this one too) when the transaction commits.
            try await self.drain("SELECT pg_notify(\(BroadcastChange.channel), \(m.uniqueID))", on: connection)
        }
    }

    public func broadcast(uniqueID: String) async throws -> BroadcastMessage? {
        try await broadcasts("WHERE unique_id = \(uniqueID)").first
    }

    public func latestBroadcast(channelID: String, environment: APNsEnvironment) async throws -> BroadcastMessage? {
        try await broadcasts(
            """
            WHERE channel_id = \(channelID) AND environment = \(environment.rawValue)
            ORDER BY sent_at DESC, unique_id DESC LIMIT 1
            """
        ).first
    }

    private func broadcasts(_ condition: PostgresQuery) async throws -> [BroadcastMessage] {
        var query = PostgresQuery(
            unsafeSQL: """
                SELECT unique_id, request_id, channel_id, bundle_id, environment, storage_policy, priority, expiration,
                    payload, sent_at FROM broadcast\u{20}
                """)
        query.sql += condition.sql
        query.binds = condition.binds
        return try await rows(query, as: (String, String, String, String, String, Int, Int, Int64?, Data, Double).self)
            .compactMap { unique, request, channel, bundle, environment, policy, priority, expiration, payload, sent in
                guard let environment = APNsEnvironment(rawValue: environment),
                    let policy = ChannelStoragePolicy(rawValue: policy), let priority = PushPriority(rawValue: priority)
                else { return nil }
                return BroadcastMessage(
                    uniqueID: unique, requestID: request, channelID: channel, bundleID: bundle,
                    environment: environment, storagePolicy: policy, priority: priority, expiration: expiration,
                    payload: payload, sentAt: Date(timeIntervalSince1970: sent))
            }
    }

    public func channelIDs(bundleID: String, environment: APNsEnvironment) async throws -> [String] {
        try await rows(
            """
            SELECT id FROM channel WHERE bundle_id = \(bundleID) AND environment = \(environment.rawValue)
            ORDER BY created_at, id
            """, as: String.self)
    }

    public func storedCount(device: String) async throws -> Int {
        try await rows("SELECT count(*) FROM stored WHERE device_id = \(device)", as: Int.self).first ?? 0
    }

    public func storedCount() async throws -> Int {
        try await rows("SELECT count(*) FROM stored", as: Int.self).first ?? 0
    }
}

// MARK: Fault rules

extension PostgresGatewayStore: FaultRuleStore {
    // Each change is announced on ``FaultChange/channel`` when it commits; every node then reads the
    // whole list again (rules are few).

    public func saveFaultRule(_ rule: FaultRule) async throws {
        let record = try records.encoder.encode(rule)
        try await transaction { connection in
            try await self.drain(
                """
                INSERT INTO fault_rule (id, record) VALUES (\(rule.id), \(record))
                ON CONFLICT (id) DO UPDATE SET record = excluded.record
                """, on: connection)
            try await self.notifyFaultRulesChanged(on: connection)
        }
    }

    public func deleteFaultRule(id: String) async throws -> Bool {
        try await transaction { connection in
            let gone = try await self.rows(
                "DELETE FROM fault_rule WHERE id = \(id) RETURNING id", as: String.self, on: connection)
            try await self.notifyFaultRulesChanged(on: connection)
            return !gone.isEmpty
        }
    }

    public func deleteAllFaultRules() async throws {
        try await transaction { connection in
            try await self.drain("DELETE FROM fault_rule", on: connection)
            try await self.notifyFaultRulesChanged(on: connection)
        }
    }

    /// Tells every node, when the transaction commits, to read the rules again.
    private func notifyFaultRulesChanged(on connection: PostgresConnection) async throws {
        try await drain("SELECT pg_notify(\(FaultChange.channel), '')", on: connection)
    }

    public func faultRules() async throws -> [FaultRule] {
        try await rows("SELECT record FROM fault_rule ORDER BY seq", as: Data.self).map {
            try records.decoder.decode(FaultRule.self, from: $0)
        }
    }
}

/// Runs `body`, throwing ``DeadlineExceeded`` if it has not finished after `limit`.
///
/// The caller is answered at the deadline even when `body` does not end: a statement on a connection
/// that died can ignore its cancellation, and a task group (which waits for all of its children)
/// would wait with it. `body` is cancelled and left to end on its own.
func withDeadline<T: Sendable>(_ limit: Duration, _ body: @Sendable @escaping () async throws -> T)
    async throws -> T
{
    let race = DeadlineRace<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            race.begin(
                continuation,
                work: Task {
                    do { race.end(.success(try await body())) } catch { race.end(.failure(error)) }
                },
                timer: Task {
                    try? await Task.sleep(for: limit)
                    race.end(.failure(DeadlineExceeded(limit: limit)))
                })
        }
    } onCancel: {
        race.end(.failure(CancellationError()))
    }
}

/// The first of a body's result, its deadline and its caller's cancellation, delivered once.
private final class DeadlineRace<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var tasks: [Task<Void, Never>] = []
        /// The outcome, once there is one (the caller's cancellation can come before ``begin``).
        var outcome: Result<T, any Error>?
    }
    private let state = Mutex(State())

    func begin(_ continuation: CheckedContinuation<T, any Error>, work: Task<Void, Never>, timer: Task<Void, Never>) {
        let outcome = state.withLock { state -> Result<T, any Error>? in
            if state.outcome == nil {
                state.continuation = continuation
                state.tasks = [work, timer]
            }
            return state.outcome
        }
        if let outcome {
            work.cancel()
            timer.cancel()
            continuation.resume(with: outcome)
        }
    }

    func end(_ result: Result<T, any Error>) {
        let taken = state.withLock { state -> (CheckedContinuation<T, any Error>?, [Task<Void, Never>])? in
            guard state.outcome == nil else { return nil }
            state.outcome = result
            defer {
                state.continuation = nil
                state.tasks = []
            }
            return (state.continuation, state.tasks)
        }
        guard let (continuation, tasks) = taken else { return }
        for task in tasks { task.cancel() }
        continuation?.resume(with: result)
    }
}

/// The server did not answer in time.
struct DeadlineExceeded: Error, CustomStringConvertible {
    var limit: Duration
    var description: String { "no answer within \(limit.components.seconds) s" }
}
