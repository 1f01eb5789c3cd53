import ArgumentParser
import Foundation
import HeraldCore
import HeraldGateway
import HeraldKit
import HeraldProvider
import HeraldRuntime

/// `herald up`'s demo, apart from the processes: the demo team, key, apps and app certificate at
/// the gateway (made once, reused later), the demo app on the device and its registration, and
/// `up.json` and the banner that say where everything is.
struct UpDemo {
    /// The demo team.
    static let team = "HERALDDEMO"

    /// The state directory of `herald up`.
    let root: URL
    /// The demo app's bundle id.
    let app: String
    /// `--install`'s apps: bundle id and executable.
    let installs: [(String, String)]
    /// The `herald` executable (the demo app's script runs it).
    let executable: String

    /// What the gateway gave the demo: the key and the app certificate, as files in `root`.
    struct Credentials {
        var keyID: String
        var p8: String
        var binaryCertificate: URL
        var binaryKey: URL
    }

    /// The team, a key that still works, the apps and the demo app's certificate for the legacy
    /// interfaces, each made only when the previous `up.json` and the gateway lack it.
    func provision(_ admin: AdminClient, previous: UpInfo?) async throws -> Credentials {
        if try await !admin.teams().contains(where: { $0.id == Self.team }) {
            _ = try await admin.createTeam(.init(id: Self.team, name: "Herald demo"))
        }
        let keys = try await admin.keys()
        var keyID = previous?.keyID
        var p8 = previous?.p8
        if keyID == nil || p8 == nil || !FileManager.default.fileExists(atPath: p8!)
            || !keys.contains(where: { $0.keyID == keyID && !$0.revoked })
        {
            let key = try await admin.createKey(.init(teamID: Self.team))
            guard let pem = key.privateKey else { throw ValidationError("the gateway did not return a key") }
            let path = root.appendingPathComponent("AuthKey_\(key.keyID).p8").path
            try Self.writeSecret(pem, to: path)
            keyID = key.keyID
            p8 = path
        }
        let apps = try await admin.apps()
        for bundle in [app] + installs.map(\.0) where !apps.contains(where: { $0.bundleID == bundle }) {
            try await admin.createApp(.init(bundleID: bundle, teamID: Self.team))
        }
        let credentials = Credentials(
            keyID: keyID!, p8: p8!, binaryCertificate: root.appendingPathComponent("demo-app-cert.pem"),
            binaryKey: root.appendingPathComponent("demo-app-key.pem"))
        if !FileManager.default.fileExists(atPath: credentials.binaryCertificate.path)
            || !FileManager.default.fileExists(atPath: credentials.binaryKey.path) || previous?.topic != app
        {
            let issued = try await admin.issueCertificate(app: app, .init(environments: [.development]))
            try Data(issued.certificate.utf8).write(to: credentials.binaryCertificate, options: .atomic)
            try Self.writeSecret(issued.privateKey, to: credentials.binaryKey.path)
        }
        return credentials
    }

    /// Writes a private key readable by its owner only.
    static func writeSecret(_ text: String, to path: String) throws {
        guard
            FileManager.default.createFile(
                atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
        else { throw ValidationError("could not write \(path)") }
    }

    /// `POST /apps` on the device API.
    private struct Install: Encodable {
        var bundleID: String
        var apsEnvironment: APNsEnvironment
        var executable: String
        var authorized: [String]?
    }

    /// Installs the demo app (allowed alert, sound and badge at once, so the printed curl shows) and
    /// `--install`'s apps (they get the permission dialog on the web device) on the device.
    func installApps(deviceAPI: String) async throws {
        // The demo app's executable: started by the device when a notification needs it, it prints
        // what it is told (launch options, the response) and exits.
        let demo = root.appendingPathComponent("demo-app.sh")
        let script = """
            #!/bin/sh
            # The demo app of `herald up`: prints what it is told, then exits.
            exec '\(executable)' app "$\(AppLink.Environment.bundleID)" listen --count 1

            """
        try Data(script.utf8).write(to: demo, options: .atomic)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: demo.path)
        let device = HTTPJSONClient(base: deviceAPI)
        try await device.perform(
            "POST", "/apps",
            Install(
                bundleID: app, apsEnvironment: .development, executable: demo.path,
                authorized: ["alert", "sound", "badge"]))
        for (bundle, path) in installs {
            try await device.perform(
                "POST", "/apps", Install(bundleID: bundle, apsEnvironment: .development, executable: path))
        }
    }

    /// The demo app asks for alert, sound and badge and registers, as an app does at launch;
    /// returns its device token.
    func register(socket: String) async throws -> String {
        let center = try await UserNotificationCenter.connect(bundleID: app, state: .background, socketPath: socket)
        do {
            _ = try await center.requestAuthorization(options: [.alert, .sound, .badge])
            let token = try await center.registerForRemoteNotifications()
            await center.close()
            return token
        } catch {
            await center.close()
            throw CommandFailure("the demo app could not register: \(error)")
        }
    }

    /// The device's id, from its device API's `/status`.
    static func deviceID(deviceAPI: String) async throws -> String? {
        struct Status: Decodable { var deviceID: String? }
        return try await HTTPJSONClient(base: deviceAPI).call("GET", "/status", as: Status.self).deviceID
    }
}
