import Foundation
import HeraldCore

/// The device's own state: Focus modes on their schedules and by hand, and Scheduled Summary held
/// and delivered on the injected clock.
extension DeviceEngine {
    /// The Focus on now, if any.
    public func activeFocus(at now: Date) -> ActiveFocus? {
        device.focus.active(at: now, in: ZoneRules.of(configuration.timeZone))
    }

    /// What a manual choice's end, a schedule's edge or a summary time brings at `now`: the Focus that
    /// comes on or goes off is announced, a due summary delivered. At `start` a summary whose time
    /// passed while the daemon was stopped is delivered once.
    mutating func deviceTimers(now: Date, starting: Bool) -> [DeviceAction] {
        var actions: [DeviceAction] = []
        if device.focus.expire(at: now) { deviceChanged = true }
        let focus = activeFocus(at: now)
        if starting ? focus != nil : focus?.identifier != announcedFocus?.identifier {
            actions.append(.focusChanged(focus))
        }
        announcedFocus = focus
        focusWake = device.focus.nextChange(after: now, in: ZoneRules.of(configuration.timeZone))
        if starting { refreshSummaryWake(now: earliestHeld ?? now) }
        if let due = summaryWake, due <= now {
            actions += deliverSummary(now: now)
        }
        refreshSummaryWake(now: now)
        return actions
    }

    /// When the next summary is delivered: its time when something waits for it, else the next
    /// summary time while Scheduled Summary is on; `nil` when it is off.
    public func nextSummary(after now: Date) -> Date? {
        summaryWake
            ?? (device.summary.enabled
                ? device.summary.nextTime(after: now, in: ZoneRules.of(configuration.timeZone)) : nil)
    }

    /// The date of the oldest held notification.
    var earliestHeld: Date? { heldNotifications.map(\.notification.date).min() }

    /// Sets when the next summary is due: the first summary time after `now`, while anything is held.
    mutating func refreshSummaryWake(now: Date) {
        guard !heldNotifications.isEmpty else {
            summaryWake = nil
            return
        }
        summaryWake = device.summary.nextTime(after: now, in: ZoneRules.of(configuration.timeZone))
    }

    /// Delivers what is held as one summary: into each app's list, marked with the summary, the most
    /// relevant first (relevance score, then the newest).
    mutating func deliverSummary(now: Date, only chosen: Set<String>? = nil) -> [DeviceAction] {
        let held = heldNotifications.filter { chosen?.contains($0.app) ?? true }.sorted { a, b in
            let (ra, rb) = (
                a.notification.request.content.relevanceScore, b.notification.request.content.relevanceScore
            )
            if ra != rb { return ra > rb }
            if a.notification.date != b.notification.date { return a.notification.date > b.notification.date }
            return (a.notification.placement?.sequence ?? 0) > (b.notification.placement?.sequence ?? 0)
        }
        guard !held.isEmpty else { return [] }
        let zone = ZoneRules.of(configuration.timeZone)
        let id = "summary-\(nextSequence)"
        let summary = DeliveredSummary(
            id: id, date: now, title: SummarySettings.title(at: now, in: zone),
            items: held.map { SummaryItem(app: $0.app, identifier: $0.notification.identifier) })
        var shown: [SummaryNotification] = []
        // Oldest first into the lists, so that each list stays newest first.
        let arrival = held.sorted {
            ($0.notification.date, $0.notification.placement?.sequence ?? 0)
                < ($1.notification.date, $1.notification.placement?.sequence ?? 0)
        }
        for (app, notification) in arrival {
            _ = removeHeld(app, notification.identifier)
            var placement = notification.placement ?? NotificationPlacement()
            placement.summaryID = id
            placement.lockScreen = true
            insertDelivered(app, notification, placement: placement)
        }
        for (app, notification) in held {
            guard let record = apps[app],
                var placed = record.delivered.first(where: { $0.identifier == notification.identifier })
            else { continue }
            placed.request.content = localized(record, placed.request.content)
            shown.append(SummaryNotification(app: app, notification: placed))
        }
        device.summaries.insert(summary, at: 0)
        if device.summaries.count > DeviceState.summaryLimit {
            device.summaries.removeLast(device.summaries.count - DeviceState.summaryLimit)
        }
        deviceChanged = true
        return [.summaryDelivered(summary, notifications: shown)]
    }

    /// The summaries delivered whose notifications are still in their apps' lists, each with those
    /// notifications only, newest summary first.
    public var summaries: [DeliveredSummary] {
        device.summaries.compactMap { summary in
            var kept = summary
            kept.items = summary.items.filter { item in
                apps[item.app]?.delivered.contains {
                    $0.identifier == item.identifier && $0.placement?.summaryID == summary.id
                } ?? false
            }
            return kept.items.isEmpty ? nil : kept
        }
    }

    // MARK: - Changes from the user

    mutating func changeFocus(_ change: FocusChange, now: Date) throws(NotificationError) -> [DeviceAction] {
        let zone = ZoneRules.of(configuration.timeZone)
        switch change {
        case .turnOn(let id, let until):
            if let until, until <= now { throw .invalid("until", "must be after now") }
            try device.focus.turnOn(id, until: until)
        case .turnOff:
            device.focus.turnOff(at: now, in: zone)
        case .put(let mode):
            try device.focus.put(mode)
        case .remove(let id):
            try device.focus.remove(id)
        }
        deviceChanged = true
        return deviceTimers(now: now, starting: false)
    }

    mutating func updateSummary(_ summary: SummarySettings, now: Date) throws(NotificationError) -> [DeviceAction] {
        try summary.validate()
        var summary = summary
        summary.times = Array(Set(summary.times)).sorted()
        summary.apps = Array(Set(summary.apps)).sorted()
        let wasHolding = !heldNotifications.isEmpty
        device.summary = summary
        deviceChanged = true
        // Turned off, or an app taken out: what waited for it is delivered now, as a summary.
        var actions: [DeviceAction] = []
        let released = Set(heldNotifications.map(\.app).filter { !summary.holds($0) })
        if wasHolding, !released.isEmpty {
            actions += deliverSummary(now: now, only: released)
        }
        refreshSummaryWake(now: now)
        return actions
    }
}
