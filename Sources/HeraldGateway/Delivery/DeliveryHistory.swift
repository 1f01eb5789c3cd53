import Foundation
import HeraldCore

/// One push in the console's history: where it went and its latest step.
public struct PushHistoryEntry: Sendable, Codable, Equatable {
    /// `apns-id`.
    public var apnsID: String
    /// `apns-unique-id` (development only).
    public var uniqueID: String?
    /// The device it was for, when its `accepted` step is among the rows read.
    public var device: String?
    /// `apns-topic` as sent, likewise.
    public var topic: String?
    /// When it was accepted (or its first step read, when that is older than the rows read).
    public var firstAt: Date
    /// Its latest step.
    public var status: DeliveryEvent.Kind
    /// When the latest step happened.
    public var at: Date
    /// Why, for a push discarded, refused, replaced or not acknowledged: the latest step's detail.
    public var reason: String?
    /// Its steps, in order.
    public var steps: [DeliveryEvent.Kind]
    /// What Apple would do quietly with it (``PushWarning`` names), when anything.
    public var warnings: [String]?
    /// The latest of Apple's delivery states its steps reached (``AppleDeliveryState``).
    public var state: AppleDeliveryState?
}

/// What the history is narrowed to; every field left `nil` matches everything.
public struct PushHistoryFilter: Sendable, Equatable {
    /// The app: its bundle id matches its own topic and those with a push type's suffix (`.voip`,
    /// `.complication`, …).
    public var app: String?
    /// The device id.
    public var device: String?
    /// The latest step.
    public var status: DeliveryEvent.Kind?
    /// Words in the reason, case-insensitive.
    public var reason: String?

    /// A filter.
    public init(app: String? = nil, device: String? = nil, status: DeliveryEvent.Kind? = nil, reason: String? = nil) {
        self.app = app
        self.device = device
        self.status = status
        self.reason = reason
    }

    func matches(_ entry: PushHistoryEntry) -> Bool {
        if let app, !(entry.topic.map { Self.topic($0, isOf: app) } ?? false) { return false }
        if let device, entry.device != device { return false }
        if let status, entry.status != status { return false }
        if let reason, entry.reason?.range(of: reason, options: .caseInsensitive) == nil { return false }
        return true
    }

    static let suffixes = PushType.allCases.compactMap(\.topicSuffix).filter { !$0.isEmpty }

    static func topic(_ topic: String, isOf app: String) -> Bool {
        topic == app
            || (topic.hasPrefix(app)
                && suffixes.contains { topic.utf8.count == app.utf8.count + $0.utf8.count && topic.hasSuffix($0) })
    }
}

/// Builds the history from delivery-log events: one entry per push (by `apns-unique-id`, or
/// `apns-id` where there is none), newest first.
public enum DeliveryHistory {
    /// How many delivery-log rows the console's history reads: the history is of recent pushes.
    public static let rowsRead = 20_000

    /// The entries of `events` (oldest first) that `filter` matches, newest first, at most `limit`.
    public static func entries(_ events: [DeliveryEvent], filter: PushHistoryFilter, limit: Int) -> [PushHistoryEntry] {
        var order: [String] = []
        var byPush: [String: [DeliveryEvent]] = [:]
        for event in events {
            let key = event.uniqueID ?? event.apnsID
            if byPush[key] == nil { order.append(key) }
            byPush[key, default: []].append(event)
        }
        var entries: [PushHistoryEntry] = []
        for key in order {
            // Runs are written in group commits, not always in time order; the stable sort keeps
            // each run's own order.
            let steps = byPush[key]!.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }
                .map(\.element)
            // A warning is said of the push, not a step it took: the latest step is another. A refusal
            // is the push's outcome, whenever the device said it: it reports a refusal before its
            // acknowledgement, but could not use the push all the same (as Apple's state says).
            guard let first = steps.first,
                let last = steps.last(where: { $0.kind == .refused }) ?? steps.last(where: { $0.kind != .warning })
                    ?? steps.last
            else { continue }
            let target: (device: String?, topic: String?)? =
                if let accepted = steps.first(where: { $0.kind == .accepted }) {
                    DeliveredPush.target(ofAccepted: accepted.detail).map { ($0.device, $0.topic) }
                } else if let rejected = steps.first(where: { $0.kind == .rejected }),
                    let detail = rejected.detail.flatMap(RejectedDetail.init(text:))
                {
                    (detail.device, detail.topic)
                } else {
                    nil
                }
            let explains: Set<DeliveryEvent.Kind> = [.discarded, .refused, .replaced, .delivered, .rejected]
            let warnings = steps.filter { $0.kind == .warning }.compactMap {
                $0.detail?.split(separator: ":", maxSplits: 1).first.map(String.init)
            }
            let entry = PushHistoryEntry(
                apnsID: first.apnsID, uniqueID: first.uniqueID, device: target?.device, topic: target?.topic,
                firstAt: first.at, status: last.kind, at: last.at,
                reason: explains.contains(last.kind) ? last.detail : nil, steps: steps.map(\.kind),
                warnings: warnings.isEmpty ? nil : warnings,
                state: steps.lazy.reversed().compactMap(AppleDeliveryState.init).first)
            if filter.matches(entry) { entries.append(entry) }
        }
        entries.sort { $0.firstAt > $1.firstAt }
        return Array(entries.prefix(max(0, limit)))
    }
}

extension DeliveredPush {
    /// The device and topic an `accepted` step's detail names (``acceptedDetail(device:topic:binaryIdentifier:)``).
    static func target(ofAccepted detail: String?) -> (device: String, topic: String)? {
        guard let detail, detail.hasPrefix("device "), let topic = detail.range(of: ", topic ") else { return nil }
        let device = detail[detail.index(detail.startIndex, offsetBy: 7)..<topic.lowerBound]
        var rest = detail[topic.upperBound...]
        if let binary = rest.range(of: ", binary interface identifier ") { rest = rest[..<binary.lowerBound] }
        return (String(device), String(rest))
    }
}
