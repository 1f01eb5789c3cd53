import Foundation
import HeraldCore

extension AppRecord {
    /// The app's Live Activities (empty for a record that has none).
    public var liveActivities: AppActivities {
        get { activityState ?? AppActivities() }
        set { activityState = newValue }
    }
}

extension DeviceEngine {
    /// How long an ended activity stays without a dismissal date (Apple: up to four hours).
    public static let defaultDismissal: TimeInterval = 4 * 3600
    /// The largest attributes plus content state, in bytes, an activity may carry.
    public static let activitySizeLimit = 4096

    /// Handles one Live Activity event at `now`. Throws ActivityKit's errors for the app's calls and
    /// for a push the device cannot use.
    public mutating func handleActivity(_ event: ActivityEvent, now: Date) throws(ActivityError) -> [DeviceAction] {
        switch event {
        case .request(let app, let id, let request):
            return try requestActivity(app, id: id, request, now: now)
        case .update(let app, let id, let content, let alert):
            var activity = try live(app, id)
            activity.content = content
            activity.timestamp = now
            activity.alert = alert
            return applied(app, &activity, now: now) + alerted(app, activity, alert)
        case .end(let app, let id, let content, let dismissal):
            var activity = try live(app, id)
            if let content { activity.content = content }
            activity.timestamp = now
            let dismissAt: Date
            switch dismissal {
            case .default: dismissAt = now.addingTimeInterval(Self.defaultDismissal)
            case .immediate: dismissAt = now
            case .after(let date): dismissAt = min(max(date, now), now.addingTimeInterval(Self.defaultDismissal))
            }
            return ended(app, &activity, dismissAt: dismissAt, now: now)
        case .tokenIssued(let app, let id, let token):
            guard var activity = apps[app]?.liveActivities.activities[id], activity.isLive,
                activity.pushToken != token
            else { return [] }
            activity.pushToken = token
            store(activity)
            return [.activityChanged(activity)]
        case .pushToStartTokenIssued(let app, let type, let token):
            guard apps[app] != nil else { throw ActivityError(.notFound, "\(app) is not installed") }
            modifyActivities(app) { $0.pushToStartTokens[type] = token }
            return []
        case .push(let app, let payload, let apnsID, let priority, let token):
            let actions = try push(app, payload, apnsID: apnsID, priority: priority, token: token, now: now)
            takenPushes.append(apnsID)
            return actions
        case .broadcast(let app, let channelID, let payload, let uniqueID, let priority):
            guard let record = apps[app] else { throw ActivityError(.notFound, "\(app) is not installed") }
            let subscribed = record.liveActivities.activities.values.filter { $0.isLive && $0.channelID == channelID }
            guard !subscribed.isEmpty else {
                throw ActivityError(.notFound, "no activity of \(app) is subscribed to channel \(channelID)")
            }
            if payload.aps.event == .start {
                throw ActivityError(.invalidArgument, "aps.event: a broadcast cannot start an activity")
            }
            var actions: [DeviceAction] = []
            for activity in subscribed.sorted(by: { ($0.startedAt, $0.id) < ($1.startedAt, $1.id) }) {
                actions += try pushed(app, activity.id, payload, apnsID: uniqueID, priority: priority, now: now)
            }
            return actions
        case .setAllowed(let app, let allowed):
            guard apps[app] != nil else { throw ActivityError(.notFound, "\(app) is not installed") }
            modifyActivities(app) { $0.allowed = allowed }
            guard !allowed else { return [] }
            var actions: [DeviceAction] = []
            for var activity in apps[app]!.liveActivities.activities.values where activity.isLive {
                actions += ended(app, &activity, dismissAt: now, now: now)
            }
            return actions
        }
    }

    /// Every activity of every app, live or ended and not yet dismissed.
    public var liveActivities: [LiveActivity] {
        apps.values.flatMap { $0.liveActivities.activities.values }.sorted {
            ($0.app, -$0.content.relevanceScore, $0.startedAt) < ($1.app, -$1.content.relevanceScore, $1.startedAt)
        }
    }

    // MARK: - Requests

    mutating func requestActivity(_ app: String, id: String, _ request: ActivityRequest, now: Date)
        throws(ActivityError) -> [DeviceAction]
    {
        guard let record = apps[app] else { throw ActivityError(.notFound, "\(app) is not installed") }
        try admit(record, attributes: request.attributes, content: request.content)
        if request.pushType != nil, record.app.apsEnvironment == nil {
            throw ActivityError(
                .unentitled, "pushType: \(app) has no aps-environment, so it cannot take pushes")
        }
        if case .channel(let channel) = request.pushType, !BroadcastChannel.isWellFormed(channel) {
            throw ActivityError(.invalidArgument, "pushType channel: \"\(channel)\" is not a channel id (base64)")
        }
        guard record.liveActivities.activities[id] == nil else {
            throw ActivityError(.invalidArgument, "id: an activity \(id) exists")
        }
        let activity = LiveActivity(
            id: id, app: app, attributesType: request.attributesType, attributes: request.attributes,
            content: request.content, pushType: request.pushType, startedAt: now)
        return started(activity, now: now)
    }

