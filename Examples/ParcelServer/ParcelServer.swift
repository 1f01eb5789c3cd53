// ParcelServer: the provider example's tiny app server. An app registers its device token and its
// user's preferred languages (POST /register); the shop says a parcel shipped (POST /ship) and every
// registered device gets a push through HeraldProvider, its alert in the device's own language. It
// sends to the gateway's TLS provider API, trusting Herald's CA: against Apple only the host and the
// key would change.
//
//   ParcelServer [UP_JSON]          (default .herald/up.json, written by `herald up`)
//   curl -d '{"parcel":"A123"}' http://127.0.0.1:PORT/ship
import Foundation
import HeraldProvider
import HeraldRuntime
import Hummingbird

@main struct ParcelServer {
    static let topic = "dev.herald.parcels"
    /// The alert in each language the server knows; the first of the user's languages that matches wins.
    static let alerts = [
        "en": "Your parcel %@ is on its way.", "fr": "Votre colis %@ est en route.",
        "de": "Ihr Paket %@ ist unterwegs.", "es": "Tu paquete %@ está en camino.",
    ]

    static func alert(_ parcel: String, languages: [String]) -> String {
        let language = languages.lazy.map { String($0.prefix { $0 != "-" }) }.first { alerts[$0] != nil } ?? "en"
        return alerts[language]!.replacingOccurrences(of: "%@", with: parcel)
    }

    static func say(_ line: String) { FileHandle.standardOutput.write(Data("ParcelServer: \(line)\n".utf8)) }

    struct Registration: Codable { var token: String, languages: [String] }
    /// The payload: an alert with a title and a body, and the default sound.
    struct Payload: Encodable {
        struct Alert: Encodable { var title: String, body: String }
        struct APS: Encodable { var alert: Alert, sound = "default" }
        var aps: APS
    }
    struct Shipment: Codable { var parcel: String }
    actor Devices {
        var registered: [String: [String]] = [:]
        func add(_ r: Registration) { registered[r.token] = r.languages }
    }

    static func main() async throws {
        let path = CommandLine.arguments.dropFirst().first ?? ".herald/up.json"
        let up = try UpInfo.read(from: path)
        let apns = try APNsClient(
            configuration: .init(
                server: APNsServer(url: up.providerURL),
                authentication: .token(try APNsSigningKey(p8File: up.p8, keyID: up.keyID, teamID: up.teamID)),
                trustedCAPEM: try String(contentsOfFile: up.caCertificate, encoding: .utf8)))
        let devices = Devices()

        let router = Router()
        router.post("/register") { request, context -> HTTPResponse.Status in
            let registration = try await request.decode(as: Registration.self, context: context)
            await devices.add(registration)
            say("registered \(registration.token.prefix(8))… speaking \(registration.languages.joined(separator: ","))")
            return .created
        }
        router.post("/ship") { request, context -> String in
            let parcel = try await request.decode(as: Shipment.self, context: context).parcel
            var sent = 0
            for (token, languages) in await devices.registered {
                let message = Payload.Alert(title: "Parcel \(parcel)", body: alert(parcel, languages: languages))
                let payload = try JSONEncoder().encode(Payload(aps: .init(alert: message)))
                do {
                    let delivery = try await apns.send(APNsNotification(payload: payload, topic: topic), to: token)
                    say("sent \(delivery.apnsID) to \(token.prefix(8))…")
                    sent += 1
                } catch {
                    say("\(token.prefix(8))… refused: \(error)")
                }
            }
            return "sent \(sent)\n"
        }
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { say("listening on http://127.0.0.1:\($0.localAddress?.port ?? 0)") })
        try await app.runService()
        try await apns.shutdown()
    }
}
