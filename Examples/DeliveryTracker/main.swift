// DeliveryTracker: a Live Activity app (docs/live-activities.md). It asks for notification
// permission, hands its push-to-start token for DeliveryAttributes to its provider (here: prints
// it), and then follows what the provider does with its activities, ActivityKit-style: each
// activity the device starts by push, its push token, its content as it changes, its state until it
// leaves the screen. It stops after `count` activities have been dismissed (default 1).
//
//   DeliveryTracker [count]
//   a provider then sends, to the printed token:
//   {"aps":{"event":"start","timestamp":…,"attributes-type":"DeliveryAttributes",
//           "attributes":{"order":"A-17"},"content-state":{"stop":5},"input-push-token":1}}
import Foundation
import HeraldKit

let bundleID = ProcessInfo.processInfo.environment[AppLink.Environment.bundleID] ?? "dev.herald.delivery"
let dismissals = Int(CommandLine.arguments.dropFirst().first ?? "1") ?? 1

/// What a delivery's activity shows: the order, fixed; the stops left, changing.
struct DeliveryAttributes: ActivityAttributes {
    struct ContentState: Codable, Hashable, Sendable {
        var stop: Int
    }
    var order: String
}

func say(_ text: String) {
    print("DeliveryTracker: \(text)")
    fflush(nil)
}

let center = try await UserNotificationCenter.connect(bundleID: bundleID, state: .foreground)
_ = try await center.requestAuthorization(options: [.alert, .sound])
let startToken = try await Activity<DeliveryAttributes>.pushToStartToken(center: center)
say("push-to-start token \(startToken.map { String(format: "%02x", $0) }.joined())")

let (finished, finish) = AsyncStream.makeStream(of: Void.self)
/// Follows one activity until it leaves the screen.
func follow(_ activity: Activity<DeliveryAttributes>) {
    let order = activity.attributes.order
    let how = activity.snapshot.channelID.map { "channel \($0)" } ?? "its own token"
    say("\(order) started by push (\(how)): \((try? activity.content.state.stop) ?? -1) stops")
    Task {
        for await token in activity.pushTokenUpdates {
            say("\(order) token \(token.map { String(format: "%02x", $0) }.joined())")
        }
    }
    Task {
        for await content in activity.contentUpdates { say("\(order): \(content.state.stop) stops") }
    }
    Task {
        for await state in activity.activityStateUpdates {
            switch state {
            case .ended:
                let at = activity.snapshot.dismissAt.map(AppLinkDates.format) ?? "?"
                say("\(order) delivered; leaves the screen at \(at)")
            case .dismissed:
                say("\(order) left the screen")
                finish.yield()
            default:
                say("\(order) \(state.rawValue)")
            }
        }
    }
}

Task {
    for await activity in Activity<DeliveryAttributes>.activityUpdates(center: center) { follow(activity) }
}
var left = dismissals
for await _ in finished {
    left -= 1
    if left == 0 { break }
}
await center.close()
