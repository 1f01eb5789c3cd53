import Foundation
import HeraldCore

/// Scheduled Summary: the apps whose notifications wait, and the times of day they are delivered
/// together (Settings → Notifications → Scheduled Summary).
public struct SummarySettings: Sendable, Hashable, Codable {
    /// Whether it is on.
    public var enabled: Bool = false
    /// One to twelve times a day, in the device's zone, in order.
    public var times: [DayTime] = [try! DayTime(hour: 8), try! DayTime(hour: 18)]
    /// The apps in it (bundle ids).
    public var apps: [String] = []

    /// Off, at 08:00 and 18:00, no apps.
    public init() {}

    /// Checks the times: one to twelve, each once.
    public func validate() throws(NotificationError) {
        guard (1...12).contains(times.count) else {
            throw .invalid("summary.times", "give one to twelve times a day, not \(times.count)")
        }
        guard Set(times).count == times.count else { throw .invalid("summary.times", "a time appears twice") }
    }

    /// Whether the summary holds `app`'s notifications.
    public func holds(_ app: String) -> Bool { enabled && apps.contains(app) }

    /// The first summary time strictly after `date`.
    public func nextTime(after date: Date, in zone: ZoneRules) -> Date? {
        guard !times.isEmpty else { return nil }
        let t = Int64(date.timeIntervalSince1970.rounded(.down))
        let today = Civil.floorDiv(zone.local(t), Civil.secondsPerDay)
        var best: Int64?
        for day in (today - 1)...(today + 2) {
            for time in times {
                let instant = time.instant(onDay: day, in: zone)
                if instant > t, best.map({ instant < $0 }) ?? true { best = instant }
            }
        }
        return best.map { Date(timeIntervalSince1970: Double($0)) }
    }

    /// What a summary delivered at `date` is called: "Your Morning Summary" before noon,
    /// "Your Afternoon Summary" before five, "Your Evening Summary" after.
    public static func title(at date: Date, in zone: ZoneRules) -> String {
        let local = zone.local(Int64(date.timeIntervalSince1970.rounded(.down)))
        let hour = Int(((local % Civil.secondsPerDay) + Civil.secondsPerDay) % Civil.secondsPerDay / 3600)
        let part = hour < 12 ? "Morning" : hour < 17 ? "Afternoon" : "Evening"
        return "Your \(part) Summary"
    }
}

/// One notification in a delivered summary.
public struct SummaryItem: Sendable, Hashable, Codable {
    /// The app's bundle id.
    public var app: String
    /// The notification's identifier in the app's list.
    public var identifier: String
}

/// A Scheduled Summary as it was delivered: its items, the most relevant first (relevance score,
/// then the newest), each a notification in its app's list that opens as itself.
public struct DeliveredSummary: Sendable, Hashable, Codable {
    /// `summary-<n>`: unique on the device.
    public var id: String
    /// When it was delivered.
    public var date: Date
    /// `Your Morning Summary`, `Your Afternoon Summary` or `Your Evening Summary`.
    public var title: String
    /// Its notifications, most relevant first.
    public var items: [SummaryItem]
}

/// What the device keeps beside the apps: the Focus modes, the Scheduled Summary, the summaries
/// delivered (the newest twelve), and the device's passcode-free state that survives a restart.
public struct DeviceState: Sendable, Hashable, Codable {
    /// The Focus modes and the manual choice.
    public var focus = FocusSettings()
    /// Scheduled Summary's settings.
    public var summary = SummarySettings()
    /// Newest first.
    public var summaries: [DeliveredSummary] = []

    /// The defaults: the built-in Focus modes, none on; Scheduled Summary off.
    public init() {}

    /// Summaries kept.
    public static let summaryLimit = 12
}
