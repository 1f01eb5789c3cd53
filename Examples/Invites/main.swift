// Invites (seed 000, "Registering, Scheduling, and Handling User Notifications"): the INVITE_CATEGORY
// with Accept, Maybe and Decline (Accept and Decline on the lock screen), and remote notifications
// whose payload names the category. Accepting, maybe-ing or declining runs in the background: the
// device launches the app, which answers the invitation and exits.
//
//   Invites register       (asks for alert, sound and badge; prints the device token)
//   then a provider sends {"aps":{"alert":"You’re invited!","category":"INVITE_CATEGORY"},"event":"Lunch"}
import Foundation
import HeraldKit

let bundleID = ProcessInfo.processInfo.environment[AppLink.Environment.bundleID] ?? "dev.herald.invites"

final class Invites: UserNotificationCenterDelegate {
    func didReceive(_ response: NotificationResponse, center: UserNotificationCenter) async {
        guard response.notification.request.content.categoryIdentifier == "INVITE_CATEGORY" else { return }
        let event: String
        if case .string(let name)? = response.notification.request.content.userInfo["event"] {
            event = name
        } else {
            event = "the invitation"
        }
        switch response.actionIdentifier {
        case "ACCEPT_IDENTIFIER": print("Invites: accepted \(event)")
        case "MAYBE_IDENTIFIER": print("Invites: maybe to \(event)")
        case "DECLINE_IDENTIFIER": print("Invites: declined \(event)")
        default: print("Invites: opened \(event)")
        }
    }
}

let center = try await UserNotificationCenter.connect(bundleID: bundleID, delegate: Invites())
if CommandLine.arguments.dropFirst() == ["register"] {
    // Accept needs no more input and is harmless: background, no authentication. Decline is destructive.
    let accept = try NotificationAction(identifier: "ACCEPT_IDENTIFIER", title: "Accept")
    let maybe = try NotificationAction(identifier: "MAYBE_IDENTIFIER", title: "Maybe")
    let decline = try NotificationAction(
        identifier: "DECLINE_IDENTIFIER", title: "Decline", options: [.destructive, .authenticationRequired])
    try await center.setNotificationCategories([
        try NotificationCategory(
            identifier: "INVITE_CATEGORY", actions: [accept, maybe, decline], minimalActions: [accept, decline])
    ])
    _ = try await center.requestAuthorization(options: [.alert, .sound, .badge])
    print("Invites: token \(try await center.registerForRemoteNotifications())")
} else if center.launchMode != nil {
    await center.waitForLaunchWork()
} else {
    print("usage: Invites register")
}
await center.close()
