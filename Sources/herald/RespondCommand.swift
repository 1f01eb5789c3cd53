import ArgumentParser
import Foundation
import HeraldCore

struct RespondCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "respond",
        abstract: "Act as the user on a delivered notification: open it, dismiss it, or pick one of its actions.",
        discussion: """
            Examples:
              herald respond com.example.demo     # open the newest notification
              herald respond com.example.invites invite-42 --action accept
              herald respond com.example.chat m-7 --action reply --text "on my way"
              herald respond com.example.demo n1 --action dismiss
              # on a locked device:
              herald respond com.example.mail m-3 --action trash --passcode 0000
            Opening a notification of an app that is not running launches it with the notification as its \
            launch options; a background action launches it in the background. On a locked device, opening, \
            a foreground action or an action that requires authentication needs --passcode (the device's, \
            herald device --passcode): a background action then runs with the device still locked; opening \
            or a foreground action unlocks it.
            """)

    @Argument(help: "The app's bundle id.")
    var bundleID: String
    @Argument(help: "The notification's identifier (default: the newest delivered one).")
    var identifier: String?
    @Option(name: .long, help: "default (open), dismiss, or an action identifier of the notification's category.")
    var action = "default"
    @Option(name: .long, help: "The text typed into a text-input action.")
    var text: String?
    @Option(name: .long, help: "The device's passcode, for an answer that needs it while the device is locked.")
    var passcode: String?
    @OptionGroup var device: DeviceLocation
    @Flag(name: .long, help: "Print the result as JSON.")
    var json = false

    func run() async throws {
        let client = try device.client()
        var id = identifier
        if id == nil {
            let delivered = try await client.json("GET", "/apps/\(bundleID)/delivered")?.arrayValue ?? []
            guard let newest = delivered.first?["identifier"]?.stringValue else {
                throw ValidationError("\(bundleID) has no delivered notification")
            }
            id = newest
        }
        var body: [String: JSONValue] = ["action": .string(action)]
        if let text { body["text"] = .string(text) }
        if let passcode { body["passcode"] = .string(passcode) }
        let escaped = id!.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? id!
        let answer = try await client.json("POST", "/apps/\(bundleID)/delivered/\(escaped)/respond", body)
        if json { return try printJSONObject(answer ?? .null) }
        print("\(action) on \(id!) of \(bundleID)")
    }
}
