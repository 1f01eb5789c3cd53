import ArgumentParser
import Foundation
import HeraldCore
import HeraldProvider

extension APNsLiveActivity.Event: ExpressibleByArgument {}

/// The parts of a Live Activity payload (docs/live-activities.md), shared by `herald push
/// --live-activity` and `herald channel broadcast`.
struct LiveActivityOptions: ParsableArguments {
    @Option(name: .long, help: "Live Activity: aps.content-state, a JSON object (default {}).")
    var contentState: String?
    @Option(name: .long, help: "Live Activity: aps.timestamp in UNIX seconds (default: now).")
    var timestamp: Int64?
    @Option(name: .long, help: "Live Activity: aps.stale-date in UNIX seconds.")
    var staleDate: Int64?
    @Option(name: .long, help: "Live Activity: aps.dismissal-date in UNIX seconds (in the past: removed at once).")
    var dismissalDate: Int64?
    @Option(name: .long, help: "Live Activity: aps.relevance-score.")
    var relevanceScore: Double?
    @Option(name: .long, help: "Live Activity start: aps.attributes-type, the attributes' type name.")
    var attributesType: String?
    @Option(name: .long, help: "Live Activity start: aps.attributes, a JSON object.")
    var attributes: String?
    @Flag(name: .long, help: "Live Activity start: aps.input-push-token 1 (the activity gets its own token).")
    var inputPushToken = false
    @Option(name: .long, help: "Live Activity start: aps.input-push-channel (the activity subscribes to it).")
    var inputPushChannel: String?

    /// Whether any of these was given.
    var anyGiven: Bool {
        contentState != nil || timestamp != nil || staleDate != nil || dismissalDate != nil || relevanceScore != nil
            || attributesType != nil || attributes != nil || inputPushToken || inputPushChannel != nil
    }

    /// The payload for `event`, with `alert` shown under the user's settings.
    func activity(event: APNsLiveActivity.Event, alert: APNsLiveActivity.Alert?) throws -> APNsLiveActivity {
        if event != .start, attributesType != nil || attributes != nil || inputPushToken || inputPushChannel != nil {
            throw ValidationError(
                "--attributes-type, --attributes, --input-push-token and --input-push-channel go with a start")
        }
        if event == .start, attributesType == nil {
            throw ValidationError("a start needs --attributes-type (and --attributes)")
        }
        func object(_ text: String?, _ option: String) throws -> JSONValue? {
            guard let text else { return nil }
            guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)),
                case .object = value
            else { throw ValidationError("\(option) must be a JSON object, e.g. '{\"eta\":5}'") }
            return value
        }
        return APNsLiveActivity(
            event: event, timestamp: try timestamp.map { try unixTime($0, option: "--timestamp") } ?? Date(),
            contentState: try object(contentState, "--content-state") ?? .object([:]),
            staleDate: try staleDate.map { try unixTime($0, option: "--stale-date") },
            dismissalDate: try dismissalDate.map { try unixTime($0, option: "--dismissal-date") },
            relevanceScore: relevanceScore,
            alert: alert, attributesType: attributesType,
            attributes: try object(attributes, "--attributes") ?? (event == .start ? .object([:]) : nil),
            inputPushToken: inputPushToken, inputPushChannel: inputPushChannel)
    }
}

/// The latest UNIX time an option takes: the last second of the year 9999.
let latestUNIXTime: Int64 = 253_402_300_799

/// `seconds` since 1970 given to `option`, which must be from 0 to ``latestUNIXTime``: a time
/// beyond it is not one a payload or a token can carry.
func unixTime(_ seconds: Int64, option: String) throws -> Date {
    guard (0...latestUNIXTime).contains(seconds) else {
        throw ValidationError(
            "\(option) must be UNIX seconds from 0 to \(latestUNIXTime) (the end of 9999), not \(seconds)")
    }
    return Date(timeIntervalSince1970: TimeInterval(seconds))
}
