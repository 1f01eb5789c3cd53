import ArgumentParser
import Foundation
import HeraldGateway
import HeraldRuntime

/// The database of `herald up`'s gateways, when they have one: the user's (`--database`) or a
/// private PostgreSQL server in `<state>/postgres`.
struct UpDatabase: Sendable {
    /// What the gateways are given.
    var url: String
    /// The URL as printed and written to up.json (no password), with where the server lives when
    /// it is ours.
    var shown: String
}

extension UpDatabase {
    /// The gateways' database: `--database` as given; with `--nodes` above 1 and none given, a private
    /// server (created on the first start, reused later, stopped with the rest); else none (SQLite).
    static func start(database: String?, nodes: Int, root: URL, children: Children) async throws -> UpDatabase? {
        if let database {
            return UpDatabase(url: database, shown: PostgresURL.redacted(database))
        }
        guard nodes > 1 else { return nil }
        let directory = root.appendingPathComponent("postgres")
        let server: PrivatePostgres
        do {
            // initdb and pg_ctl block while they run: off the concurrency threads.
            server = try await Task.detached { try PrivatePostgres.start(dataDirectory: directory) }.value
        } catch {
            throw ValidationError(
                "--nodes \(nodes) needs PostgreSQL: \(error). Give --database postgres://… or install Debian's "
                    + "postgresql package (initdb and pg_ctl are enough; no system service is used)")
        }
        children.atStop { try? server.stop() }
        return UpDatabase(url: server.url, shown: "\(server.url) (a private server in \(directory.path))")
    }
}