    /// Whether an app may start one more activity with these attributes and content.
    func admit(_ record: AppRecord, attributes: JSONValue, content: LiveActivityContent) throws(ActivityError) {
        let app = record.app.bundleID
        guard record.liveActivities.allowed else {
            throw ActivityError(.denied, "the user turned Live Activities off for \(app)")
        }
        guard case .object = attributes, case .object = content.state else {
            throw ActivityError(.invalidArgument, "attributes and the content state must be JSON objects")
        }
        let live = record.liveActivities.activities.values.filter(\.isLive).count
        guard live < configuration.activityLimit else {
            throw ActivityError(
                .targetMaximumExceeded, "\(app) has \(live) active activities, the most it may have")
        }
        let size = attributes.jsonData().count + content.state.jsonData().count
        guard size <= Self.activitySizeLimit else {
            throw ActivityError(
                .attributesTooLarge,
                "the attributes and content state are \(size) bytes, over \(Self.activitySizeLimit)")
        }
    }

    /// A new activity: kept, shown, and its token asked for or its channel subscribed to.
    mutating func started(_ activity: LiveActivity, now: Date) -> [DeviceAction] {
        var activity = activity
        var actions = applied(activity.app, &activity, now: now)
        switch activity.pushType {
        case .token: actions.append(.requestActivityToken(app: activity.app, activityID: activity.id))
        case .channel(let channel):
            if !channelInUse(activity.app, channel, besides: activity.id) {
                actions.append(.subscribeChannel(app: activity.app, channelID: channel))
            }
        case nil: break
        }
        return actions
    }

    // MARK: - Pushes

    mutating func push(
        _ app: String, _ payload: Payload, apnsID: String, priority: PushPriority, token: String, now: Date
    ) throws(ActivityError) -> [DeviceAction] {
        guard let record = apps[app] else { throw ActivityError(.notFound, "\(app) is not installed") }
        let state = record.liveActivities
        if let activity = state.activities.values.first(where: { $0.pushToken == token }) {
            guard payload.aps.event != .start else {
                throw ActivityError(.invalidArgument, "aps.event: start goes to a push-to-start token")
            }
            return try pushed(app, activity.id, payload, apnsID: apnsID, priority: priority, now: now)
        }
        guard let type = state.pushToStartTokens.first(where: { $0.value == token })?.key else {
            throw ActivityError(.notFound, "no activity or push-to-start token of \(app) has this token")
        }
        let aps = payload.aps
        guard aps.event == .start else {
            throw ActivityError(.invalidArgument, "aps.event: a push-to-start token takes start only")
        }
        guard aps.attributesType == type else {
            throw ActivityError(
                .invalidArgument,
                "aps.attributes-type: this token starts \(type) activities, not "
                    + (aps.attributesType.map { TextExcerpt.quoted($0, limit: 64) } ?? "none"))
        }
        let attributes = JSONValue.object(aps.attributes ?? [:])
        let content = Self.content(aps, now: now)
        try admit(record, attributes: attributes, content: content)
        var pushType: ActivityPushType?
        if let channel = aps.inputPushChannel {
            guard BroadcastChannel.isWellFormed(channel) else {
                throw ActivityError(
                    .invalidArgument,
                    "aps.input-push-channel: \(TextExcerpt.quoted(channel, limit: 64)) is not a channel id")
            }
            pushType = .channel(channel)
        } else if aps.inputPushToken {
            pushType = .token
        }
        var activity = LiveActivity(
            id: apnsID, app: app, attributesType: type, attributes: attributes, content: content,
            pushType: pushType, startedAt: now, timestamp: aps.timestamp.map(Self.date) ?? now, startedByPush: true)
        activity.alert = Self.alert(aps)
        return started(activity, now: now) + alerted(app, activity, activity.alert)
    }

