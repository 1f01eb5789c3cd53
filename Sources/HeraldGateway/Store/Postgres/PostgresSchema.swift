import Foundation
import Logging
import PostgresNIO

/// The PostgreSQL store's schema, as numbered migrations run in order at start. A migration is
/// never edited once released: a change is a new one. The versions applied are in
/// `herald_schema`; a database that has a version this binary does not know was written by a newer
/// Herald, and is refused rather than guessed at.
enum PostgresSchema {
    /// One step of the schema.
    struct Migration: Sendable {
        var version: Int
        var name: String
        var statements: [String]
    }

    /// The database was migrated by a newer Herald.
    struct TooNew: Error, CustomStringConvertible {
        var found: Int
        var known: Int
        var description: String {
            "the database's schema is at version \(found), newer than this herald knows (\(known)): "
                + "run the newer herald, or point --database at another database"
        }
    }

    static let migrations: [Migration] = [
        Migration(
            version: 1, name: "gateway",
            statements: [
                // The directory: each record is the model's JSON, as in the SQLite store.
                "CREATE TABLE team (id text PRIMARY KEY, record bytea NOT NULL)",
                "CREATE TABLE provider_key (id text PRIMARY KEY, record bytea NOT NULL)",
                "CREATE TABLE app (bundle_id text PRIMARY KEY, record bytea NOT NULL)",
                "CREATE TABLE device (id text PRIMARY KEY, record bytea NOT NULL)",
                """
                CREATE TABLE registration (
                    environment text NOT NULL, token text NOT NULL, device_id text NOT NULL,
                    record bytea NOT NULL, PRIMARY KEY (environment, token))
                """,
                "CREATE INDEX registration_device ON registration (device_id)",
                """
                CREATE TABLE feedback (
                    bundle_id text NOT NULL, environment text NOT NULL, token text NOT NULL,
                    removed_at double precision NOT NULL, PRIMARY KEY (bundle_id, environment, token))
                """,
                // The offline store: `seq` orders each (device, topic) queue.
                """
                CREATE TABLE stored (
                    seq bigserial PRIMARY KEY, apns_id text NOT NULL, device_id text NOT NULL,
                    topic text NOT NULL, collapse_id text, expires_at double precision NOT NULL,
                    record bytea NOT NULL, payload bytea NOT NULL)
                """,
                "CREATE INDEX stored_device_topic ON stored (device_id, topic, seq)",
                "CREATE INDEX stored_apns_id ON stored (device_id, apns_id)",
                "CREATE INDEX stored_expiry ON stored (expires_at)",
                // The delivery log: one row per run of one push's events.
                """
                CREATE TABLE event (
                    seq bigserial PRIMARY KEY, apns_id text NOT NULL, unique_id text, record bytea NOT NULL)
                """,
                "CREATE INDEX event_apns_id ON event (apns_id)",
                "CREATE INDEX event_unique_id ON event (unique_id)",
                // Where the log stood at each hourly purge (see `purgeDeliveryLog`).
                "CREATE TABLE event_mark (at double precision PRIMARY KEY, seq bigint NOT NULL)",
                // What the nodes share from their state directories: the CA, the token secret, the
                // admin token (``GatewayStateDirectory/SharedSecrets``).
                "CREATE TABLE cluster_secret (name text PRIMARY KEY, value text NOT NULL)",
            ]),
        Migration(
            version: 2, name: "fault rules",
            statements: [
                // The admin API's fault rules, shared by the nodes (FaultRuleStore); `seq` keeps the
                // order they were added in, which is the order they are matched in.
                "CREATE TABLE fault_rule (seq bigserial, id text PRIMARY KEY, record bytea NOT NULL)"
            ]),
        Migration(
            version: 3, name: "nodes",
            statements: [
                // The gateways of the cluster (``ClusterNode``): each writes its heartbeat.
                """
                CREATE TABLE node (
                    id text PRIMARY KEY, address text NOT NULL, started_at double precision NOT NULL,
                    heartbeat_at double precision NOT NULL, stopped_at double precision)
                """,
                // Which node holds each device's link. A row stays when the link closes (node_id
                // NULL), so that `epoch` only grows: a node releases only the connection it claimed.
                """
                CREATE TABLE device_node (
                    device_id text PRIMARY KEY, node_id text, epoch bigint NOT NULL,
                    connected_at double precision NOT NULL)
                """,
                "CREATE INDEX device_node_node ON device_node (node_id)",
            ]),
        Migration(
            version: 4, name: "broadcast channels",
            statements: [
                // The apps' broadcast channels (``BroadcastChannel``, docs/broadcast.md).
                """
                CREATE TABLE channel (
                    bundle_id text NOT NULL, environment text NOT NULL, id text NOT NULL,
                    storage_policy integer NOT NULL, created_at double precision NOT NULL,
                    PRIMARY KEY (bundle_id, environment, id))
                """,
                // Messages broadcast on them (``BroadcastMessage``): the recent ones, and the most recent.
                """
                CREATE TABLE broadcast (
                    unique_id text PRIMARY KEY, channel_id text NOT NULL, bundle_id text NOT NULL,
                    environment text NOT NULL, storage_policy integer NOT NULL, request_id text NOT NULL,
                    priority integer NOT NULL, expiration bigint, payload bytea NOT NULL,
                    sent_at double precision NOT NULL)
                """,
                "CREATE INDEX broadcast_channel ON broadcast (channel_id, environment, sent_at)",
            ]),
        Migration(
            version: 5, name: "delivery counts",
            statements: [
                // Pushes by day, app and Apple's delivery state (``DeliveryCount``), in rows of each
                // process that writes them (`writer`), summed when read: nodes never wait on each
                // other's rows.
                """
                CREATE TABLE delivery_count (
                    day text NOT NULL, app text NOT NULL, state text NOT NULL, writer text NOT NULL,
                    count bigint NOT NULL, PRIMARY KEY (day, app, state, writer))
                """
            ]),
    ]

    /// The newest version this binary knows.
    static var latest: Int { migrations.map(\.version).max() ?? 0 }

    /// Brings the database to ``latest``: one transaction under an advisory lock, so that nodes
    /// starting together migrate once. Throws ``TooNew`` (changing nothing) when the database is
    /// ahead of this binary. Returns the versions applied.
    @discardableResult
    static func migrate(_ client: PostgresClient, logger: Logger) async throws -> [Int] {
        try await client.withTransaction(logger: logger) { connection in
            // Every statement's rows are read (see PostgresGatewayStore.transaction).
            for try await _ in try await connection.query("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger) {}
            for try await _ in try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS herald_schema (
                    version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
                """, logger: logger)
            {}
            var current = 0
            for try await version in try await connection.query(
                "SELECT coalesce(max(version), 0) FROM herald_schema", logger: logger
            ).decode(Int.self) {
                current = version
            }
            if current > latest { throw TooNew(found: current, known: latest) }
            var applied: [Int] = []
            for migration in migrations where migration.version > current {
                for statement in migration.statements {
                    for try await _ in try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger) {
                    }
                }
                for try await _ in try await connection.query(
                    "INSERT INTO herald_schema (version, name) VALUES (\(migration.version), \(migration.name))",
                    logger: logger)
                {}
                applied.append(migration.version)
            }
            return applied
        }
    }

    /// The advisory lock that serialises migrations ("herald" in ASCII).
    static let lockKey: Int64 = 0x6865_7261_6C64
}
