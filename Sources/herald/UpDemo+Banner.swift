import ArgumentParser
import Foundation
import HeraldCore
import HeraldProvider
import HeraldRuntime

extension UpInfo {
    /// What `herald up` writes: the gateways' addresses (node 1's, and the others' as
    /// ``UpInfo/otherNodes``), the device's, the demo's key, certificate and token.
    init(
        gateways: [GatewayInfo], device: DeviceInfo, deviceID: String?, token: String, app: String,
        credentials: UpDemo.Credentials, database: String?
    ) throws {
        let first = gateways[0]
        func info(_ key: KeyPath<GatewayInfo, String?>, _ name: String) throws -> String {
            guard let value = first[keyPath: key] else {
                throw ValidationError("the gateway's gateway.json has no \(name)")
            }
            return value
        }
        var otherNodes: [UpInfo.Node] = []
        for (index, gateway) in gateways.enumerated().dropFirst() {
            guard let addresses = UpInfo.Node(gateway) else {
                throw ValidationError("the gateway node \(index + 1)'s gateway.json lacks an address")
            }
            otherNodes.append(addresses)
        }
        self.init(
            providerURL: first.providerURL, developmentURL: try info(\.developmentURL, "developmentURL"),
            adminURL: first.adminURL, adminToken: first.adminToken, consoleURL: first.adminURL + "/console",
            caCertificate: first.caCertificate, teamID: UpDemo.team, keyID: credentials.keyID, p8: credentials.p8,
            topic: app, environment: APNsEnvironment.development.rawValue, deviceToken: token,
            deviceAPI: device.apiURL, appLink: device.appLink, deviceID: deviceID,
            linkURL: gateways[gateways.count - 1].linkDevelopmentURL,
            binaryAddress: try info(\.binaryAddress, "binaryAddress"),
            feedbackAddress: try info(\.feedbackAddress, "feedbackAddress"),
            binaryCertificate: credentials.binaryCertificate.path, binaryPrivateKey: credentials.binaryKey.path,
            channelsURL: try info(\.channelsURL, "channelsURL"),
            channelsDevelopmentURL: try info(\.channelsDevelopmentURL, "channelsDevelopmentURL"),
            database: database, otherNodes: otherNodes)
    }
}

extension UpDemo {
    /// The tour `herald up` prints once everything runs: where each part is, and a curl command
    /// that pushes to the demo app (with a provider token valid for an hour).
    func banner(_ up: UpInfo, credentials: UpDemo.Credentials, database: UpDatabase?) throws -> String {
        let jwt = try APNsSigningKey(p8File: credentials.p8, keyID: credentials.keyID, teamID: Self.team)
            .token(issuedAt: Date())
        let payload = #"{"aps":{"alert":{"title":"Hello","body":"from Herald"},"sound":"default","badge":1}}"#
        let installed = installs.map { "  installed:                \($0.0)   \($0.1)\n" }.joined()
        let nodes = up.nodes
        var cluster = ""
        if nodes > 1 || database != nil {
            cluster =
                "  cluster:                  \(nodes) gateway node\(nodes == 1 ? "" : "s") on \(database?.shown ?? "")\n"
            for (index, node) in up.otherNodes.enumerated() {
                cluster +=
                    "  node \(index + 2):                   development \(node.developmentURL), admin "
                    + "\(node.adminURL), state \(root.path)/gateway-\(index + 2)\n"
            }
            if nodes > 1 {
                cluster +=
                    "  the device is linked to node \(nodes); the curl below goes to node 1, so the push crosses nodes\n"
            }
        }
        let development = up.developmentURL
        let token = up.deviceToken
        return """
            herald is up
              the device (open it):     \(up.deviceAPI)/
              the push console:         \(up.consoleURL)
                sign in with this link: \(up.consoleURL)#token=\(up.adminToken)
              provider API (TLS, h2):   \(up.providerURL)   CA \(up.caCertificate)
              development (h2c/HTTP1):  \(development)
              binary / feedback (TLS):  \(up.binaryAddress) / \(up.feedbackAddress)   certificate \(up.binaryCertificate)
              channel management:       \(up.channelsURL) (TLS), \(up.channelsDevelopmentURL) (development)
              admin API:                \(up.adminURL)   (token in \(root.path)/gateway/admin-token)
              device API:               \(up.deviceAPI)
              demo app:                 \(app)   device token \(token)
            \(installed)\(cluster)  key:                      team \(Self.team), key \(credentials.keyID), \(credentials.p8)
              everything above:         \(root.path)/up.json

            Open the device in a browser, then send a push (the bearer token is valid for an hour;
            `herald push --alert Hi` signs its own); the answer is `HTTP/2 200` with its apns-id, and the
            notification appears on the device:

            curl -i --http2-prior-knowledge \(development)/3/device/\(token) \\
              -H 'apns-topic: \(app)' -H 'authorization: bearer \(jwt)' \\
              -d '\(payload)'

            Then: `herald respond \(app)` opens it, `herald app \(app) delivered` lists it,
            `herald app \(app) add --title Tea --body Ready --in 10` schedules one.
            `herald push --binary --alert Hi` sends over the legacy binary interface; `herald feedback` reads
            the feedback service. Ctrl-C stops everything.

            """
    }
}
