// Alarm (seed 001, "Scheduling and Handling Local Notifications"): a timer whose notification has the
// TIMER_EXPIRED category with two custom actions. Snooze invalidates the old timer and creates a new
// one nine minutes on; Stop invalidates it. Both run in the background: the device launches the app,
// waits for it to finish, and the app exits.
//
//   Alarm start 300        (the timer rings in 300 seconds)
import Foundation
import HeraldKit

let bundleID = ProcessInfo.processInfo.environment[AppLink.Environment.bundleID] ?? "dev.herald.alarm"
let snoozeSeconds: TimeInterval = 9 * 60

/// The timer: one request, "timer", ringing after `seconds`.
func setTimer(_ center: UserNotificationCenter, in seconds: TimeInterval) async throws {
    let content = NotificationContent(
        title: "Wake up!", body: "Your timer has expired.", sound: .default, categoryIdentifier: "TIMER_EXPIRED")
    let trigger = NotificationTrigger.timeInterval(try TimeIntervalTrigger(interval: seconds))
    try await center.add(NotificationRequest(identifier: "timer", content: content, trigger: trigger))
}

final class Alarm: UserNotificationCenterDelegate {
    func didReceive(_ response: NotificationResponse, center: UserNotificationCenter) async {
        guard response.notification.request.content.categoryIdentifier == "TIMER_EXPIRED" else { return }
        do {
            // Invalidate the old timer either way.
            try await center.removeDeliveredNotifications(withIdentifiers: ["timer"])
            try await center.removePendingNotificationRequests(withIdentifiers: ["timer"])
            switch response.actionIdentifier {
            case "SNOOZE_ACTION":
                try await setTimer(center, in: snoozeSeconds)
                print("Alarm: snoozed for \(Int(snoozeSeconds / 60)) minutes")
            case "STOP_ACTION": print("Alarm: stopped")
            default: print("Alarm: opened")
            }
        } catch {
            print("Alarm: \(error)")
        }
    }
}

let center = try await UserNotificationCenter.connect(bundleID: bundleID, delegate: Alarm())
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.count == 2, arguments[0] == "start", let seconds = TimeInterval(arguments[1]) {
    _ = try await center.requestAuthorization(options: [.alert, .sound])
    let snooze = try NotificationAction(identifier: "SNOOZE_ACTION", title: "Snooze")
    let stop = try NotificationAction(identifier: "STOP_ACTION", title: "Stop", options: [.destructive])
    try await center.setNotificationCategories([
        try NotificationCategory(identifier: "TIMER_EXPIRED", actions: [snooze, stop])
    ])
    try await setTimer(center, in: seconds)
    print("Alarm: rings in \(Int(seconds)) s")
} else if center.launchMode != nil {
    await center.waitForLaunchWork()
} else {
    print("usage: Alarm start SECONDS")
}
await center.close()
