import Foundation
import Testing

/// Live Activities through `herald up` (docs/live-activities.md), as a provider and an app use them:
/// the DeliveryTracker example gives its push-to-start token; `herald push --live-activity` starts an
/// activity on it that gets its own token, updates it there (an older update ignored) and ends it with
/// a dismissal date (its token then answers 410); a second activity started on a channel is updated
/// and ended by `herald channel broadcast`. `herald app` drives an activity of the demo app by hand.
@Suite(.serialized, .ownThread) struct LiveActivityEndToEndTests {
    @Test func theDeliveryTrackerIsStartedUpdatedByTokenAndByBroadcastAndEnded() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("herald-up-\(UUID())")
        let up = try UpEndToEndTests.Up(
            state: state, extra: ["--install", "dev.herald.delivery=\(try exampleExecutable("DeliveryTracker").path)"])
        defer { _ = up.stop() }
        let upFile = state.appendingPathComponent("up.json").path
        let tracker = try Child(
            try exampleExecutable("DeliveryTracker"), ["1"],
            environment: ["HERALD_APP_LINK": state.appendingPathComponent("device/app.sock").path])
        let watchdog = watchdog(tracker.process, after: 90)
        defer { watchdog.cancel() }
        try up.allow("dev.herald.delivery")
        func said(_ text: String) -> String { tracker.waitForLine(containing: text).last ?? "" }
        func herald(_ arguments: [String]) throws -> String {
            let result = try up.herald(arguments)
            #expect(result.status == 0, "herald \(arguments): \(result.stderr)")
            return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        func push(_ token: String, _ arguments: [String]) throws -> String {
            try herald(["push", "--up", upFile, "--topic", "dev.herald.delivery", "--token", token] + arguments)
        }

        let startToken = try #require(said("push-to-start token").split(separator: " ").last.map(String.init))
        #expect(startToken.count == 64)
        let now = Int(Date().timeIntervalSince1970)

        // Started by push, asking for its own token; updated there; an older update ignored.
        _ = try push(
            startToken,
            [
                "--live-activity", "start", "--attributes-type", "DeliveryAttributes", "--attributes",
                #"{"order":"A-17"}"#, "--content-state", #"{"stop":5}"#, "--timestamp", "\(now)", "--input-push-token",
                "--title", "Delivery", "--alert", "On its way",
            ])
        #expect(said("A-17 started") == "DeliveryTracker: A-17 started by push (its own token): 5 stops")
        let token = try #require(said("A-17 token").split(separator: " ").last.map(String.init))
        #expect(token.count == 64 && token != startToken)
        #expect(
            up.waitForLine(containing: "alert: Delivery — On its way").last?.contains("[dev.herald.delivery]") == true)
        _ = try push(
            token, ["--live-activity", "update", "--content-state", #"{"stop":3}"#, "--timestamp", "\(now + 10)"])
        #expect(said("A-17: ") == "DeliveryTracker: A-17: 3 stops")
        _ = try push(
            token, ["--live-activity", "update", "--content-state", #"{"stop":4}"#, "--timestamp", "\(now + 5)"])
        #expect(up.waitForLine(containing: "ignored: its timestamp is older").last != nil)

        // Ended with a dismissal date an hour away: it stays on the screen until then; its token is given up.
        let dismissal = now + 3600
        _ = try push(
            token,
            [
                "--live-activity", "end", "--content-state", #"{"stop":0}"#, "--timestamp", "\(now + 20)",
                "--dismissal-date", "\(dismissal)",
            ])
        let delivered = said("A-17 delivered")
        #expect(
            delivered.hasSuffix(AppLinkDatesText.format(dismissal)),
            "\(delivered) vs \(AppLinkDatesText.format(dismissal))")
        // The device gives the token up over its link after it showed the end, so the gateway may
        // hear of it a moment after "delivered": until then an update is accepted (and the ended
        // activity ignores it). Polled, within a deadline, until the answer is 410.
        let updateGone = [
            "push", "--up", upFile, "--topic", "dev.herald.delivery", "--token", token, "--live-activity", "update",
            "--content-state", "{}",
        ]
        var gone = try up.herald(updateGone)
        let deadline = ContinuousClock.now + .seconds(30)
        while gone.status == 0, ContinuousClock.now < deadline { gone = try up.herald(updateGone) }
        #expect(gone.status == 1 && gone.stderr.contains("410 Unregistered"), "\(gone.stderr)")

        // A second activity, started on a broadcast channel, updated and ended by broadcasts.
        let channel = try herald([
            "channel", "create", "--policy", "1", "--up", upFile, "--topic", "dev.herald.delivery",
        ])
        _ = try push(
            startToken,
            [
                "--live-activity", "start", "--attributes-type", "DeliveryAttributes", "--attributes",
                #"{"order":"Route 9"}"#, "--content-state", #"{"stop":7}"#, "--timestamp", "\(now + 30)",
                "--input-push-channel", channel,
            ])
        #expect(said("Route 9 started") == "DeliveryTracker: Route 9 started by push (channel \(channel)): 7 stops")
        let broadcast = [
            "channel", "broadcast", "--up", upFile, "--topic", "dev.herald.delivery", "--channel-id", channel,
        ]
        _ = try herald(broadcast + ["--content-state", #"{"stop":2}"#, "--timestamp", "\(now + 40)"])
        #expect(said("Route 9: ") == "DeliveryTracker: Route 9: 2 stops")
        _ = try herald(
            broadcast + ["--event", "end", "--timestamp", "\(now + 50)", "--dismissal-date", "\(now - 1)"])
        #expect(said("Route 9 left") == "DeliveryTracker: Route 9 left the screen")
        let finished = tracker.finish()
        #expect(finished.status == 0, "\(finished.lines)")
        // The device shows each as a line.
        #expect(up.waitForLine(containing: "Route 9").last?.contains("DeliveryAttributes") == true)

        // An app's own activity, by hand: started without pushes, updated with an alert, ended at once.
        let demo = up.info.topic
        let started = try herald(
            [
                "app", demo, "activity-start", "--attributes-type", "Timer", "--push-type", "none", "--content-state",
                #"{"left":3}"#,
            ] + up.device)
        let id = String(started.split(separator: " ").first ?? "")
        #expect(started.hasSuffix(#"Timer active: {"left":3}"#), "\(started)")
        #expect(try herald(["app", demo, "activities"] + up.device).contains(id))
        let updated = try herald(
            ["app", demo, "activity-update", id, "--content-state", #"{"left":1}"#, "--title", "Tea", "--body", "Soon"]
                + up.device)
        #expect(updated.hasSuffix(#"Timer active: {"left":1}"#), "\(updated)")
        let ended = try herald(["app", demo, "activity-end", id, "--dismissal", "immediate"] + up.device)
        #expect(ended.contains("Timer dismissed"), "\(ended)")
        #expect(try herald(["app", demo, "activities"] + up.device) == "no activities")
        let refused = try up.herald(["app", demo, "activity-update", id, "--content-state", "{}"] + up.device)
        #expect(refused.status != 0 && refused.stderr.contains("ActivityKit notFound"), "\(refused.stderr)")

        // The user turns the app's Live Activities off in Settings: a new one is denied.
        let off = try curl([
            "-X", "PATCH", "-d", #"{"liveActivitiesAllowed":false}"#,
            (up.info.deviceAPI) + "/apps/\(demo)/settings",
        ])
        #expect(off.status == 200 && off.json?["liveActivitiesAllowed"] as? Bool == false, "\(off.body)")
        let denied = try up.herald(["app", demo, "activity-start", "--push-type", "none"] + up.device)
        #expect(denied.status != 0 && denied.stderr.contains("ActivityKit denied"), "\(denied.stderr)")
        // An app declaring NSSupportsLiveActivitiesFrequentUpdates.
        let frequent = try herald(
            ["device", "install", "dev.herald.busy", "--frequent-activity-updates", "--json"] + up.device)
        let installed = try JSONSerialization.jsonObject(with: Data(frequent.utf8)) as? [String: Any]
        #expect(installed?["supportsFrequentActivityUpdates"] as? Bool == true, "\(frequent)")
    }
}

/// ISO 8601 with milliseconds, as the app link writes dates.
enum AppLinkDatesText {
    static func format(_ seconds: Int) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(
            Date(timeIntervalSince1970: TimeInterval(seconds)))
    }
}
