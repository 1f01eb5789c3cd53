// ParcelApp: the provider example's app. It registers for remote notifications, sends its device
// token and the user's preferred languages to its app server (ParcelServer), then stays in the
// foreground and shows the push that comes, in the user's language.
//
//   LANGUAGE=fr ParcelApp http://127.0.0.1:PORT
import AsyncHTTPClient
import Foundation
import HeraldKit

let bundleID = ProcessInfo.processInfo.environment[AppLink.Environment.bundleID] ?? "dev.herald.parcels"
guard let server = CommandLine.arguments.dropFirst().first else {
    print("usage: ParcelApp APP_SERVER_URL")
    exit(2)
}

final class ParcelApp: UserNotificationCenterDelegate {
    let (arrived, arrive) = AsyncStream.makeStream(of: Void.self)

    func willPresent(_ notification: DeliveredNotification, center: UserNotificationCenter) async
        -> PresentationOptions
    {
        print("ParcelApp: \(notification.request.content.body)")
        arrive.yield()
        return [.banner, .sound]
    }
}

let app = ParcelApp()
let center = try await UserNotificationCenter.connect(bundleID: bundleID, state: .foreground, delegate: app)
_ = try await center.requestAuthorization(options: [.alert, .sound, .badge])
let token = try await center.registerForRemoteNotifications()
let languages = UserNotificationCenter.preferredLanguages()
var request = HTTPClientRequest(url: server + "/register")
request.method = .POST
request.body = .bytes(try JSONSerialization.data(withJSONObject: ["token": token, "languages": languages]))
let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
print(
    "ParcelApp: registered with the app server (\(response.status.code)), languages \(languages.joined(separator: ","))"
)
for await _ in app.arrived { break }
await center.close()
