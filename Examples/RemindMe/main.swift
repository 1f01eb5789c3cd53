// RemindMe (seed 003, "Adding Local Notifications With iOS 4"): one reminder at a time. It fires at the
// time you set, with a sound and badge 1; tapping it opens the app, which shows your text and clears
// the badge. In the foreground the app shows the reminder itself and the system shows nothing.
//
//   RemindMe set "Buy milk" --in 60      (or --at 09:30: the next 09:30 wherever the device is)
//   RemindMe wait                        (the app in the foreground until a reminder comes)
import Foundation
import HeraldKit

let bundleID = ProcessInfo.processInfo.environment[AppLink.Environment.bundleID] ?? "dev.herald.remindme"

final class RemindMe: UserNotificationCenterDelegate {
    let (shown, show) = AsyncStream.makeStream(of: Void.self)

    func willPresent(_ notification: DeliveredNotification, center: UserNotificationCenter) async
        -> PresentationOptions
    {
        await showReminder(notification, center)
        return []
    }

    func didReceive(_ response: NotificationResponse, center: UserNotificationCenter) async {
        if response.actionIdentifier == StandardAction.defaultIdentifier {
            await showReminder(response.notification, center)
        }
    }

    func showReminder(_ notification: DeliveredNotification, _ center: UserNotificationCenter) async {
        guard case .string(let text)? = notification.request.content.userInfo["reminder"] else { return }
        print("RemindMe: \(text)")
        try? await center.setBadgeCount(0)
        show.yield()
    }
}

/// `--in SECONDS`, or `--at HH:MM`: a floating wall-clock time, which stays 09:30 wherever the device goes.
func trigger(_ option: String, _ value: String) throws -> NotificationTrigger? {
    let time = value.split(separator: ":").compactMap { Int($0) }
    switch option {
    case "--in": return try Double(value).map { .timeInterval(try TimeIntervalTrigger(interval: $0)) }
    case "--at" where time.count == 2:
        return .calendar(try CalendarTrigger(components: CalendarComponents(hour: time[0], minute: time[1])))
    default: return nil
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
let app = RemindMe()
let center = try await UserNotificationCenter.connect(
    bundleID: bundleID, state: arguments.first == "set" ? .background : .foreground, delegate: app)
if arguments.count == 4, arguments[0] == "set", let trigger = try trigger(arguments[2], arguments[3]) {
    _ = try await center.requestAuthorization(options: [.alert, .sound, .badge])
    try await center.removeAllPendingNotificationRequests()  // only one reminder at a time
    let content = NotificationContent(
        body: "Did you forget something?", badge: 1, sound: .default, userInfo: ["reminder": .string(arguments[1])])
    try await center.add(NotificationRequest(identifier: "reminder", content: content, trigger: trigger))
    print("RemindMe: reminder set")
} else if arguments == ["wait"] {
    for await _ in app.shown { break }
} else if center.launchMode != nil {
    await center.waitForLaunchWork()  // launched by a tap: didReceive shows the reminder
} else {
    print("usage: RemindMe set TEXT (--in SECONDS | --at HH:MM) | RemindMe wait")
}
await center.close()
