// MoodTracker (seed 004, "Local Notifications"): reminds you to track your mood at 9:00, 14:00 and
// 20:00. It explains before the system asks, asks only once, and says what to do if you said no.
// The reminders follow the device's wall clock (floating): 9:00 is 9:00 wherever you travel.
// In the foreground the app only logs the reminder, as the seed does.
//
//   MoodTracker            (first run asks; every run makes sure the three reminders exist)
//   MoodTracker wait       (the app in the foreground until a reminder comes)
import Foundation
import HeraldKit

let bundleID = ProcessInfo.processInfo.environment[AppLink.Environment.bundleID] ?? "dev.herald.moodtracker"
let hours = [9, 14, 20]

final class MoodTracker: UserNotificationCenterDelegate {
    let (received, receive) = AsyncStream.makeStream(of: Void.self)

    func willPresent(_ notification: DeliveredNotification, center: UserNotificationCenter) async
        -> PresentationOptions
    {
        print("MoodTracker: Notification received: \(notification.request.content.body)")
        receive.yield()
        return []
    }
}

let app = MoodTracker()
let center = try await UserNotificationCenter.connect(bundleID: bundleID, state: .foreground, delegate: app)
var allowed = true
switch try await center.notificationSettings().authorizationStatus {
case .notDetermined:
    print("MoodTracker: We would like to remind you to track your mood. To do it, we need your permission.")
    allowed = try await center.requestAuthorization(options: [.alert, .sound, .badge])
case .denied:
    print("MoodTracker: Notifications are off. Turn them on in Settings to get mood reminders.")
    allowed = false
default: break
}
if allowed {
    // One repeating request per hour; only missing ones are added, so a second run changes nothing.
    let scheduled = Set(try await center.pendingNotificationRequests().map(\.identifier))
    for hour in hours where !scheduled.contains("mood-\(hour)") {
        let content = NotificationContent(body: "Have you tracked your mood yet?", sound: .default)
        let trigger = try CalendarTrigger(components: CalendarComponents(hour: hour, minute: 0), repeats: true)
        try await center.add(
            NotificationRequest(identifier: "mood-\(hour)", content: content, trigger: .calendar(trigger)))
    }
    print("MoodTracker: reminders at \(hours.map { "\($0):00" }.joined(separator: ", "))")
}
if CommandLine.arguments.dropFirst() == ["wait"] {
    for await _ in app.received { break }
}
await center.close()
