import Crypto
import Foundation
import HeraldCore
import HeraldRuntime
import NIOSSL
import X509

/// The files a gateway keeps in its state directory: the SQLite database, the development CA,
/// the TLS server certificate, the admin token and the secret tokens are derived from.
/// Everything is created on first start and reused afterwards.
public struct GatewayStateDirectory: Sendable {
    /// The directory.
    public let url: URL

    /// Uses (and creates) `path`.
    public init(path: String) throws {
        url = URL(fileURLWithPath: path, isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// `gateway.sqlite`.
    public var databasePath: String { url.appendingPathComponent("gateway.sqlite").path }
    /// `ca.pem`: the CA certificate providers and devices trust.
    public var caCertificatePath: String { url.appendingPathComponent("ca.pem").path }
    var caKeyPath: String { url.appendingPathComponent("ca-key.pem").path }
    /// `server.pem`: the TLS server certificate.
    public var serverCertificatePath: String { url.appendingPathComponent("server.pem").path }
    var serverKeyPath: String { url.appendingPathComponent("server-key.pem").path }
    /// `admin-token`: the bearer token of the admin API.
    public var adminTokenPath: String { url.appendingPathComponent("admin-token").path }
    var secretPath: String { url.appendingPathComponent("token-secret").path }
    /// `gateway.json`: the addresses the running gateway listens on (written once it is up).
    public var runtimePath: String { url.appendingPathComponent("gateway.json").path }

    private func read(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    private func write(_ text: String, to path: String, secret: Bool) throws {
        let tmp = path + ".tmp"
        try Data(text.utf8).write(to: URL(fileURLWithPath: tmp), options: .atomic)
        if secret { try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: tmp) }
        guard rename(tmp, path) == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
    }

    /// The CA, created on first use.
    public func certificateAuthority() throws -> GatewayCA {
        if let cert = read(caCertificatePath), let key = read(caKeyPath) {
            return try GatewayCA(certificatePEM: cert, privateKeyPEM: key)
        }
        let ca = try GatewayCA.generate()
        try write(ca.privateKey.pemRepresentation, to: caKeyPath, secret: true)
        try write(try ca.certificatePEM, to: caCertificatePath, secret: false)
        return ca
    }

    /// The TLS server certificate and key, issued by the CA for `hosts` on first use.
    public func serverIdentity(ca: GatewayCA, hosts: [String]) throws -> (certificatePEM: String, keyPEM: String) {
        if let cert = read(serverCertificatePath), let key = read(serverKeyPath) { return (cert, key) }
        let key = P256.Signing.PrivateKey()
        let cert = try ca.issueServerCertificate(hosts: hosts, key: key)
        let pem = try cert.serializeAsPEM().pemString
        try write(key.pemRepresentation, to: serverKeyPath, secret: true)
        try write(pem, to: serverCertificatePath, secret: false)
        return (pem, key.pemRepresentation)
    }

    /// The admin token, created on first use.
    public func adminToken() throws -> String {
        if let token = read(adminTokenPath)?.trimmingCharacters(in: .whitespacesAndNewlines), !token.isEmpty {
            return token
        }
        let token = Self.randomHex(count: 24)
        try write(token + "\n", to: adminTokenPath, secret: true)
        return token
    }

    /// This node's id in a cluster (`node-id`, `node-` and 8 hex digits), created on first use: the
    /// same across restarts on this directory, never shared with another node.
    public func nodeID() throws -> String {
        let path = url.appendingPathComponent("node-id").path
        if let id = read(path)?.trimmingCharacters(in: .whitespacesAndNewlines), !id.isEmpty { return id }
        let id = "node-" + Self.randomHex(count: 4)
        try write(id + "\n", to: path, secret: false)
        return id
    }

    /// The secret device tokens are derived from, created on first use.
    public func tokenSecret() throws -> [UInt8] {
        if let hex = read(secretPath)?.trimmingCharacters(in: .whitespacesAndNewlines),
            let token = DeviceToken(hex: hex), token.bytes.count >= 32
        {
            return token.bytes
        }
        let secret = (0..<32).map { _ in UInt8.random(in: 0...255) }
        try write(DeviceToken(bytes: secret).hex + "\n", to: secretPath, secret: true)
        return secret
    }

    /// What the nodes of a cluster must hold alike (docs/cluster.md): the CA that issues every
    /// node's server certificate and the apps' certificates, the secret device tokens are derived
    /// from (a token minted on one node is checked on another), and the admin token.
    public struct SharedSecrets: Sendable, Equatable {
        /// `ca.pem`.
        public var caCertificatePEM: String
        /// `ca-key.pem`.
        public var caKeyPEM: String
        /// `token-secret`, in hex.
        public var tokenSecret: String
        /// `admin-token`.
        public var adminToken: String

        /// The secrets by name, as the database keeps them.
        public var fields: [String: String] {
            [
                "ca-certificate": caCertificatePEM, "ca-key": caKeyPEM, "token-secret": tokenSecret,
                "admin-token": adminToken,
            ]
        }

        /// The secrets from their names; throws naming the first one missing.
        public init(fields: [String: String]) throws {
            func field(_ name: String) throws -> String {
                guard let value = fields[name], !value.isEmpty else {
                    throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "no shared \(name)"])
                }
                return value
            }
            caCertificatePEM = try field("ca-certificate")
            caKeyPEM = try field("ca-key")
            tokenSecret = try field("token-secret")
            adminToken = try field("admin-token")
        }
    }