    /// A push or broadcast for one activity: ignored when older than what it shows, held when over
    /// the budget, applied otherwise.
    mutating func pushed(
        _ app: String, _ id: String, _ payload: Payload, apnsID: String, priority: PushPriority, now: Date
    ) throws(ActivityError) -> [DeviceAction] {
        guard let activity = apps[app]?.liveActivities.activities[id], activity.isLive else {
            throw ActivityError(.notFound, "activity \(id) of \(app) has ended")
        }
        let aps = payload.aps
        guard let event = aps.event, let stamp = aps.timestamp.map(Self.date) else {
            throw ActivityError(.invalidArgument, "a liveactivity push needs aps.event and aps.timestamp")
        }
        if event == .update, aps.contentState == nil {
            throw ActivityError(.invalidArgument, "aps.content-state: an update needs it")
        }
        guard stamp >= activity.timestamp else {
            return [
                .activityNote(
                    app: app, activityID: id,
                    text: "update \(apnsID) ignored: its timestamp is older than the content shown")
            ]
        }
        let update = HeldActivityUpdate(
            event: event, timestamp: stamp, content: aps.contentState == nil ? nil : Self.content(aps, now: now),
            alert: Self.alert(aps), dismissalDate: aps.dismissalDate.map(Self.date), apnsID: apnsID, release: now)
        // An end always goes; a priority-10 update counts against the hourly budget.
        if event == .update, priority == .immediate {
            let budget =
                apps[app]?.app.supportsFrequentActivityUpdates == true
                ? configuration.frequentActivityUpdateBudget : configuration.activityUpdateBudget
            let recent = (apps[app]?.liveActivities.budgetUse[id] ?? []).filter { now.timeIntervalSince($0) < 3600 }
            if recent.count >= budget {
                var held = update
                held.release = recent.min()!.addingTimeInterval(3600)
                modifyActivities(app) {
                    $0.budgetUse[id] = recent
                    $0.held[id] = held
                }
                scheduleActivityTimer(app, id)
                return [
                    .activityNote(
                        app: app, activityID: id,
                        text: "update \(apnsID) held until \(AppLinkDates.format(held.release)): "
                            + "\(budget) priority-10 updates in the last hour")
                ]
            }
            modifyActivities(app) {
                $0.budgetUse[id] = recent + [now]
                $0.held[id] = nil
            }
        }
        return apply(update, to: app, id, now: now)
    }

    /// Applies an update or end to a live activity.
    mutating func apply(_ update: HeldActivityUpdate, to app: String, _ id: String, now: Date) -> [DeviceAction] {
        guard var activity = apps[app]?.liveActivities.activities[id], activity.isLive else { return [] }
        guard update.timestamp >= activity.timestamp else {
            // A held update overtaken by a newer one applied meanwhile (priority 5, or the app's).
            return [
                .activityNote(
                    app: app, activityID: id,
                    text: "update \(update.apnsID) ignored: its timestamp is older than the content shown")
            ]
        }
        if let content = update.content { activity.content = content }
        activity.timestamp = update.timestamp
        activity.alert = update.alert
        if update.event == .end {
            // As for the app's own end: at the date, but no later than four hours on (a date years
            // away would keep the ended activity, and its content, for years).
            let latest = now.addingTimeInterval(Self.defaultDismissal)
            let dismissAt = min(max(update.dismissalDate ?? latest, now), latest)
            return ended(app, &activity, dismissAt: dismissAt, now: now)
                + alerted(app, activity, update.alert)
        }
        return applied(app, &activity, now: now) + alerted(app, activity, update.alert)
    }

    // MARK: - State changes

    /// Keeps new content: active, or stale when its stale date has passed.
    mutating func applied(_ app: String, _ activity: inout LiveActivity, now: Date) -> [DeviceAction] {
        activity.updatedAt = now
        activity.state = (activity.content.staleDate.map { $0 <= now } ?? false) ? .stale : .active
        store(activity)
        scheduleActivityTimer(app, activity.id)
        return [.activityChanged(activity)]
    }

    /// Ends an activity: shown until `dismissAt`, dismissed at once when that is now.
    mutating func ended(_ app: String, _ activity: inout LiveActivity, dismissAt: Date, now: Date) -> [DeviceAction] {
        activity.state = .ended
        activity.endedAt = now
        activity.updatedAt = now
        activity.dismissAt = dismissAt
        modifyActivities(app) { $0.held[activity.id] = nil }
        let released = released(activity)
        if dismissAt <= now { return dismissed(app, &activity) + released }
        store(activity)
        scheduleActivityTimer(app, activity.id)
        return [.activityChanged(activity)] + released
    }

    /// Takes an activity off the screen and out of the record (what it took updates by was given up
    /// when it ended).
    mutating func dismissed(_ app: String, _ activity: inout LiveActivity) -> [DeviceAction] {
        activity.state = .dismissed
        modifyActivities(app) { state in
            state.activities[activity.id] = nil
            state.budgetUse[activity.id] = nil
            state.held[activity.id] = nil
        }
        activityTimers.remove(.init(app: app, id: activity.id))
        return [.activityChanged(activity)]
    }

