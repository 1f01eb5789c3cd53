// Arrival (seed 000, "Using Location-Based Notifications"): "You have arrived!" the first time the
// device enters a region (regionTriggersOnce, the default), whether or not the app is running.
// Tapping it opens the app, which tells your friends where you arrived.
//
//   Arrival watch 48.8584 2.2945 200      (latitude, longitude, radius in metres)
import Foundation
import HeraldKit

let bundleID = ProcessInfo.processInfo.environment[AppLink.Environment.bundleID] ?? "dev.herald.arrival"

final class Arrival: UserNotificationCenterDelegate {
    func didReceive(_ response: NotificationResponse, center: UserNotificationCenter) async {
        if case .location(let trigger)? = response.notification.request.trigger {
            print("Arrival: telling friends you arrived at \(trigger.region.identifier)")
        }
    }
}

let center = try await UserNotificationCenter.connect(bundleID: bundleID, delegate: Arrival())
let arguments = CommandLine.arguments.dropFirst().compactMap(Double.init)
if CommandLine.arguments.dropFirst().first == "watch", arguments.count == 3 {
    _ = try await center.requestAuthorization(options: [.alert, .sound])
    guard try await center.requestLocationAuthorization() else {
        print("Arrival: location is off for this app; turn it on in Settings")
        exit(1)
    }
    let region = try CircularRegion(
        identifier: "destination", latitude: arguments[0], longitude: arguments[1], radius: arguments[2],
        notifyOnEntry: true, notifyOnExit: false)
    let content = NotificationContent(body: "You have arrived!", sound: .default)
    try await center.add(
        NotificationRequest(
            identifier: "arrival", content: content, trigger: .location(LocationTrigger(region: region, repeats: false))
        ))
    print("Arrival: watching \(region.identifier)")
} else if center.launchMode != nil {
    await center.waitForLaunchWork()
} else {
    print("usage: Arrival watch LATITUDE LONGITUDE RADIUS")
}
await center.close()
