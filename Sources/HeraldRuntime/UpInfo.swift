import Foundation

/// `up.json`: everything `herald up` started and made, written once the demo device has
/// registered. `herald push`, `herald feedback`, `herald channel` and the examples take their
/// defaults from it. Flat keys, like the other runtime files: the nodes after the first of a
/// cluster as `node<k><Key>` (`node2AdminURL`), their count as the string `nodes`.
public struct UpInfo: RuntimeInfo {
    /// `up.json`.
    public static let fileName = "up.json"

    /// The addresses of one gateway node after the first.
    public struct Node: Sendable, Equatable {
        /// The node's TLS provider API.
        public var providerURL: String
        /// The node's development listener.
        public var developmentURL: String
        /// The node's admin API.
        public var adminURL: String
        /// The node's device link in cleartext.
        public var linkDevelopmentURL: String
        /// The node's legacy binary interface.
        public var binaryAddress: String
        /// The node's legacy feedback service.
        public var feedbackAddress: String

        /// Creates a node's addresses.
        public init(
            providerURL: String, developmentURL: String, adminURL: String, linkDevelopmentURL: String,
            binaryAddress: String, feedbackAddress: String
        ) {
            self.providerURL = providerURL
            self.developmentURL = developmentURL
            self.adminURL = adminURL
            self.linkDevelopmentURL = linkDevelopmentURL
            self.binaryAddress = binaryAddress
            self.feedbackAddress = feedbackAddress
        }

        /// A node's addresses from its `gateway.json`; `nil` when it lacks one of them.
        public init?(_ gateway: GatewayInfo) {
            guard let developmentURL = gateway.developmentURL, let binaryAddress = gateway.binaryAddress,
                let feedbackAddress = gateway.feedbackAddress
            else { return nil }
            self.init(
                providerURL: gateway.providerURL, developmentURL: developmentURL, adminURL: gateway.adminURL,
                linkDevelopmentURL: gateway.linkDevelopmentURL, binaryAddress: binaryAddress,
                feedbackAddress: feedbackAddress)
        }
    }

    /// The first node's TLS provider API.
    public var providerURL: String
    /// The first node's development listener (h2c and HTTP/1.1).
    public var developmentURL: String
    /// The first node's admin API.
    public var adminURL: String
    /// The admin API's bearer token.
    public var adminToken: String
    /// The push console, `<adminURL>/console`.
    public var consoleURL: String
    /// The path of the gateway's CA certificate (PEM).
    public var caCertificate: String
    /// The demo team.
    public var teamID: String
    /// The demo key's id.
    public var keyID: String
    /// The path of the demo key's `.p8` file.
    public var p8: String
    /// The demo app's bundle id.
    public var topic: String
    /// The demo app's environment (`development`).
    public var environment: String
    /// The demo app's device token.
    public var deviceToken: String
    /// The device API.
    public var deviceAPI: String
    /// The device's app link socket.
    public var appLink: String
    /// The device's id at the push service, when it said.
    public var deviceID: String?
    /// The device link in cleartext of the node the device links to (the last).
    public var linkURL: String
    /// The first node's legacy binary interface.
    public var binaryAddress: String
    /// The first node's legacy feedback service.
    public var feedbackAddress: String
    /// The path of the demo app's certificate for the binary interface (PEM).
    public var binaryCertificate: String
    /// The path of that certificate's private key (PEM).
    public var binaryPrivateKey: String
    /// The first node's channel management API over TLS.
    public var channelsURL: String
    /// The first node's channel management API in cleartext.
    public var channelsDevelopmentURL: String
    /// The cluster's database, its password hidden, when the gateways share one.
    public var database: String?
    /// Nodes 2, 3, … of a cluster.
    public var otherNodes: [Node]

    /// How many gateway nodes run.
    public var nodes: Int { otherNodes.count + 1 }