    /// What an activity that stopped taking updates gives up: its token, its channel (unless another
    /// live activity of the app is on it).
    func released(_ activity: LiveActivity) -> [DeviceAction] {
        switch activity.pushType {
        case .token where activity.pushToken != nil:
            return [.releaseActivityToken(app: activity.app, activityID: activity.id)]
        case .channel(let channel) where !channelInUse(activity.app, channel, besides: activity.id):
            return [.unsubscribeChannel(app: activity.app, channelID: channel)]
        default:
            return []
        }
    }

    func channelInUse(_ app: String, _ channel: String, besides id: String) -> Bool {
        apps[app]?.liveActivities.activities.values.contains { $0.id != id && $0.isLive && $0.channelID == channel }
            ?? false
    }

    /// An update's alert, shown as the settings allow (an alert style and the sound setting).
    func alerted(_ app: String, _ activity: LiveActivity, _ alert: ActivityAlert?) -> [DeviceAction] {
        guard let alert, let settings = apps[app]?.settings, settings.isAllowed, settings.alertSetting == .enabled
        else { return [] }
        let sound: PresentedSound? =
            settings.soundSetting == .enabled
            ? alert.sound.map { $0 == "default" ? .default : .named($0) } : nil
        return [.activityAlert(app: app, activityID: activity.id, alert: alert, sound: sound)]
    }

    // MARK: - Timers

    /// Fires the activities' timers due at `now`: stale dates, dismissals and held updates.
    mutating func fireActivityTimers(now: Date) -> [DeviceAction] {
        var actions: [DeviceAction] = []
        for (key, _) in activityTimers.takeDue(now: now) {
            guard var activity = apps[key.app]?.liveActivities.activities[key.id] else { continue }
            if activity.state == .ended, let dismissAt = activity.dismissAt, dismissAt <= now {
                actions += dismissed(key.app, &activity)
                continue
            }
            if let held = apps[key.app]?.liveActivities.held[key.id], held.release <= now {
                modifyActivities(key.app) { state in
                    state.held[key.id] = nil
                    state.budgetUse[key.id, default: []].append(now)
                }
                actions += apply(held, to: key.app, key.id, now: now)
                continue
            }
            if activity.state == .active, let stale = activity.content.staleDate, stale <= now {
                actions += applied(key.app, &activity, now: now)
                continue
            }
            scheduleActivityTimer(key.app, key.id)
        }
        return actions
    }

    /// Schedules an activity's next timer: its dismissal, its held update, or its stale date.
    mutating func scheduleActivityTimer(_ app: String, _ id: String) {
        let key = Scheduler.Key(app: app, id: id)
        activityTimers.remove(key)
        guard let activity = apps[app]?.liveActivities.activities[id] else { return }
        var dates: [Date] = []
        if activity.state == .ended, let dismissAt = activity.dismissAt { dates.append(dismissAt) }
        if activity.isLive, let held = apps[app]?.liveActivities.held[id] { dates.append(held.release) }
        if activity.state == .active, let stale = activity.content.staleDate { dates.append(stale) }
        if let next = dates.min() { activityTimers.schedule(key, at: next) }
    }

    // MARK: - Helpers

    func live(_ app: String, _ id: String) throws(ActivityError) -> LiveActivity {
        guard let record = apps[app] else { throw ActivityError(.notFound, "\(app) is not installed") }
        guard let activity = record.liveActivities.activities[id], activity.isLive else {
            throw ActivityError(.notFound, "\(app) has no live activity \(id)")
        }
        return activity
    }

    mutating func store(_ activity: LiveActivity) {
        modifyActivities(activity.app) { $0.activities[activity.id] = activity }
    }

    mutating func modifyActivities(_ app: String, _ change: (inout AppActivities) -> Void) {
        guard apps[app] != nil else { return }
        change(&apps[app]!.liveActivities)
        changedApps.insert(app)
    }

    static func date(_ seconds: Int) -> Date { Date(timeIntervalSince1970: TimeInterval(seconds)) }

    static func content(_ aps: APS, now: Date) -> LiveActivityContent {
        LiveActivityContent(
            state: .object(aps.contentState ?? [:]), staleDate: aps.staleDate.map(date),
            relevanceScore: aps.relevanceScore ?? 0)
    }

    static func alert(_ aps: APS) -> ActivityAlert? {
        guard aps.alert != nil || aps.sound != nil else { return nil }
        return ActivityAlert(title: aps.alert?.title, body: aps.alert?.body, sound: aps.sound?.name)
    }
}