    /// This directory's secrets to share, each created on first use.
    public func sharedSecrets() throws -> SharedSecrets {
        _ = try certificateAuthority()
        return try SharedSecrets(fields: [
            "ca-certificate": read(caCertificatePath) ?? "", "ca-key": read(caKeyPath) ?? "",
            "token-secret": DeviceToken(bytes: try tokenSecret()).hex, "admin-token": try adminToken(),
        ])
    }

    /// Replaces this directory's secrets with the cluster's, and drops its server certificate so
    /// that the cluster's CA issues a new one.
    public func adopt(_ shared: SharedSecrets) throws {
        try write(shared.caKeyPEM, to: caKeyPath, secret: true)
        try write(shared.caCertificatePEM, to: caCertificatePath, secret: false)
        try write(shared.tokenSecret + "\n", to: secretPath, secret: true)
        try write(shared.adminToken + "\n", to: adminTokenPath, secret: true)
        for path in [serverCertificatePath, serverKeyPath] where FileManager.default.fileExists(atPath: path) {
            try FileManager.default.removeItem(atPath: path)
        }
    }

    /// Writes `gateway.json`.
    public func writeRuntime(_ info: GatewayInfo) throws {
        try write(String(decoding: try info.encoded(), as: UTF8.self), to: runtimePath, secret: false)
    }

    static func randomHex(count: Int) -> String {
        DeviceToken(bytes: (0..<count).map { _ in UInt8.random(in: 0...255) }).hex
    }

    /// A TLS context serving the gateway's certificate. For the provider API (the default) it asks
    /// for (does not require) client certificates from the CA and offers ALPN h2 and http/1.1; for
    /// the device link (`deviceLink: true`) it offers http/1.1 only, which WebSocket needs.
    public static func tlsContext(certificatePEM: String, keyPEM: String, ca: GatewayCA, deviceLink: Bool = false)
        throws -> NIOSSLContext
    {
        var configuration = try serverConfiguration(certificatePEM: certificatePEM, keyPEM: keyPEM)
        if deviceLink {
            configuration.applicationProtocols = ["http/1.1"]
        } else {
            configuration.applicationProtocols = ["h2", "http/1.1"]
            configuration.certificateVerification = .optionalVerification
            configuration.trustRoots = .certificates(
                try NIOSSLCertificate.fromPEMBytes(Array(try ca.certificatePEM.utf8)))
        }
        return try NIOSSLContext(configuration: configuration)
    }

    /// A server configuration with the gateway's certificate and key, TLS 1.2 or later.
    private static func serverConfiguration(certificatePEM: String, keyPEM: String) throws -> TLSConfiguration {
        let chain = try NIOSSLCertificate.fromPEMBytes(Array(certificatePEM.utf8)).map {
            NIOSSLCertificateSource.certificate($0)
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain,
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(keyPEM.utf8), format: .pem)))
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    }

    /// The TLS context of the legacy binary gateway and feedback service: no ALPN, and a client
    /// certificate is required (``LegacyServer`` checks it against the CA and the environment
    /// during the handshake).
    public static func legacyTLSContext(certificatePEM: String, keyPEM: String, ca: GatewayCA) throws -> NIOSSLContext {
        var configuration = try serverConfiguration(certificatePEM: certificatePEM, keyPEM: keyPEM)
        // TLS 1.2 at most, as the interface had: under TLS 1.3 a client counts the handshake done
        // before the server has checked its certificate, and a provider that writes and closes at
        // once can end the connection while the server is still checking.
        configuration.maximumTLSVersion = .tlsv12
        configuration.certificateVerification = .noHostnameVerification
        configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(try ca.certificatePEM.utf8)))
        return try NIOSSLContext(configuration: configuration)
    }
}
