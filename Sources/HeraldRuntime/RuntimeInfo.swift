import Foundation

/// A file a running Herald process writes into its state directory once it listens, for the CLI,
/// the tests and scripts to find it: `gateway.json` (``GatewayInfo``), `device.json`
/// (``DeviceInfo``) and `herald up`'s `up.json` (``UpInfo``). Each is one flat JSON object of
/// strings, sorted keys, pretty-printed; scripts read its keys by name, so the names are stable.
public protocol RuntimeInfo: Codable, Sendable, Equatable {
    /// The file's name in its state directory.
    static var fileName: String { get }
}

/// Why a runtime file could not be read.
public struct RuntimeInfoError: Error, CustomStringConvertible {
    /// The file that was looked for.
    public var path: String
    /// Whether the file exists (then it could not be parsed).
    public var exists: Bool
    /// What went wrong, for a person.
    public var description: String
}

extension RuntimeInfo {
    /// Reads the file at `path`; throws ``RuntimeInfoError`` when it is missing or is not this file.
    public static func read(from path: String) throws -> Self {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw RuntimeInfoError(path: path, exists: false, description: "\(path) does not exist")
        }
        do {
            return try JSONDecoder().decode(Self.self, from: data)
        } catch {
            throw RuntimeInfoError(
                path: path, exists: true, description: "\(path) is not a valid \(fileName): \(error)")
        }
    }

    /// Reads `<directory>/<fileName>`.
    public static func read(directory: URL) throws -> Self {
        try read(from: directory.appendingPathComponent(fileName).path)
    }

    /// The file's bytes: sorted keys, pretty-printed, slashes as they are, a final newline.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self) + Data("\n".utf8)
    }

    /// Writes the file at `path` atomically.
    public func write(to path: String) throws {
        try encoded().write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// The keys and values as the file has them (for log metadata and printing).
    public var fields: [String: String] {
        (try? JSONDecoder().decode([String: String].self, from: encoded())) ?? [:]
    }
}

/// `gateway.json`: where a running gateway listens, written by `Gateway.run` once every listener
/// is bound (and removed by nothing: a stale one's `pid` tells).
public struct GatewayInfo: RuntimeInfo {
    /// `gateway.json`.
    public static let fileName = "gateway.json"

    /// The TLS provider API, `https://localhost:<port>`.
    public var providerURL: String
    /// The loopback development listener (h2c and HTTP/1.1), unless it is off.
    public var developmentURL: String?
    /// The device link over TLS, `wss://localhost:<port>/device/v1`.
    public var linkURL: String
    /// The device link in cleartext from loopback, `ws://127.0.0.1:<port>/device/v1`.
    public var linkDevelopmentURL: String
    /// The legacy binary interface, `localhost:<port>`, unless it is off.
    public var binaryAddress: String?
    /// The legacy feedback service, `localhost:<port>`, unless it is off.
    public var feedbackAddress: String?
    /// The channel management API over TLS, unless it is off.
    public var channelsURL: String?
    /// The channel management API in cleartext on loopback, unless it is off.
    public var channelsDevelopmentURL: String?
    /// The admin API.
    public var adminURL: String
    /// The admin API's bearer token.
    public var adminToken: String
    /// The path of the gateway's CA certificate (PEM), for clients to trust.
    public var caCertificate: String
    /// On a cluster, this node's id.
    public var nodeID: String?
    /// On a cluster, where other nodes forward pushes for devices linked here.
    public var clusterURL: String?
    /// The gateway's process id, in decimal.
    public var pid: String

    /// Creates the file's contents.
    public init(
        providerURL: String, developmentURL: String? = nil, linkURL: String, linkDevelopmentURL: String,
        binaryAddress: String? = nil, feedbackAddress: String? = nil, channelsURL: String? = nil,
        channelsDevelopmentURL: String? = nil, adminURL: String, adminToken: String, caCertificate: String,
        nodeID: String? = nil, clusterURL: String? = nil, pid: String
    ) {
        self.providerURL = providerURL
        self.developmentURL = developmentURL
        self.linkURL = linkURL
        self.linkDevelopmentURL = linkDevelopmentURL
        self.binaryAddress = binaryAddress
        self.feedbackAddress = feedbackAddress
        self.channelsURL = channelsURL
        self.channelsDevelopmentURL = channelsDevelopmentURL
        self.adminURL = adminURL
        self.adminToken = adminToken
        self.caCertificate = caCertificate
        self.nodeID = nodeID
        self.clusterURL = clusterURL
        self.pid = pid
    }
}

/// `device.json`: where a running device daemon listens, written once its device API is bound and
/// removed when it stops.
public struct DeviceInfo: RuntimeInfo {
    /// `device.json`.
    public static let fileName = "device.json"

    /// The device API (and the web device at its `/`), `http://<host>:<port>`.
    public var apiURL: String
    /// The path of the app link socket.
    public var appLink: String
    /// The device's id at its push service, once it has one.
    public var deviceID: String?
    /// The daemon's process id, in decimal.
    public var pid: String

    /// Creates the file's contents.
    public init(apiURL: String, appLink: String, deviceID: String? = nil, pid: String) {
        self.apiURL = apiURL
        self.appLink = appLink
        self.deviceID = deviceID
        self.pid = pid
    }
}
