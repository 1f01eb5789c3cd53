import Foundation
import HeraldCore
import Testing

@testable import HeraldDevice

/// What today's iOS shows, hears and holds back (docs/device-engine.md, "What is shown"), on the
/// engine with virtual time.
@Suite struct DeviceEnginePresentationTests {
    let app = "com.example.app"
    let t0 = at("2025-01-06T10:00:00Z")  // a Monday

    func push(_ e: inout DeviceEngine, _ json: String, id: String, at now: Date? = nil) throws -> [DeviceAction] {
        try e.handle(
            .remoteNotification(app: app, payload: try Payload(json: json), apnsID: id, collapseID: nil),
            now: now ?? t0)
    }

    // MARK: - Item 1: only what iOS shows is shown

    @Test func aPushWithoutTextIsNeverListedButItsBadgeAndSoundApply() throws {
        var e = try engine(now: t0)
        let badge = try push(&e, #"{"aps":{"badge":5}}"#, id: "b")
        let p = try #require(badge.presentations.first)
        #expect(!p.hasText && p.alertStyle == .none && !p.inList && !p.onLockScreen && p.badge == 5 && p.sound == nil)
        #expect(badge.contains(.setBadge(app: app, badge: 5)) && e.apps[app]!.badge == 5)
        #expect(PresentationSummary(p).line == "badge 5")
        let sound = try push(&e, #"{"aps":{"sound":"default"}}"#, id: "s")
        #expect(PresentationSummary(try #require(sound.presentations.first)).line == "sound default")
        let both = try push(&e, #"{"aps":{"badge":2,"sound":"default","alert":""}}"#, id: "both")
        #expect(PresentationSummary(try #require(both.presentations.first)).line == "badge 2, sound default")
        // Nothing at all: no aps, or an empty alert object.
        for (id, json) in [("none", #"{"foo":1}"#), ("empty", #"{"aps":{"alert":{}}}"#)] {
            let actions = try push(&e, json, id: id)
            guard case .nothingToShow(_, let n) = actions.first, actions.count == 1 else {
                Issue.record("\(id): \(actions)"); continue
            }
            #expect(n.identifier == id)
        }
        #expect(e.apps[app]!.delivered.isEmpty, "nothing without text is in deliveredNotifications()")
        // With the badge setting off, a badge-only push does nothing at all.
        var settings = e.apps[app]!.settings
        settings.badgeSetting = .disabled
        _ = try e.handle(.updateSettings(app: app, settings: settings), now: t0)
        guard case .nothingToShow = try push(&e, #"{"aps":{"badge":9}}"#, id: "b2").first else {
            Issue.record("a badge the user turned off was applied"); return
        }
        #expect(e.apps[app]!.badge == 2)
    }

    @Test func aLocalNotificationWithoutTextSetsTheBadgeAndIsNotListed() throws {
        var e = try engine(now: t0)
        // Seed 003's to-do app: a badge and a sound without an alert body.
        let actions = try e.handle(
            .add(app: app, request: NotificationRequest(identifier: "todo", content: content("", badge: 3))), now: t0)
        let p = try #require(actions.presentations.first)
        #expect(!p.hasText && p.badge == 3 && p.sound == .default && !p.inList)
        #expect(e.apps[app]!.delivered.isEmpty && e.apps[app]!.badge == 3)
    }

    @Test func textIsJudgedAfterLocalization() throws {
        var e = DeviceEngine(policy: FixedDecision(allow: true))
        let bundle = LocalizationBundle(tables: ["en": StringsTable(["EMPTY": "", "HI": "Hello"])])
        _ = try e.handle(.installApp(InstalledApp(bundleID: app, localization: bundle)), now: t0)
        _ = try e.handle(.requestAuthorization(app: app, options: [.alert, .sound]), now: t0)
        guard case .nothingToShow = try push(&e, #"{"aps":{"alert":{"loc-key":"EMPTY"}}}"#, id: "e").first else {
            Issue.record("a key that localizes to nothing was shown"); return
        }
        let shown = try push(&e, #"{"aps":{"alert":{"loc-key":"HI"}}}"#, id: "h")
        #expect(shown.presentations.first?.notification.request.content.body == "Hello")
        #expect(e.apps[app]!.delivered.map(\.identifier) == ["h"])
    }

    // MARK: - Item 2: interruption levels

    @Test func passiveIsListedWithoutSoundBannerOrWakingTheScreen() throws {
        var e = try engine(now: t0)
        let p = try #require(
            try push(&e, #"{"aps":{"alert":"x","sound":"default","badge":1,"interruption-level":"passive"}}"#, id: "p")
                .presentations.first)
        #expect(p.level == .passive && p.alertStyle == .none && p.sound == nil && !p.wakesScreen)
        #expect(p.inList && p.onLockScreen && p.badge == 1)
        #expect(PresentationSummary(p).line == "x (passive, sound none, badge 1)")
        #expect(e.apps[app]!.delivered.first?.placement?.lockScreen == true)
    }

    @Test func timeSensitiveNeedsTheAppsSettingAndIsLabelled() throws {
        var e = try engine(now: t0)
        let on = try #require(
            try push(&e, #"{"aps":{"alert":"x","interruption-level":"time-sensitive"}}"#, id: "a").presentations.first)
        #expect(on.level == .timeSensitive && on.notification.placement?.timeSensitive == true && on.wakesScreen)
        var settings = e.apps[app]!.settings
        settings.timeSensitiveSetting = .disabled
        _ = try e.handle(.updateSettings(app: app, settings: settings), now: t0)
        let off = try #require(
            try push(&e, #"{"aps":{"alert":"x","interruption-level":"time-sensitive"}}"#, id: "b").presentations.first)
        #expect(off.level == .active && off.notification.placement?.timeSensitive == false)
    }

    @Test func criticalNeedsAuthorizationAndPlaysThroughSoundsOffAndFocus() throws {
        var e = try engine(options: [.alert, .sound, .criticalAlert], now: t0)
        var settings = e.apps[app]!.settings
        settings.soundSetting = .disabled
        _ = try e.handle(.updateSettings(app: app, settings: settings), now: t0)
        _ = try e.handle(.focus(.turnOn("do-not-disturb", until: nil)), now: t0)
        let json = #"{"aps":{"alert":"Flood","sound":{"critical":1,"name":"siren.caf","volume":0.8}}}"#
        let p = try #require(try push(&e, json, id: "c").presentations.first)
        #expect(p.level == .critical && p.sound == .critical(name: "siren.caf", volume: 0.8))
        #expect(p.silencedBy == nil && p.alertStyle == .banner && p.wakesScreen)
        // Without the critical-alert setting it is an active notification: silenced by the Focus.
        settings.criticalAlertSetting = .disabled
        _ = try e.handle(.updateSettings(app: app, settings: settings), now: t0)
        let q = try #require(try push(&e, json, id: "d").presentations.first)
        #expect(q.level == .active && q.sound == nil && q.silencedBy == "Do Not Disturb" && !q.wakesScreen)
    }

    // MARK: - Item 3: Focus

    @Test func aFocusSilencesAppsItDoesNotAllowAndTimeSensitiveBreaksThrough() throws {
        var e = try engine(now: t0)
        _ = try e.handle(.installApp(InstalledApp(bundleID: "friend")), now: t0)
        _ = try e.handle(.requestAuthorization(app: "friend", options: [.alert, .sound]), now: t0)
        var dnd = try #require(e.device.focus.mode("do-not-disturb"))
        dnd.allowedApps = ["friend"]
        _ = try e.handle(.focus(.put(dnd)), now: t0)
        let on = try e.handle(.focus(.turnOn("do-not-disturb", until: nil)), now: t0)
        #expect(
            on == [
                .focusChanged(
                    ActiveFocus(identifier: "do-not-disturb", name: "Do Not Disturb", scheduled: false, until: nil))
            ])
        let silenced = try #require(
            try push(&e, #"{"aps":{"alert":"x","sound":"default"}}"#, id: "s").presentations.first)
        #expect(silenced.silencedBy == "Do Not Disturb" && silenced.sound == nil && silenced.alertStyle == .none)
        #expect(silenced.inList && !silenced.onLockScreen && !silenced.wakesScreen)
        #expect(PresentationSummary(silenced).line == "x (silenced by Do Not Disturb, sound none)")
        #expect(e.apps[app]!.delivered.first?.placement?.silencedBy == "Do Not Disturb")
        let breaks = try #require(
            try push(&e, #"{"aps":{"alert":"y","sound":"default","interruption-level":"time-sensitive"}}"#, id: "t")
                .presentations.first)
        #expect(breaks.silencedBy == nil && breaks.sound == .default && breaks.alertStyle == .banner)
        // An allowed app is not silenced.
        let allowed = try e.handle(
            .remoteNotification(
                app: "friend", payload: try Payload(json: #"{"aps":{"alert":"hi","sound":"default"}}"#), apnsID: "f",
                collapseID: nil), now: t0)
        #expect(allowed.presentations.first?.silencedBy == nil && allowed.presentations.first?.sound == .default)
        // A Focus that does not let time-sensitive ones through silences them too.
        dnd.allowsTimeSensitive = false
        _ = try e.handle(.focus(.put(dnd)), now: t0)
        let held = try #require(
            try push(&e, #"{"aps":{"alert":"z","interruption-level":"time-sensitive"}}"#, id: "u").presentations.first)
        #expect(held.silencedBy == "Do Not Disturb")
        #expect(try e.handle(.focus(.turnOff), now: t0) == [.focusChanged(nil)])
        #expect(try push(&e, #"{"aps":{"alert":"w"}}"#, id: "w").presentations.first?.silencedBy == nil)
    }

    @Test func aScheduledFocusTurnsItselfOnAndOffOnTheClock() throws {
        var e = try engine(zone: "Europe/Paris", now: t0)
        var sleep = try #require(e.device.focus.mode("sleep"))
        sleep.schedules = [try FocusSchedule(start: DayTime("22:00"), end: DayTime("07:00"))]
        _ = try e.handle(.focus(.put(sleep)), now: t0)
        #expect(e.activeFocus(at: t0) == nil)
        let start = at("2025-01-06T21:00:00Z")  // 22:00 in Paris
        #expect(e.nextWake == start)
        let on = e.advance(to: start)
        #expect(
            on == [
                .focusChanged(
                    ActiveFocus(identifier: "sleep", name: "Sleep", scheduled: true, until: at("2025-01-07T06:00:00Z")))
            ])
        #expect(e.nextWake == at("2025-01-07T06:00:00Z"))
        #expect(try push(&e, #"{"aps":{"alert":"x"}}"#, id: "n", at: start).presentations.first?.silencedBy == "Sleep")
        // Turned off by hand, it stays off until its interval ends, then the schedule decides again.
        #expect(try e.handle(.focus(.turnOff), now: start.addingTimeInterval(60)) == [.focusChanged(nil)])
        #expect(e.activeFocus(at: at("2025-01-07T05:00:00Z")) == nil)
        #expect(e.advance(to: at("2025-01-07T06:00:00Z")).isEmpty)
        #expect(e.advance(to: at("2025-01-07T21:00:00Z")).count == 1)
        #expect(e.activeFocus(at: at("2025-01-07T21:00:01Z"))?.identifier == "sleep")
    }

    @Test func aFocusTurnedOnForAWhileGoesOffAtItsTime() throws {
        var e = try engine(now: t0)
        _ = try e.handle(.focus(.turnOn("work", until: t0.addingTimeInterval(3600))), now: t0)
        #expect(e.nextWake == t0.addingTimeInterval(3600))
        #expect(e.advance(to: t0.addingTimeInterval(3600)) == [.focusChanged(nil)])
        #expect(e.device.focus.manual == nil)
        #expect(throws: NotificationError.self) { try e.handle(.focus(.turnOn("gym", until: nil)), now: t0) }
    }

    // MARK: - Item 4: Scheduled Summary

    @Test func aSummaryHoldsAndDeliversByRelevanceThenTime() throws {
        var e = try engine(zone: "Europe/Paris", now: t0)
        var summary = SummarySettings()
        summary.enabled = true
        summary.times = [try DayTime("08:00"), try DayTime("18:00")]
        summary.apps = [app]
        _ = try e.handle(.updateSummary(summary), now: t0)
        let first = try push(
            &e, #"{"aps":{"alert":"low","sound":"default","badge":1,"relevance-score":0.2}}"#, id: "low")
        guard case .held(_, let n, let until) = first.first else { Issue.record("\(first)"); return }
        #expect(n.identifier == "low" && until == at("2025-01-06T17:00:00Z"))  // 18:00 in Paris
        #expect(first.contains(.setBadge(app: app, badge: 1)), "the badge is not held")
        _ = try push(&e, #"{"aps":{"alert":"high","relevance-score":0.9}}"#, id: "high", at: t0.addingTimeInterval(60))
        _ = try push(
            &e, #"{"aps":{"alert":"later","relevance-score":0.2}}"#, id: "later", at: t0.addingTimeInterval(120))
        // Time-sensitive and critical ones are not held.
        let urgent = try push(&e, #"{"aps":{"alert":"now","interruption-level":"time-sensitive"}}"#, id: "urgent")
        #expect(urgent.presentations.first?.alertStyle == .banner)
        #expect(e.apps[app]!.delivered.map(\.identifier) == ["urgent"] && e.apps[app]!.held?.count == 3)
        #expect(e.nextWake == at("2025-01-06T17:00:00Z"))
        let delivered = e.advance(to: at("2025-01-06T17:00:00Z"))
        guard case .summaryDelivered(let s, let items) = delivered.first, delivered.count == 1 else {
            Issue.record("\(delivered)"); return
        }
        #expect(s.title == "Your Evening Summary")
        #expect(items.map(\.notification.identifier) == ["high", "later", "low"])
        #expect(e.apps[app]!.held?.isEmpty == true)
        #expect(Set(e.apps[app]!.delivered.map(\.identifier)) == ["urgent", "high", "later", "low"])
        #expect(e.apps[app]!.delivered.filter { $0.placement?.summaryID == s.id }.count == 3)
        #expect(e.summaries.map(\.id) == [s.id] && e.nextWake == nil)
        // Each opens as itself: answering one takes it out of the summary.
        _ = try e.handle(
            .respond(app: app, identifier: "high", actionIdentifier: StandardAction.dismissIdentifier, text: nil),
            now: at("2025-01-06T17:01:00Z"))
        #expect(e.summaries.first?.items.map(\.identifier) == ["later", "low"])
    }

    @Test func turningTheSummaryOffDeliversWhatWaited() throws {
        var e = try engine(now: t0)
        var summary = SummarySettings()
        summary.enabled = true
        summary.apps = [app]
        _ = try e.handle(.updateSummary(summary), now: t0)
        _ = try push(&e, #"{"aps":{"alert":"x"}}"#, id: "x")
        summary.enabled = false
        let actions = try e.handle(.updateSummary(summary), now: t0)
        guard case .summaryDelivered(_, let items) = actions.first else { Issue.record("\(actions)"); return }
        #expect(items.map(\.notification.identifier) == ["x"] && e.heldNotifications.isEmpty)
        summary.times = []
        #expect(throws: NotificationError.self) { try e.handle(.updateSummary(summary), now: t0) }
    }

    @Test func heldNotificationsSurviveARestartAndAMissedSummaryIsDeliveredOnce() throws {
        var e = try engine(now: t0)
        var summary = SummarySettings()
        summary.enabled = true
        summary.apps = [app]
        _ = try e.handle(.updateSummary(summary), now: t0)
        _ = try push(&e, #"{"aps":{"alert":"x"}}"#, id: "x")
        var restarted = DeviceEngine(
            policy: FixedDecision(allow: true), records: Array(e.apps.values), device: e.device)
        // Down past 18:00 and 08:00: one summary at the start.
        let actions = try restarted.handle(.start, now: at("2025-01-07T09:00:00Z"))
        #expect(actions.filter { if case .summaryDelivered = $0 { true } else { false } }.count == 1)
        #expect(restarted.apps[app]!.delivered.map(\.identifier) == ["x"])
    }

    // MARK: - Item 5: provisional authorization

    @Test func provisionalIsQuietAndKeepOrTurnOffDecides() throws {
        var e = try engine(options: [.alert, .sound, .badge, .provisional], now: t0)
        let quiet = try #require(
            try push(&e, #"{"aps":{"alert":"x","sound":"default","badge":3}}"#, id: "q").presentations.first)
        #expect(
            quiet.inList && !quiet.onLockScreen && quiet.alertStyle == .none && quiet.sound == nil && quiet.badge == nil
        )
        #expect(
            quiet.notification.placement?.quiet == true
                && PresentationSummary(quiet).line == "x (delivered quietly, sound none)")
        var prominent = e
        let changed = try prominent.handle(.provisionalChoice(app: app, choice: .deliverProminently), now: t0)
        guard case .settingsChanged(_, let s) = changed.first else { Issue.record("\(changed)"); return }
        #expect(s.authorizationStatus == .authorized && s.alertStyle == .banner && s.soundSetting == .enabled)
        #expect(prominent.apps[app]!.delivered.first?.placement?.quiet == false)
        #expect(
            try push(&prominent, #"{"aps":{"alert":"y","sound":"default"}}"#, id: "y").presentations.first?.sound
                == .default)
        var quietly = e
        _ = try quietly.handle(.provisionalChoice(app: app, choice: .deliverQuietly), now: t0)
        let kept = quietly.apps[app]!.settings
        #expect(
            kept.authorizationStatus == .authorized && kept.alertStyle == .none
                && kept.notificationCenterSetting == .enabled)
        #expect(kept.soundSetting == .disabled && kept.lockScreenSetting == .disabled)
        _ = try e.handle(.provisionalChoice(app: app, choice: .turnOff), now: t0)
        #expect(e.apps[app]!.settings.authorizationStatus == .denied)
        #expect(throws: NotificationError.self) {
            try e.handle(.provisionalChoice(app: app, choice: .turnOff), now: t0)
        }
    }

    // MARK: - Item 6: grouping

    @Test func grouping() throws {
        var e = try engine(now: t0)
        _ = try push(&e, #"{"aps":{"thread-id":"anna","alert":{"body":"1","summary-arg":"Anna"}}}"#, id: "1")
        _ = try push(
            &e, #"{"aps":{"thread-id":"anna","alert":{"body":"2","summary-arg":"Anna","summary-arg-count":2}}}"#,
            id: "2")
        _ = try push(&e, #"{"aps":{"thread-id":"anna","alert":{"body":"3"}}}"#, id: "3")
        _ = try push(&e, #"{"aps":{"alert":"solo"}}"#, id: "4")
        let automatic = NotificationStack.stacks(app: app, e.apps[app]!.delivered, grouping: .automatic)
        #expect(automatic.map(\.thread) == ["", "anna"] && automatic.map(\.count) == [1, 3])
        #expect(automatic[1].line == "and 3 more from Anna" && automatic[0].line == nil)
        let byApp = NotificationStack.stacks(app: app, e.apps[app]!.delivered, grouping: .byApp)
        #expect(byApp.count == 1 && byApp[0].line == "and 4 more from Anna")
        #expect(NotificationStack.stacks(app: app, e.apps[app]!.delivered, grouping: .off).count == 4)
        _ = try e.handle(.setGrouping(app: app, grouping: .off), now: t0)
        #expect(e.apps[app]!.settings.grouping == .off)
        let unnamed = NotificationStack.line(
            e.apps[app]!.delivered.filter { $0.identifier != "1" && $0.identifier != "2" })
        #expect(unnamed == "and 1 more notification")
        // A count as large as a push may give, with another after it: counted up to Int.max, not past.
        _ = try push(
            &e, #"{"aps":{"thread-id":"anna","alert":{"body":"5","summary-arg-count":9223372036854775807}}}"#,
            id: "5")
        _ = try push(&e, #"{"aps":{"thread-id":"anna","alert":{"body":"6"}}}"#, id: "6")
        let saturated = NotificationStack.stacks(app: app, e.apps[app]!.delivered, grouping: .automatic)
        #expect(saturated.first { $0.thread == "anna" }?.line == "and \(Int.max) more from Anna")
    }

    @Test func targetContentIDReachesTheAppWithTheResponse() throws {
        var e = try engine(now: t0)
        _ = try push(&e, #"{"aps":{"alert":"x","target-content-id":"chat-42"}}"#, id: "t")
        let actions = try e.handle(
            .respond(app: app, identifier: "t", actionIdentifier: StandardAction.defaultIdentifier, text: nil), now: t0)
        let told = actions.compactMap { if case .tellApp(_, let r) = $0 { r } else { nil } }
        #expect(told.first?.notification.request.content.targetContentIdentifier == "chat-42")
    }

    // MARK: - Item 7: the seeds' edges

    @Test func authenticationIsEnforcedByTheEngineOnALockedDevice() throws {
        var e = try engine(now: t0)
        let trash = try NotificationAction(
            identifier: "trash", title: "Trash", options: [.destructive, .authenticationRequired])
        let reply = try NotificationAction(identifier: "reply", title: "Reply", options: [.foreground])
        let archive = try NotificationAction(identifier: "archive", title: "Archive")
        _ = try e.handle(
            .setCategories(
                app: app, categories: [try NotificationCategory(identifier: "MAIL", actions: [trash, reply, archive])]),
            now: t0)
        for id in ["m1", "m2", "m3", "m4"] {
            _ = try push(&e, #"{"aps":{"alert":"mail","category":"MAIL"}}"#, id: id)
        }
        #expect(try e.handle(.setLocked(true), now: t0) == [.lockChanged(locked: true)])
        for (id, action) in [("m1", "trash"), ("m2", "reply"), ("m3", StandardAction.defaultIdentifier)] {
            do {
                _ = try e.handle(.respond(app: app, identifier: id, actionIdentifier: action, text: nil), now: t0)
                Issue.record("\(action) ran on a locked device without the passcode")
            } catch {
                #expect(error.code == .passcodeRequired && error.message.contains("needs the passcode"))
            }
        }
        #expect(e.apps[app]!.delivered.count == 4, "a refused answer changes nothing")
        // A background action needs no authentication.
        _ = try e.handle(.respond(app: app, identifier: "m4", actionIdentifier: "archive", text: nil), now: t0)
        // With the passcode: Trash runs and the device stays locked (seed 000).
        let trashed = try e.handle(
            .respond(app: app, identifier: "m1", actionIdentifier: "trash", text: nil, authenticated: true), now: t0)
        #expect(e.locked && !trashed.contains(.lockChanged(locked: false)))
        #expect(trashed.contains { if case .tellApp = $0 { true } else { false } })
        // A foreground action brings the app forward: the device unlocks.
        let replied = try e.handle(
            .respond(app: app, identifier: "m2", actionIdentifier: "reply", text: nil, authenticated: true), now: t0)
        #expect(!e.locked && replied.contains(.lockChanged(locked: false)))
    }

    @Test func hasActionFalseOnlyDismissesAndAlertActionLabelsTheSlider() throws {
        var e = try engine(now: t0)
        let legacy = LegacyNotification(
            identifier: "ok", alertBody: "Tea is ready", alertAction: "Show me", hasAction: false, soundName: "default")
        let shown = try e.handle(.addLegacy(app: app, notification: legacy), now: t0)
        #expect(PresentationSummary(try #require(shown.presentations.first)).line.contains("no action"))
        do {
            _ = try e.handle(
                .respond(app: app, identifier: "ok", actionIdentifier: StandardAction.defaultIdentifier, text: nil),
                now: t0)
            Issue.record("a notification without an action opened the app")
        } catch { #expect(error.message.contains("hasAction false")) }
        let ok = try e.handle(
            .respond(app: app, identifier: "ok", actionIdentifier: StandardAction.dismissIdentifier, text: nil), now: t0
        )
        #expect(!ok.contains { if case .launchApp = $0 { true } else { false } })
        var content = NotificationContent(body: "x")
        content.actionLocKey = "Show me"
        #expect(DeviceAPI.slider(content) == "slide to show me")
        content.hasAction = false
        #expect(DeviceAPI.slider(content) == "slide to unlock")
        #expect(DeviceAPI.slider(NotificationContent(body: "x")) == "slide to view")
        // A push's "action-loc-key": null is the same.
        let payload = try Payload(json: #"{"aps":{"alert":{"body":"x","action-loc-key":null}}}"#)
        #expect(NotificationContent(payload: payload).opensApp == false)
    }

    @Test func theLegacyScheduleIsComputedOnTheDevicesClock() throws {
        var e = try engine(zone: "America/New_York", now: t0)
        // A past fire date delivers at once.
        let past = LegacyNotification(
            identifier: "past", schedule: LegacySchedule(fireDate: t0.addingTimeInterval(-60)), alertBody: "late")
        #expect(try e.handle(.addLegacy(app: app, notification: past), now: t0).presentations.count == 1)
        // A daily repeat at a wall time in floating time: its next date is the device's, after now.
        let daily = LegacyNotification(
            identifier: "daily",
            schedule: LegacySchedule(
                fireDate: at("2025-01-01T14:00:00Z"), timeZone: TimeZone(identifier: "America/New_York"),
                repeatInterval: .day),
            alertBody: "9 am", applicationIconBadgeNumber: 0)
        _ = try e.handle(.addLegacy(app: app, notification: daily), now: t0)
        #expect(e.apps[app]!.pending["daily"]?.nextFireDate == at("2025-01-06T14:00:00Z"))
        #expect(e.apps[app]!.pending["daily"]?.request.content.badge == nil, "0 leaves the badge alone")
        // Cancelling takes it off the screen too, pending or shown.
        let cancelled = try e.handle(.cancelLegacy(app: app, identifiers: ["past", "daily"]), now: t0)
        #expect(cancelled == [.removeFromScreen(app: app, identifiers: ["past"])])
        #expect(e.apps[app]!.pending.isEmpty && e.apps[app]!.delivered.isEmpty)
    }

    @Test func aRegionThatKeepsFiringFiresOnEveryEntry() throws {
        var e = try engine(now: t0)
        _ = try e.handle(.setLocationAuthorization(app: app, allowed: true), now: t0)
        let region = try CircularRegion(
            identifier: "home", latitude: 48.85, longitude: 2.35, radius: 200, notifyOnExit: false)
        let legacy = LegacyNotification(
            identifier: "home", schedule: LegacySchedule(region: region, regionTriggersOnce: false), alertBody: "Home")
        _ = try e.handle(.addLegacy(app: app, notification: legacy), now: t0)
        let out = LocationFix(latitude: 48.80, longitude: 2.35)
        let inside = LocationFix(latitude: 48.85, longitude: 2.35)
        var fired = 0
        for (k, fix) in [out, inside, out, inside, out, inside].enumerated() {
            fired += try e.handle(.locationFix(fix), now: t0.addingTimeInterval(Double(k))).presentations.count
        }
        #expect(fired == 3 && e.apps[app]!.pending["home"] != nil)
    }

    @Test func aHeldAndAListedNotificationNeverShareAnIdentifier() throws {
        var e = try engine(now: t0)
        var summary = SummarySettings()
        summary.enabled = true
        summary.apps = [app]
        _ = try e.handle(.updateSummary(summary), now: t0)
        func collapsed(_ json: String) throws -> [DeviceAction] {
            try e.handle(
                .remoteNotification(
                    app: app, payload: try Payload(json: json), apnsID: UUID().uuidString, collapseID: "score"),
                now: t0)
        }
        _ = try collapsed(#"{"aps":{"alert":"1-0"}}"#)
        #expect(e.apps[app]!.held?.map(\.identifier) == ["score"])
        // The newer one is time-sensitive: listed at once, and the held copy is gone.
        _ = try collapsed(#"{"aps":{"alert":"2-0","interruption-level":"time-sensitive"}}"#)
        #expect(e.apps[app]!.held?.isEmpty == true && e.apps[app]!.delivered.map(\.identifier) == ["score"])
        // And back: a held one takes the listed one off the screen.
        let held = try collapsed(#"{"aps":{"alert":"2-1"}}"#)
        #expect(held.contains(.removeFromScreen(app: app, identifiers: ["score"])))
        #expect(e.apps[app]!.delivered.isEmpty && e.apps[app]!.held?.count == 1)
    }

    @Test func aLocalRequestWithACriticalSoundIsCritical() throws {
        var e = try engine(options: [.alert, .sound, .criticalAlert], now: t0)
        _ = try e.handle(.focus(.turnOn("sleep", until: nil)), now: t0)
        let request = NotificationRequest(
            identifier: "alarm", content: content("Wake up", sound: .critical(name: nil, volume: 0.5)))
        let p = try #require(try e.handle(.add(app: app, request: request), now: t0).presentations.first)
        #expect(p.level == .critical && p.silencedBy == nil && p.sound == .critical(name: nil, volume: 0.5))
    }

    @Test func aForegroundAppsUnansweredNotificationTakesNoOnesPlace() throws {
        var e = try engine(now: t0)
        e.configuration.deliveredLimit = 2
        for id in ["a", "b"] { _ = try push(&e, #"{"aps":{"alert":"x"}}"#, id: id) }
        _ = try e.handle(.appStateChanged(app: app, state: .foreground), now: t0)
        _ = try push(&e, #"{"aps":{"alert":"y"}}"#, id: "c")
        #expect(e.apps[app]!.delivered.map(\.identifier) == ["c", "b", "a"], "kept until the answer")
        _ = try e.handle(.willPresentAnswered(app: app, identifier: "c", options: [.banner]), now: t0)
        #expect(e.apps[app]!.delivered.map(\.identifier) == ["b", "a"], "not listed: nobody lost")
    }

    @Test func aRemovalWhoseWriteFailedDoesNotDeleteTheAppInstalledAgain() throws {
        var e = try engine(now: t0)
        _ = try push(&e, #"{"aps":{"alert":"x"}}"#, id: "p1")
        _ = e.takeChanges()
        _ = try e.handle(.removeApp(app), now: t0)
        let removal = e.takeChanges()  // its write fails below…
        _ = try e.handle(.installApp(InstalledApp(bundleID: app)), now: t0)
        _ = try e.handle(.requestAuthorization(app: app, options: [.alert]), now: t0)
        _ = try push(&e, #"{"aps":{"alert":"y"}}"#, id: "p2")
        _ = e.takeChanges()  // …after this one was written
        e.restore(removal)
        let retry = e.takeChanges()
        #expect(retry.removed == [app] && retry.records.map(\.app.bundleID) == [app])
        #expect(retry.notifications.map(\.identifier) == ["p2"] && retry.notifications.first?.notification != nil)
    }

    // MARK: - Item 9: a bounded Notification Center

    @Test func notificationCenterKeepsTheNewestPerAppAndMarksOnlyWhatChanged() throws {
        var e = try engine(now: t0)
        e.configuration.deliveredLimit = 5
        _ = e.takeChanges()
        for k in 0..<8 { _ = try push(&e, #"{"aps":{"alert":"n"}}"#, id: "p\(k)") }
        #expect(e.apps[app]!.delivered.map(\.identifier) == ["p7", "p6", "p5", "p4", "p3"])
        let changes = e.takeChanges()
        #expect(changes.records.isEmpty, "a push without a badge leaves the app's record alone")
        #expect(Set(changes.notifications.filter { $0.notification == nil }.map(\.identifier)) == ["p0", "p1", "p2"])
        #expect(changes.taken == (0..<8).map { "p\($0)" })
        _ = try push(&e, #"{"aps":{"alert":"n"}}"#, id: "p8")
        let next = e.takeChanges()
        #expect(next.notifications.map(\.identifier).sorted() == ["p3", "p8"] && next.records.isEmpty)
    }
}