    /// Creates the file's contents.
    public init(
        providerURL: String, developmentURL: String, adminURL: String, adminToken: String, consoleURL: String,
        caCertificate: String, teamID: String, keyID: String, p8: String, topic: String, environment: String,
        deviceToken: String, deviceAPI: String, appLink: String, deviceID: String?, linkURL: String,
        binaryAddress: String, feedbackAddress: String, binaryCertificate: String, binaryPrivateKey: String,
        channelsURL: String, channelsDevelopmentURL: String, database: String?, otherNodes: [Node]
    ) {
        self.providerURL = providerURL
        self.developmentURL = developmentURL
        self.adminURL = adminURL
        self.adminToken = adminToken
        self.consoleURL = consoleURL
        self.caCertificate = caCertificate
        self.teamID = teamID
        self.keyID = keyID
        self.p8 = p8
        self.topic = topic
        self.environment = environment
        self.deviceToken = deviceToken
        self.deviceAPI = deviceAPI
        self.appLink = appLink
        self.deviceID = deviceID
        self.linkURL = linkURL
        self.binaryAddress = binaryAddress
        self.feedbackAddress = feedbackAddress
        self.binaryCertificate = binaryCertificate
        self.binaryPrivateKey = binaryPrivateKey
        self.channelsURL = channelsURL
        self.channelsDevelopmentURL = channelsDevelopmentURL
        self.database = database
        self.otherNodes = otherNodes
    }

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Node `k`'s key for `name`: `node2AdminURL`.
    static func nodeKey(_ node: Int, _ name: String) -> Key {
        Key("node\(node)" + name.prefix(1).uppercased() + name.dropFirst())
    }

    /// Decodes the flat object.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        func text(_ name: String) throws -> String { try c.decode(String.self, forKey: Key(name)) }
        let nodes = Int(try c.decodeIfPresent(String.self, forKey: Key("nodes")) ?? "1") ?? 1
        var others: [Node] = []
        for node in stride(from: 2, through: nodes, by: 1) {
            func at(_ name: String) throws -> String { try c.decode(String.self, forKey: Self.nodeKey(node, name)) }
            others.append(
                Node(
                    providerURL: try at("providerURL"), developmentURL: try at("developmentURL"),
                    adminURL: try at("adminURL"), linkDevelopmentURL: try at("linkDevelopmentURL"),
                    binaryAddress: try at("binaryAddress"), feedbackAddress: try at("feedbackAddress")))
        }
        self.init(
            providerURL: try text("providerURL"), developmentURL: try text("developmentURL"),
            adminURL: try text("adminURL"), adminToken: try text("adminToken"), consoleURL: try text("consoleURL"),
            caCertificate: try text("caCertificate"), teamID: try text("teamID"), keyID: try text("keyID"),
            p8: try text("p8"), topic: try text("topic"), environment: try text("environment"),
            deviceToken: try text("deviceToken"), deviceAPI: try text("deviceAPI"), appLink: try text("appLink"),
            deviceID: try c.decodeIfPresent(String.self, forKey: Key("deviceID")), linkURL: try text("linkURL"),
            binaryAddress: try text("binaryAddress"), feedbackAddress: try text("feedbackAddress"),
            binaryCertificate: try text("binaryCertificate"), binaryPrivateKey: try text("binaryPrivateKey"),
            channelsURL: try text("channelsURL"), channelsDevelopmentURL: try text("channelsDevelopmentURL"),
            database: try c.decodeIfPresent(String.self, forKey: Key("database")), otherNodes: others)
    }

    /// Encodes the flat object.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        let fields: [(String, String?)] = [
            ("providerURL", providerURL), ("developmentURL", developmentURL), ("adminURL", adminURL),
            ("adminToken", adminToken), ("consoleURL", consoleURL), ("caCertificate", caCertificate),
            ("teamID", teamID), ("keyID", keyID), ("p8", p8), ("topic", topic), ("environment", environment),
            ("deviceToken", deviceToken), ("deviceAPI", deviceAPI), ("appLink", appLink), ("deviceID", deviceID),
            ("linkURL", linkURL), ("binaryAddress", binaryAddress), ("feedbackAddress", feedbackAddress),
            ("binaryCertificate", binaryCertificate), ("binaryPrivateKey", binaryPrivateKey),
            ("channelsURL", channelsURL), ("channelsDevelopmentURL", channelsDevelopmentURL),
            ("database", database), ("nodes", String(nodes)),
        ]
        for (name, value) in fields { try c.encodeIfPresent(value, forKey: Key(name)) }
        for (index, node) in otherNodes.enumerated() {
            let k = index + 2
            try c.encode(node.providerURL, forKey: Self.nodeKey(k, "providerURL"))
            try c.encode(node.developmentURL, forKey: Self.nodeKey(k, "developmentURL"))
            try c.encode(node.adminURL, forKey: Self.nodeKey(k, "adminURL"))
            try c.encode(node.linkDevelopmentURL, forKey: Self.nodeKey(k, "linkDevelopmentURL"))
            try c.encode(node.binaryAddress, forKey: Self.nodeKey(k, "binaryAddress"))
            try c.encode(node.feedbackAddress, forKey: Self.nodeKey(k, "feedbackAddress"))
        }
    }
}
