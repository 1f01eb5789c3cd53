import Foundation
import HeraldCore
import HeraldRuntime
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
public final class PostgresGatewayStore: GatewayStore, Sendable {
    let client: PostgresClient
    let logger: Logger
    /// How long one call may take, waiting for a pooled connection included (the statement timeout).
    let requestTimeout: Duration
    let records = StoreRecords()
    /// The rows of ``DeliveryCount``s this process adds to: its own, so that nodes committing at
    /// once never wait on each other's count rows (the counts are summed when read).
    let countWriter = UUID().uuidString.lowercased()
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
        poolSize: Int = 20, logger: Logger = .silent
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

    /// Runs `body` again, up to `attempts` times in all, when PostgreSQL ended it to break a deadlock
    /// (SQLSTATE 40P01) or a serialization failure (40001): what it did was rolled back whole. Only
    /// for writes that may run twice. Nodes that stop together, and the claims of the devices that
    /// move between them meanwhile, lock the same rows of `device_node` in different orders.
    func retryingConflicts<Result: Sendable>(attempts: Int = 4, _ body: () async throws -> Result) async throws
        -> Result
    {
        var attempt = 1
        while true {
            do {
                return try await body()
            } catch let error where attempt < attempts && Self.isConflict(error) {
                attempt += 1
            }
        }
    }

    /// Whether `error` is PostgreSQL ending a transaction to break a deadlock or a serialization
    /// conflict, which running it again may not meet.
    static func isConflict(_ error: any Error) -> Bool {
        guard let state = (error as? PSQLError)?.serverInfo?[.sqlState] else { return false }
        return state == "40P01" || state == "40001"
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

    /// Runs a statement and reads its rows to the end.
    func drain(_ query: PostgresQuery, on connection: PostgresConnection? = nil) async throws {
        _ = try await results(query, on: connection)
    }

    /// A statement's rows, read to the end: on `connection` (inside a transaction, which has its
    /// own deadline), else on a pooled connection within ``requestTimeout``.
    func results(_ query: PostgresQuery, on connection: PostgresConnection?) async throws -> [PostgresRow] {
        if let connection {
            try await Self.collect(connection.query(query, logger: logger))
        } else {
            try await self.query(query)
        }
    }
}
