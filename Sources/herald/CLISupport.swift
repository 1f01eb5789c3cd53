import ArgumentParser
import Foundation
import HeraldCore
import HeraldProvider
import HeraldRuntime

/// Prints a value as pretty JSON (ISO 8601 dates, sorted keys).
func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder.appLink
    encoder.outputFormatting.insert(.prettyPrinted)
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}

/// Prints an answer or a result as pretty JSON with sorted keys (slashes escaped, as the CLI has
/// always printed them).
func printJSONObject(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}

/// Where the device API of a running `herald device` is: `--api-url`, or the `device.json` in its
/// state directory, or the device of a `herald up` in `.herald`.
func deviceAPIURL(state: String?, url: String?) throws -> String {
    if let url { return url }
    let candidates =
        state.map { [$0] } ?? [".herald/device"]
    for directory in candidates {
        if let info = try? DeviceInfo.read(directory: URL(fileURLWithPath: directory)) { return info.apiURL }
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
    /// team (each from `up.json` when not given).
    func authentication(defaults: UpDefaults) throws -> APNsAuthentication {
        if let cert, let certKey {
            return .certificate(
                chainPEM: try CLIFile.text(cert, for: "--cert"),
                privateKeyPEM: try CLIFile.text(certKey, for: "--cert-key"))
        }
        guard let p8 = p8 ?? defaults.info?.p8, let keyID = keyId ?? defaults.info?.keyID,
            let team = team ?? defaults.info?.teamID
        else { throw defaults.missing("give --p8, --key-id and --team (or --cert and --cert-key)") }
        // A key from up.json is named as such: the person gave no --p8.
        let option = self.p8 == nil ? "up.json's key" : "--p8"
        let pem = try CLIFile.text(p8, for: option)
        do {
            return .token(try APNsSigningKey(p8: pem, keyID: keyID, teamID: team))
        } catch {
            throw ValidationError("\(option): \(p8) is not a PEM P-256 private key")
        }
    }

    /// The CA to trust: `--ca`, else `up.json`'s (none is read for Apple's hosts).
    func trustedCAPEM(defaults: UpDefaults) throws -> String? {
        try (ca ?? defaults.info?.caCertificate).map { try CLIFile.text($0, for: ca == nil ? "up.json's CA" : "--ca") }
    }
}

extension LogFormat: ExpressibleByArgument {}
