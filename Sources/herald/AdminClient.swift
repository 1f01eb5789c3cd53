import ArgumentParser
import Foundation
import HeraldGateway
import HeraldRuntime

/// A client for a running gateway's admin API, on the API's own types (docs/admin-api.md).
struct AdminClient {
    let http: HTTPJSONClient

    /// The admin API at `url` with the bearer `token`; over `https://`, its certificate signed by
    /// the CA in the PEM file `ca`.
    init(url: String, token: String?, ca: String? = nil) {
        http = HTTPJSONClient(base: url, bearer: token, ca: ca)
    }

    /// The admin API of the gateway whose state directory is `state`: `--admin-url` or its
    /// `gateway.json`, `--admin-token` or its `admin-token`.
    init(state: String, url: String?, token: String?) throws {
        let directory = URL(fileURLWithPath: state)
        let runtime = directory.appendingPathComponent(GatewayInfo.fileName)
        let info = try? GatewayInfo.read(directory: directory)
        guard let resolvedURL = url ?? info?.adminURL else {
            // The command line is right; the gateway is not there: an error, not a usage error.
            throw CommandFailure("no running gateway found: \(runtime.path) is missing; pass --state or --admin-url")
        }
        let tokenFile = directory.appendingPathComponent("admin-token")
        guard
            let resolvedToken = token
                ?? (try? String(contentsOf: tokenFile, encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
        else { throw CommandFailure("no admin token: \(tokenFile.path) is missing; pass --admin-token") }
        // Off loopback the admin API speaks TLS with the gateway's CA, which is in its state directory
        // (looked for there first: a gateway in a container names the path it sees, not ours).
        let ca = [directory.appendingPathComponent("ca.pem").path, info?.caCertificate].compactMap { $0 }
            .first { FileManager.default.fileExists(atPath: $0) }
        self.init(url: resolvedURL, token: resolvedToken, ca: ca)
    }

    /// The admin API's URL.
    var url: String { http.base }

    /// `GET /teams`.
    func teams() async throws -> [Team] { try await http.call("GET", "/teams") }

    /// `POST /teams`.
    func createTeam(_ body: AdminAPI.TeamBody) async throws -> Team { try await http.call("POST", "/teams", body) }

    /// `GET /keys`.
    func keys() async throws -> [AdminAPI.KeyView] { try await http.call("GET", "/keys") }

    /// `POST /keys`: a new key's answer carries its private key.
    func createKey(_ body: AdminAPI.KeyBody) async throws -> AdminAPI.KeyView {
        try await http.call("POST", "/keys", body)
    }

    /// `GET /apps`.
    func apps() async throws -> [TeamApp] { try await http.call("GET", "/apps") }

    /// `POST /apps`.
    func createApp(_ body: AdminAPI.AppBody) async throws { try await http.perform("POST", "/apps", body) }

    /// `POST /apps/{bundleID}/certificates`: an app certificate and its key.
    func issueCertificate(app: String, _ body: AdminAPI.CertificateBody) async throws -> AdminAPI.CertificateView {
        try await http.call("POST", "/apps/\(app)/certificates", body)
    }

    /// `GET /devices`.
    func devices() async throws -> [AdminAPI.DeviceView] { try await http.call("GET", "/devices") }

    /// `GET /devices/{id}`.
    func device(_ id: String) async throws -> AdminAPI.DeviceView { try await http.call("GET", "/devices/\(id)") }
}
