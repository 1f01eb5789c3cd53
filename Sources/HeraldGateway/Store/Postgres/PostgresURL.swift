import Foundation
import PostgresNIO

/// `--database postgres://user[:password]@host[:port]/database[?sslmode=disable|prefer|require]`
/// as PostgresNIO's client configuration. `postgresql://` works too; the port defaults to 5432.
public enum PostgresURL {
    /// What is wrong with a database URL.
    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    static func configuration(_ string: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: string), let scheme = components.scheme,
            ["postgres", "postgresql"].contains(scheme.lowercased())
        else {
            throw Invalid(
                description:
                    "--database must be a URL like postgres://user@127.0.0.1:5432/herald, not \(redacted(string))")
        }
        guard let host = components.host, !host.isEmpty else {
            throw Invalid(description: "--database names no host: \(redacted(string))")
        }
        guard let user = components.user, !user.isEmpty else {
            throw Invalid(description: "--database names no user (postgres://USER@host/database): \(redacted(string))")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        guard !database.isEmpty, !database.contains("/") else {
            throw Invalid(
                description: "--database names no database (postgres://user@host/DATABASE): \(redacted(string))")
        }
        let mode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? "prefer"
        let tls: PostgresClient.Configuration.TLS
        switch mode {
        case "disable": tls = .disable
        case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
        case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
        default:
            throw Invalid(description: "--database sslmode must be disable, prefer or require, not \(mode)")
        }
        return PostgresClient.Configuration(
            host: host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host,
            port: components.port ?? 5432, username: user.removingPercentEncoding ?? user,
            password: components.password?.removingPercentEncoding, database: database, tls: tls)
    }

    /// The URL with its password replaced by `***`, for messages and logs (any text that is not
    /// such a URL comes back as it is).
    public static func redacted(_ string: String) -> String {
        guard var components = URLComponents(string: string), components.password != nil else { return string }
        components.password = "***"
        return components.string ?? "(a database URL)"
    }
}
