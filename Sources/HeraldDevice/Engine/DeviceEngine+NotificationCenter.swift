import Foundation
import HeraldCore

/// Notification Center's lists: every change to an app's delivered and held notifications goes
/// through here, so that the list stays within its bound and each changed row is marked for the store.
extension DeviceEngine {
    /// Puts a notification at the top of the app's list (replacing one with its identifier, there or
    /// waiting for a summary) with a new place in the order; the oldest beyond
    /// ``Configuration/deliveredLimit`` go, unless `trim` is false (a foreground app's notification
    /// waiting for its answer takes no one's place yet).
    mutating func insertDelivered(
        _ app: String, _ notification: DeliveredNotification, placement: NotificationPlacement, trim: Bool = true
    ) {
        guard apps[app] != nil else { return }
        var placed = notification
        placed.placement = placement
        placed.placement!.sequence = nextSequence
        nextSequence += 1
        let identifier = placed.identifier
        _ = removeHeld(app, identifier)
        apps[app]!.delivered.removeAll { $0.identifier == identifier }
        apps[app]!.delivered.insert(placed, at: 0)
        mark(app, identifier, held: false)
        let limit = max(1, configuration.deliveredLimit)
        while trim, apps[app]!.delivered.count > limit {
            let oldest = apps[app]!.delivered.removeLast()
            mark(app, oldest.identifier, held: false)
        }
    }

    /// Replaces a delivered notification in place (its place in the order kept).
    mutating func replaceDelivered(_ app: String, _ notification: DeliveredNotification) {
        guard let index = apps[app]?.delivered.firstIndex(where: { $0.identifier == notification.identifier })
        else { return }
        apps[app]!.delivered[index] = notification
        mark(app, notification.identifier, held: false)
    }

    /// Takes notifications out of the app's list.
    mutating func removeDelivered(_ app: String, _ identifiers: Set<String>) {
        guard !identifiers.isEmpty, apps[app] != nil else { return }
        let before = apps[app]!.delivered.count
        apps[app]!.delivered.removeAll { identifiers.contains($0.identifier) }
        guard apps[app]!.delivered.count != before else { return }
        for id in identifiers { mark(app, id, held: false) }
    }

    /// Holds a notification for the next Scheduled Summary (replacing one with its identifier, waiting
    /// or in the list); whether it replaced one in the list, which then leaves the screen.
    @discardableResult
    mutating func hold(_ app: String, _ notification: DeliveredNotification) -> Bool {
        guard apps[app] != nil else { return false }
        let listed = apps[app]!.delivered.contains { $0.identifier == notification.identifier }
        if listed { removeDelivered(app, [notification.identifier]) }
        var placed = notification
        placed.placement?.sequence = nextSequence
        nextSequence += 1
        var held = apps[app]!.held ?? []
        held.removeAll { $0.identifier == placed.identifier }
        held.insert(placed, at: 0)
        mark(app, placed.identifier, held: true)
        while held.count > max(1, configuration.deliveredLimit) {
            mark(app, held.removeLast().identifier, held: true)
        }
        apps[app]!.held = held
        if summaryWake == nil { refreshSummaryWake(now: notification.date) }
        return listed
    }

    /// Takes a held notification away (cancelled by a legacy call); whether there was one.
    mutating func removeHeld(_ app: String, _ identifier: String) -> Bool {
        guard let index = apps[app]?.held?.firstIndex(where: { $0.identifier == identifier }) else { return false }
        apps[app]!.held!.remove(at: index)
        mark(app, identifier, held: true)
        return true
    }

    /// Marks a row for the store.
    mutating func mark(_ app: String, _ identifier: String, held: Bool) {
        changedNotifications[app, default: []].insert(NotificationKey(identifier: identifier, held: held))
    }

    /// Every notification held for the next summary, with its app.
    public var heldNotifications: [(app: String, notification: DeliveredNotification)] {
        apps.values.flatMap { record in (record.held ?? []).map { (record.app.bundleID, $0) } }
    }
}

/// Notification Center's stacks: how an app's notifications group (Notification Grouping), each stack
/// with its count and its line ("and 3 more from Anna").
public struct NotificationStack: Sendable, Hashable, Codable {
    /// The app's bundle id.
    public var app: String
    /// The thread it stacks (automatic grouping), `""` for the app's own stack, or the notification's
    /// identifier when grouping is off.
    public var thread: String
    /// Newest first.
    public var notifications: [DeliveredNotification]
    /// The line under the top notification: "and 3 more from Anna" (`summary-arg`, counted by
    /// `summary-arg-count`), "and 2 more notifications"; `nil` for a stack of one.
    public var line: String?

    /// How many the stack holds.
    public var count: Int { notifications.count }

    /// The stacks of one app's notifications (newest first), by its grouping setting.
    public static func stacks(
        app: String, _ notifications: [DeliveredNotification], grouping: GroupingSetting
    ) -> [NotificationStack] {
        var order: [String] = []
        var groups: [String: [DeliveredNotification]] = [:]
        for notification in notifications {
            let key: String
            switch grouping {
            case .automatic: key = notification.request.content.threadIdentifier
            case .byApp: key = ""
            case .off: key = "\u{1F}" + notification.identifier
            }
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(notification)
        }
        return order.map { key in
            let list = groups[key]!
            return NotificationStack(
                app: app, thread: grouping == .off ? list[0].identifier : key, notifications: list,
                line: line(list))
        }
    }

    /// The stack's line: the rest of the stack counted (each notification counts `summary-arg-count`
    /// items, 1 when absent) and named by their `summary-arg`s, newest first.
    static func line(_ list: [DeliveredNotification]) -> String? {
        let rest = list.dropFirst()
        guard !rest.isEmpty else { return nil }
        // Summed without overflowing: a push may claim any count up to Int.max.
        let count = rest.reduce(0) { total, n in
            let (sum, overflow) = total.addingReportingOverflow(n.request.content.summaryArgumentCount ?? 1)
            return overflow ? Int.max : sum
        }
        var names: [String] = []
        for n in rest {
            if let name = n.request.content.summaryArgument, !name.isEmpty, !names.contains(name) { names.append(name) }
        }
        guard !names.isEmpty else { return "and \(count) more notification\(count == 1 ? "" : "s")" }
        let who =
            names.count == 1
            ? names[0] : names.dropLast().joined(separator: ", ") + " and " + names[names.count - 1]
        return "and \(count) more from \(who)"
    }
}
