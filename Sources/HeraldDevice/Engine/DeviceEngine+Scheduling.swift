import Foundation
import HeraldCore

/// Scheduling: adding requests within the pending limit, moving floating triggers with the time zone,
/// firing what is due, and location triggers.
extension DeviceEngine {
    // MARK: - Scheduling

    mutating func add(_ app: String, _ request: NotificationRequest, now: Date) throws(NotificationError)
        -> [DeviceAction]
    {
        guard var record = apps[app] else { throw unknownApp(app) }
        if record.settings.authorizationStatus == .denied {
            throw NotificationError(.notificationsNotAllowed, "\(app): the user has not allowed notifications")
        }
        try request.validate()
        let key = Scheduler.Key(app: app, id: request.identifier)
        guard let trigger = request.trigger else {
            // No trigger: deliver now (and replace a pending request of the same identifier).
            if record.pending.removeValue(forKey: request.identifier) != nil { scheduler.remove(key) }
            apps[app] = record
            changedApps.insert(app)
            return deliver(
                app, DeliveredNotification(request: request, date: now, isRemote: false, late: false), now: now)
        }
        var next: Date?
        if case .location = trigger {
            next = nil
        } else {
            next = trigger.nextFireDate(after: now, anchor: now, deviceTimeZone: configuration.timeZone)
            guard next != nil else {
                throw NotificationError(.notificationInvalidNoDate, "trigger: matches no date after \(now)")
            }
        }
        record.pending[request.identifier] = PendingRequest(request: request, addedAt: now, nextFireDate: next)
        if let next { scheduler.schedule(key, at: next) } else { scheduler.remove(key) }
        regions.forget(regionKey(app, request.identifier))
        apps[app] = record
        changedApps.insert(app)
        return enforceLimit(app, now: now)
    }

    /// Keeps the `pendingLimit` requests that fire soonest (a repeating request counts once; location
    /// requests, having no date, count as firing last) and reports the rest.
    mutating func enforceLimit(_ app: String, now: Date) -> [DeviceAction] {
        guard var record = apps[app], record.pending.count > configuration.pendingLimit else { return [] }
        let ordered = record.pending.values.sorted { a, b in
            switch (a.nextFireDate, b.nextFireDate) {
            case (let x?, let y?): x != y ? x < y : a.addedAt < b.addedAt
            case (.some, nil): true
            case (nil, .some): false
            case (nil, nil): a.addedAt < b.addedAt
            }
        }
        let dropped = ordered.dropFirst(configuration.pendingLimit)
        for pending in dropped {
            record.pending[pending.request.identifier] = nil
            scheduler.remove(.init(app: app, id: pending.request.identifier))
            record.dropped.append(
                DroppedRequest(
                    request: pending.request, droppedAt: now,
                    reason: "more than \(configuration.pendingLimit) pending; this one fires later than the rest"))
        }
        if record.dropped.count > configuration.droppedLimit {
            record.dropped.removeFirst(record.dropped.count - configuration.droppedLimit)
        }
        apps[app] = record
        return [.pendingDropped(app: app, identifiers: dropped.map(\.request.identifier))]
    }

    /// Recomputes the next fire date of every calendar trigger in floating time after the device's zone changed.
    mutating func rescheduleFloatingTriggers(now: Date) {
        for (app, record) in apps {
            var changed = record
            for (id, pending) in record.pending {
                guard let trigger = pending.request.trigger, case .calendar(let c) = trigger, c.timeZone == .floating
                else { continue }
                let next = trigger.nextFireDate(
                    after: now, anchor: pending.addedAt, deviceTimeZone: configuration.timeZone)
                let key = Scheduler.Key(app: app, id: id)
                if let next {
                    changed.pending[id]?.nextFireDate = next
                    scheduler.schedule(key, at: next)
                } else if c.repeats {
                    // No date left in the new zone (a bounded repetition): it is over.
                    changed.pending[id] = nil
                    scheduler.remove(key)
                } else {
                    // The one-shot's wall time has already passed in the new zone: like a legacy fire date in
                    // the past, it is delivered now rather than kept pending forever.
                    changed.pending[id]?.nextFireDate = now
                    scheduler.schedule(key, at: now)
                }
            }
            if changed != record {
                apps[app] = changed
                changedApps.insert(app)
            }
        }
    }

    // MARK: - Firing

    mutating func fireDue(now: Date, starting: Bool) -> [DeviceAction] {
        var actions: [DeviceAction] = []
        for (key, date) in scheduler.takeDue(now: now) {
            guard var record = apps[key.app], var pending = record.pending[key.id] else { continue }
            let late = starting ? date < now : now.timeIntervalSince(date) > configuration.lateTolerance.timeInterval
            let request = pending.request
            if request.trigger?.repeats == true {
                // Missed repetitions fire once: the next date is after now, not after the missed one.
                let next = request.trigger?.nextFireDate(
                    after: now, anchor: pending.addedAt, deviceTimeZone: configuration.timeZone)
                pending.nextFireDate = next
                record.pending[key.id] = pending
                if let next { scheduler.schedule(key, at: next) } else { record.pending[key.id] = nil }
            } else {
                record.pending[key.id] = nil
            }
            apps[key.app] = record
            changedApps.insert(key.app)
            actions += deliver(
                key.app, DeliveredNotification(request: request, date: now, isRemote: false, late: late), now: now)
        }
        return actions
    }

    func regionKey(_ app: String, _ id: String) -> String { "\(app)\u{1F}\(id)" }

    mutating func locationFix(_ fix: LocationFix, now: Date) -> [DeviceAction] {
        var actions: [DeviceAction] = []
        for (app, record) in apps where record.locationAuthorized {
            for (id, pending) in record.pending {
                guard case .location(let trigger) = pending.request.trigger else { continue }
                var region = trigger.region
                region.identifier = regionKey(app, id)
                for crossing in regions.process([fix], regions: [region]) {
                    let wanted = crossing.kind == .entry ? trigger.region.notifyOnEntry : trigger.region.notifyOnExit
                    guard wanted else { continue }
                    if !trigger.repeats {
                        apps[app]?.pending[id] = nil
                        regions.forget(region.identifier)
                    }
                    changedApps.insert(app)
                    actions += deliver(
                        app, DeliveredNotification(request: pending.request, date: now, isRemote: false, late: false),
                        now: now)
                }
            }
        }
        return actions
    }
}
