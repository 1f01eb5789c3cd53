import Foundation
import HeraldGateway
import HeraldTesting
import Testing

/// The two stores that implement ``GatewayStore``: the store suites run against both, the
/// PostgreSQL one on the test process's private server (``TestPostgres``), which must start.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// Where a store's data lives: a new SQLite file or a new PostgreSQL database.
    struct Location: Sendable {
        var kind: StoreKind
        var path: String

        /// A store on this data: opening it again is a restart of the gateway.
        func open() async throws -> any GatewayStore {
            switch kind {
            case .sqlite: try SQLiteGatewayStore(path: path)
            case .postgres: try await PostgresGatewayStore.forTests(url: path)
            }
        }
    }

    /// A new, empty place for a store.
    func location() async throws -> Location {
        switch self {
        case .sqlite:
            Location(
                kind: self,
                path: FileManager.default.temporaryDirectory.appendingPathComponent("gw-\(UUID()).sqlite").path)
        case .postgres: Location(kind: self, path: try await TestPostgres.database())
        }
    }

    /// A new, empty store.
    func store() async throws -> any GatewayStore { try await location().open() }
}

extension PostgresGatewayStore {
    /// A store for the tests, with timeouts that a busy machine does not trip: with every suite
    /// running at once on two cores, the tests that wait on processes hold Swift concurrency's
    /// threads, and the pool's work can wait seconds for one.
    static func forTests(url: String, statementTimeout: Duration = .seconds(60)) async throws -> PostgresGatewayStore {
        try await open(url: url, statementTimeout: statementTimeout, connectTimeout: .seconds(60))
    }
}
