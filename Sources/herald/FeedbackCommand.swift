import ArgumentParser
import Foundation
import HeraldCore
import HeraldNIO
import HeraldProvider

struct FeedbackCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feedback",
        abstract: "Read the legacy feedback service: the tokens of an app that was removed from its devices.",
        discussion: """
            The app certificate names the app. The service empties its list as it is read: act on what this \
            prints (drop a token only if the device did not register it again after the time shown). Without \
            options the address, certificate and CA come from `herald up`'s up.json.
            """)

    @Option(name: .long, help: "The feedback service's host:port (default: up.json's feedbackAddress).")
    var address: String?
    @Option(name: .long, help: "The app certificate (PEM).")
    var cert: String?
    @Option(name: .long, help: "The certificate's private key (PEM).")
    var certKey: String?
    @Option(name: .long, help: "CA certificate (PEM) to trust, e.g. the gateway's ca.pem.")
    var ca: String?
    @Option(name: .long, help: "The TLS server name the service's certificate must carry (default: the host).")
    var serverName: String?
    @OptionGroup var up: UpOption
    @Flag(name: .long, help: "Print the tuples as JSON.")
    var json = false

    func validate() throws {
        if (cert == nil) != (certKey == nil) { throw ValidationError("--cert and --cert-key go together") }
    }

    func run() async throws {
        let endpoint = try legacyEndpoint(
            address: address ?? up.defaults().info?.feedbackAddress, cert: cert, certKey: certKey, ca: ca,
            serverName: serverName, defaults: up.defaults())
        let tuples: [LegacyBinary.FeedbackTuple]
        do {
            tuples = try await APNsFeedbackReader.read(endpoint)
        } catch {
            throw CommandFailure(
                "feedback service \(endpoint.host):\(endpoint.port): \(ConnectFailure.describe(error))")
        }
        let formatter = ISO8601DateFormatter()
        if json {
            return try printJSONObject(
                tuples.map {
                    [
                        "time": .int(Int64($0.time)),
                        "date": .string(formatter.string(from: Date(timeIntervalSince1970: TimeInterval($0.time)))),
                        "token": .string(DeviceToken(bytes: $0.token).hex),
                    ] as [String: JSONValue]
                })
        }
        if tuples.isEmpty { print("the feedback list is empty") }
        for tuple in tuples {
            print(
                "\(formatter.string(from: Date(timeIntervalSince1970: TimeInterval(tuple.time))))  \(DeviceToken(bytes: tuple.token).hex)"
            )
        }
    }
}

/// A legacy endpoint from the options (`address` already falls back on up.json's), else `herald
/// up`'s up.json: the demo app's certificate and the gateway's CA.
func legacyEndpoint(
    address: String?, cert: String?, certKey: String?, ca: String?, serverName: String?, defaults: UpDefaults
) throws -> APNsLegacyEndpoint {
    guard let text = address else {
        throw defaults.missing("give the service's host:port")
    }
    guard let (host, port) = APNsLegacyEndpoint.address(text) else {
        throw ValidationError("'\(text)' is not host:port")
    }
    guard let certPath = cert ?? defaults.info?.binaryCertificate,
        let keyPath = certKey ?? defaults.info?.binaryPrivateKey
    else {
        throw defaults.missing("give --cert and --cert-key (an app certificate from the gateway's CA)")
    }
    // A file from up.json is named as such: the person gave no option for it.
    func read(_ path: String, _ option: String, given: String?) throws -> String {
        try CLIFile.text(path, for: given == nil ? "up.json's \(option.dropFirst(2))" : option)
    }
    return APNsLegacyEndpoint(
        host: host, port: port, certificateChainPEM: try read(certPath, "--cert", given: cert),
        privateKeyPEM: try read(keyPath, "--cert-key", given: certKey),
        caPEM: try (ca ?? defaults.info?.caCertificate).map { try read($0, "--ca", given: ca) },
        serverName: serverName)
}
