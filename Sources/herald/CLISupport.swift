import ArgumentParser
import Foundation
import HeraldCore
import HeraldProvider

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Prints a value as pretty JSON (ISO 8601 dates, sorted keys).
func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder.appLink
    encoder.outputFormatting.insert(.prettyPrinted)
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}

/// Prints a `JSONSerialization` object as pretty JSON.
func printJSONObject(_ object: Any) throws {
    let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
    print(String(decoding: data, as: UTF8.self))
}

/// Reads a JSON object file written by a running process (`gateway.json`, `device.json`, `up.json`).
func readRuntime(_ path: String) -> [String: Any]? {
    guard let data = FileManager.default.contents(atPath: path) else { return nil }
    return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
}

/// Where the device API of a running `herald device` is: `--api-url`, or the `device.json` in its
/// state directory, or the device of a `herald up` in `.herald`.
func deviceAPIURL(state: String?, url: String?) throws -> String {
    if let url { return url }
    let candidates =
        state.map { [$0] } ?? [".herald/device"]
    for directory in candidates {
        if let api = readRuntime(URL(fileURLWithPath: directory).appendingPathComponent("device.json").path)?[
            "apiURL"] as? String
        {
            return api
        }
    }
    throw ValidationError(
        "no running device found (looked for device.json in \(candidates.joined(separator: ", "))); "
            + "pass --device-state or --api-url")
}

/// The app link socket of a running `herald device`.
func appLinkPath(state: String?, socket: String?) throws -> String {
    if let socket { return socket }
    if let launched = ProcessInfo.processInfo.environment[AppLink.Environment.socket] { return launched }
    let candidates = state.map { [$0] } ?? [".herald/device"]
    for directory in candidates {
        let path = URL(fileURLWithPath: directory).appendingPathComponent(AppLink.socketName).path
        if FileManager.default.fileExists(atPath: path) { return path }
    }
    throw ValidationError(
        "no app link found (looked for \(AppLink.socketName) in \(candidates.joined(separator: ", "))); "
            + "pass --device-state or --socket")
}

/// A tiny JSON-over-HTTP client for the device API and the admin API.
struct HTTPJSONClient {
    let base: String
    var bearer: String?

    /// Sends a request and returns the status and body; a status of 400 or more throws with the
    /// server's message.
    func send(_ method: String, _ path: String, body: Data? = nil) async throws -> (Int, Data) {
        guard let url = URL(string: base + path) else { throw ValidationError("bad URL \(base + path)") }
        var request = URLRequest(url: url)
        request.httpMethod = method
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "authorization") }
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "content-type")
        }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await URLSession.shared.data(for: request)
        } catch {
            throw ValidationError("\(method) \(base + path): \(error.localizedDescription)")
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard status < 400 else {
            let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
            let message = (object?["error"] as? [String: Any])?["message"] as? String
            throw ValidationError(
                "\(method) \(path): HTTP \(status): \(message ?? String(decoding: data, as: UTF8.self))")
        }
        return (status, data)
    }

    /// Sends a JSON object body and parses a JSON answer.
    func json(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> Any? {
        let payload = try body.map { try JSONSerialization.data(withJSONObject: $0) }
        let (_, data) = try await send(method, path, body: payload)
        return data.isEmpty ? nil : try JSONSerialization.jsonObject(with: data)
    }
}

/// The path of the running `herald` executable, to start its other roles.
func currentExecutable() -> String {
    if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return path }
    return URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path
}

/// How a provider command authenticates and what it trusts: `herald push` and `herald channel`
/// take the same options.
struct ProviderCredentials: ParsableArguments {
    @Option(name: .long, help: "CA certificate (PEM) to trust, e.g. the gateway's ca.pem.")
    var ca: String?
    @Option(name: .long, help: "Token authentication: the .p8 key file.")
    var p8: String?
    @Option(name: .long, help: "Token authentication: key id.")
    var keyId: String?
    @Option(name: .long, help: "Token authentication: team id.")
    var team: String?
    @Option(name: .long, help: "Certificate authentication: the client certificate (PEM).")
    var cert: String?
    @Option(name: .long, help: "Certificate authentication: the certificate's private key (PEM).")
    var certKey: String?

    func validate() throws {
        if (cert == nil) != (certKey == nil) { throw ValidationError("--cert and --cert-key go together") }
    }

    /// The certificate and key when given, else a provider token from the `.p8` key, its key id and
    /// team (each from `up.json`'s `defaults` when not given).
    func authentication(defaults: [String: Any]) throws -> APNsAuthentication {
        if let cert, let certKey {
            return .certificate(
                chainPEM: try String(contentsOfFile: cert, encoding: .utf8),
                privateKeyPEM: try String(contentsOfFile: certKey, encoding: .utf8))
        }
        guard let p8 = p8 ?? defaults["p8"] as? String, let keyID = keyId ?? defaults["keyID"] as? String,
            let team = team ?? defaults["teamID"] as? String
        else { throw ValidationError("give --p8, --key-id and --team (or --cert and --cert-key)") }
        do {
            return .token(try APNsSigningKey(p8File: p8, keyID: keyID, teamID: team))
        } catch {
            throw ValidationError("--p8: \(p8): \(error)")
        }
    }

    /// The CA to trust: `--ca`, else `up.json`'s when `useUp` (not for Apple's hosts).
    func trustedCAPEM(defaults: [String: Any], useUp: Bool) throws -> String? {
        try (ca ?? (useUp ? defaults["caCertificate"] as? String : nil)).map {
            try String(contentsOfFile: $0, encoding: .utf8)
        }
    }
}
