import Foundation
import HeraldCore
import Testing

@testable import HeraldDevice

@Suite struct AuthorizationTests {
    @Test func firstRequestAsksLaterRequestsReturnTheStoredAnswer() throws {
        let policy = CountingPolicy(allow: false)
        var e = DeviceEngine(policy: policy)
        let now = at("2025-01-01T00:00:00Z")
        _ = try e.handle(.installApp(InstalledApp(bundleID: "a")), now: now)
        let first = try e.handle(.requestAuthorization(app: "a", options: [.alert]), now: now)
        let second = try e.handle(.requestAuthorization(app: "a", options: [.alert, .badge]), now: now)
        #expect(policy.timesAsked == 1)
        guard case .authorizationResult(_, let granted, let settings) = second.first else {
            Issue.record("no result"); return
        }
        #expect(!granted && settings.authorizationStatus == .denied)
        #expect(first == second)
    }

    @Test func theUsersAnswerInTheDialogIsRecordedInsteadOfThePolicysAndAskedOnce() throws {
        let policy = CountingPolicy(allow: false)
        var e = DeviceEngine(policy: policy)
        let now = at("2025-01-01T00:00:00Z")
        _ = try e.handle(.installApp(InstalledApp(bundleID: "a")), now: now)
        // A dialog is needed for a first request, not for a quiet provisional one.
        #expect(e.asksUser("a", for: [.alert, .sound]))
        #expect(!e.asksUser("a", for: [.alert, .provisional]))
        #expect(!e.asksUser("unknown", for: [.alert]))
        let answered = try e.handle(
            .authorizationAnswered(app: "a", options: [.alert, .sound], granted: true), now: now)
        #expect(policy.timesAsked == 0)
        #expect(answered == [.authorizationResult(app: "a", granted: true, settings: e.apps["a"]!.settings)])
        #expect(e.apps["a"]?.settings.soundSetting == .enabled && e.apps["a"]?.settings.badgeSetting == .disabled)
        // Decided: no dialog again, and a later request gets the same answer.
        #expect(!e.asksUser("a", for: [.alert, .badge]))
        let later = try e.handle(.requestAuthorization(app: "a", options: [.alert, .badge]), now: now)
        #expect(later == answered && policy.timesAsked == 0)
    }

    @Test func provisionalNeverAsks() throws {
        let policy = CountingPolicy(allow: false)
        var e = DeviceEngine(policy: policy)
        let now = at("2025-01-01T00:00:00Z")
        _ = try e.handle(.installApp(InstalledApp(bundleID: "a")), now: now)
        let result = try e.handle(.requestAuthorization(app: "a", options: [.alert, .provisional]), now: now)
        #expect(policy.timesAsked == 0)
        #expect(result == [.authorizationResult(app: "a", granted: true, settings: e.apps["a"]!.settings)])
        // Provisional goes to the list only: no banner, sound or badge.
        let actions = try e.handle(
            .add(app: "a", request: NotificationRequest(identifier: "n", content: content("hi", badge: 2))), now: now)
        let shown = try #require(actions.presentations.first)
        #expect(shown.inList && shown.alertStyle == .none && shown.sound == nil && shown.badge == nil)
        #expect(e.apps["a"]?.delivered.first?.identifier == "n" && e.apps["a"]?.badge == 0)
        // A later full request does ask the user.
        _ = try e.handle(.requestAuthorization(app: "a", options: [.alert]), now: now)
        #expect(policy.timesAsked == 1)
    }

    @Test func userChangesSettingsAndTheSystemEnforcesThem() throws {
        var e = try engine()
        var settings = e.apps["com.example.app"]!.settings
        settings.soundSetting = .disabled
        settings.badgeSetting = .disabled
        _ = try e.handle(.updateSettings(app: "com.example.app", settings: settings), now: at("2025-01-01T00:00:00Z"))
        let actions = try e.handle(
            .add(
                app: "com.example.app", request: NotificationRequest(identifier: "n", content: content("x", badge: 5))),
            now: at("2025-01-01T00:00:00Z"))
        let p = try #require(actions.presentations.first)
        #expect(p.sound == nil && p.badge == nil && p.alertStyle == .banner && p.inList)
        #expect(e.apps["com.example.app"]!.badge == 0)
    }

    @Test func deniedAppCannotAdd() throws {
        var e = try engine(allow: false)
        #expect(throws: NotificationError.self) {
            try e.handle(
                .add(app: "com.example.app", request: NotificationRequest(identifier: "n", content: content("x"))),
                now: .now)
        }
        do {
            _ = try e.handle(
                .add(app: "com.example.app", request: NotificationRequest(identifier: "n", content: content("x"))),
                now: .now)
        } catch { #expect(error.code == .notificationsNotAllowed) }
    }
}

@Suite struct SchedulingTests {
    let app = "com.example.app"
    let t0 = at("2025-01-01T00:00:00Z")

    func interval(_ s: Double, repeats: Bool = false) throws -> NotificationTrigger {
        .timeInterval(try TimeIntervalTrigger(interval: s, repeats: repeats))
    }

    @Test func addReplaceRemoveAndFire() throws {
        var e = try engine()
        _ = try e.handle(
            .add(
                app: app,
                request: NotificationRequest(identifier: "a", content: content("one"), trigger: try interval(60))),
            now: t0)
        _ = try e.handle(
            .add(
                app: app,
                request: NotificationRequest(identifier: "a", content: content("two"), trigger: try interval(120))),
            now: t0)
        #expect(e.apps[app]!.pending.count == 1)
        #expect(e.nextWake == t0.addingTimeInterval(120))
        #expect(e.advance(to: t0.addingTimeInterval(119)).isEmpty)
        let fired = e.advance(to: t0.addingTimeInterval(120))
        #expect(fired.presentations.map(\.notification.request.content.body) == ["two"])
        #expect(e.apps[app]!.pending.isEmpty, "a one-shot leaves the pending list")
        _ = try e.handle(
            .add(
                app: app,
                request: NotificationRequest(identifier: "b", content: content("b"), trigger: try interval(60))),
            now: t0)
        _ = try e.handle(.removePending(app: app, identifiers: ["b"]), now: t0)
        #expect(e.advance(to: t0.addingTimeInterval(3600)).isEmpty && e.scheduler.count == 0)
    }

    @Test func repeatingStaysPendingAndMissedRepetitionsFireOnceLate() throws {
        var e = try engine()
        _ = try e.handle(
            .add(
                app: app,
                request: NotificationRequest(
                    identifier: "r", content: content("tick"), trigger: try interval(60, repeats: true))), now: t0)
        #expect(e.advance(to: t0.addingTimeInterval(60)).presentations.count == 1)
        #expect(e.apps[app]!.pending["r"] != nil)
        // The device is off for ten minutes: one late delivery, not ten.
        var restarted = DeviceEngine(policy: FixedDecision(allow: true), records: Array(e.apps.values))
        let actions = try restarted.handle(.start, now: t0.addingTimeInterval(60 + 600 + 5))
        #expect(actions.presentations.count == 1)
        #expect(actions.presentations.first?.notification.late == true)
        #expect(restarted.nextWake == t0.addingTimeInterval(60 + 660))
    }

    @Test func pendingLimitKeepsTheSoonestAndReportsTheRest() throws {
        var e = try engine()
        e.configuration.pendingLimit = 64
        // A repeating request counts once, however often it fires.
        _ = try e.handle(
            .add(
                app: app,
                request: NotificationRequest(
                    identifier: "every-minute", content: content("r"), trigger: try interval(60, repeats: true))),
            now: t0)
        var dropped: [String] = []
        for i in (1...70).reversed() {
            let actions = try e.handle(
                .add(
                    app: app,
                    request: NotificationRequest(
                        identifier: "n\(i)", content: content("\(i)"), trigger: try interval(Double(i * 100)))), now: t0
            )
            for case .pendingDropped(_, let ids) in actions { dropped += ids }
        }
        let pending = e.apps[app]!.pending
        #expect(pending.count == 64)
        #expect(pending["every-minute"] != nil)
        #expect(Set(dropped) == Set((64...70).map { "n\($0)" }))
        #expect(Set(e.apps[app]!.dropped.map(\.request.identifier)) == Set(dropped))
        #expect(e.scheduler.count == 64)
    }

    @Test func calendarTriggerInThePastIsRejected() throws {
        var e = try engine()
        let trigger = NotificationTrigger.calendar(try CalendarTrigger(components: .init(year: 2020, month: 1, day: 1)))
        do {
            _ = try e.handle(
                .add(
                    app: app, request: NotificationRequest(identifier: "old", content: content("x"), trigger: trigger)),
                now: t0)
            Issue.record("accepted")
        } catch { #expect(error.code == .notificationInvalidNoDate) }
        do {
            _ = try e.handle(
                .add(app: app, request: NotificationRequest(identifier: "empty", content: NotificationContent())),
                now: t0)
            Issue.record("accepted")
        } catch { #expect(error.code == .notificationInvalidNoContent) }
    }

    @Test func floatingTriggersFollowTheDevicesZone() throws {
        var e = try engine(zone: "America/New_York")
        let nine = NotificationTrigger.calendar(
            try CalendarTrigger(components: .init(hour: 9, minute: 0), repeats: true))
        _ = try e.handle(
            .add(app: app, request: NotificationRequest(identifier: "nine", content: content("9"), trigger: nine)),
            now: t0)
        #expect(e.nextWake == at("2025-01-01T14:00:00Z"))
        _ = try e.handle(.timeZoneChanged(TimeZone(identifier: "Asia/Tokyo")!), now: t0)
        #expect(e.nextWake == at("2025-01-02T00:00:00Z"), "09:00 in Tokyo")
    }

    @Test func aFloatingOneShotWhoseTimeHasPassedInTheNewZoneIsDeliveredNotStranded() throws {
        // 09:00 on 1 January 2025, floating; added in Los Angeles at 08:00 (16:00 UTC).
        let now = at("2025-01-01T16:00:00Z")
        var e = try engine(zone: "America/Los_Angeles", now: now)
        let trigger = NotificationTrigger.calendar(
            try CalendarTrigger(components: .init(year: 2025, month: 1, day: 1, hour: 9), repeats: false))
        _ = try e.handle(
            .add(app: app, request: NotificationRequest(identifier: "nine", content: content("9"), trigger: trigger)),
            now: now)
        #expect(e.nextWake == at("2025-01-01T17:00:00Z"))
        // The device flies to New York, where it is already 11:00: 09:00 has passed there.
        _ = try e.handle(.timeZoneChanged(TimeZone(identifier: "America/New_York")!), now: now)
        #expect(e.nextWake == now)
        #expect(e.advance(to: now).presentations.map(\.notification.identifier) == ["nine"])
        #expect(e.apps[app]!.pending.isEmpty && e.nextWake == nil)
    }

    @Test func deliveredAgainMovesToTopAndBadgeAndRemoval() throws {
        var e = try engine()
        for id in ["a", "b", "a"] {
            _ = try e.handle(
                .add(app: app, request: NotificationRequest(identifier: id, content: content(id, badge: 3))), now: t0)
        }
        #expect(e.apps[app]!.delivered.map(\.identifier) == ["a", "b"])
        #expect(e.apps[app]!.badge == 3)
        // A notification's badge 0 clears the app's badge; no badge leaves it unchanged.
        _ = try e.handle(
            .add(app: app, request: NotificationRequest(identifier: "c", content: content("c", badge: 0))), now: t0)
        #expect(e.apps[app]!.badge == 0)
        _ = try e.handle(
            .add(app: app, request: NotificationRequest(identifier: "d", content: content("d", badge: 7))), now: t0)
        _ = try e.handle(.add(app: app, request: NotificationRequest(identifier: "e", content: content("e"))), now: t0)
        #expect(e.apps[app]!.badge == 7)
        _ = try e.handle(.removeDelivered(app: app, identifiers: ["c", "d", "e"]), now: t0)
        #expect(try e.handle(.setBadge(app: app, badge: 0), now: t0) == [.setBadge(app: app, badge: 0)])
        #expect(throws: NotificationError.self) { try e.handle(.setBadge(app: app, badge: -1), now: t0) }
        #expect(
            try e.handle(.removeDelivered(app: app, identifiers: ["b"]), now: t0) == [
                .removeFromScreen(app: app, identifiers: ["b"])
            ])
        #expect(e.apps[app]!.delivered.map(\.identifier) == ["a"])
    }
}

@Suite struct PresentationTests {
    let app = "com.example.app"
    let t0 = at("2025-01-01T00:00:00Z")

    @Test func foregroundAsksTheAppAndAppliesOnlyWhatSettingsAllow() throws {
        var e = try engine(options: [.alert, .badge])  // sound not granted
        _ = try e.handle(.appStateChanged(app: app, state: .foreground), now: t0)
        let actions = try e.handle(
            .add(app: app, request: NotificationRequest(identifier: "f", content: content("x", badge: 1))), now: t0)
        #expect(actions.count == 1)
        guard case .askWillPresent(_, let n) = actions.first else { Issue.record("no willPresent"); return }
        let shown = try e.handle(
            .willPresentAnswered(app: app, identifier: n.identifier, options: [.sound, .banner]), now: t0)
        let p = try #require(shown.presentations.first)
        #expect(p.requestedByForegroundApp && p.alertStyle == .banner && p.sound == nil && p.badge == nil)
        // An empty answer keeps it silent.
        _ = try e.handle(.add(app: app, request: NotificationRequest(identifier: "g", content: content("y"))), now: t0)
        #expect(try e.handle(.willPresentAnswered(app: app, identifier: "g", options: []), now: t0).isEmpty)
    }

    /// An app that leaves the foreground, or whose process goes, before it answers: what it was
    /// asked about is presented as for an app in the background, not kept waiting for ever.
    @Test func unansweredWillPresentsArePresentedWhenTheAppLeavesTheForeground() throws {
        var e = try engine(options: [.alert, .badge])
        _ = try e.handle(.appStateChanged(app: app, state: .foreground), now: t0)
        for (id, at) in [("h1", t0), ("h2", t0.addingTimeInterval(1))] {
            let asked = try e.handle(
                .add(app: app, request: NotificationRequest(identifier: id, content: content(id))), now: at)
            guard case .askWillPresent = asked.first else { Issue.record("no willPresent"); return }
        }
        #expect(e.awaitingWillPresent.count == 2)
        let shown = try e.handle(.appStateChanged(app: app, state: .notRunning), now: t0.addingTimeInterval(2))
        #expect(shown.presentations.map(\.notification.identifier) == ["h1", "h2"])
        #expect(shown.presentations.allSatisfy { !$0.requestedByForegroundApp })
        #expect(e.awaitingWillPresent.isEmpty)
        #expect(throws: (any Error).self) {
            try e.handle(.willPresentAnswered(app: app, identifier: "h1", options: [.banner]), now: t0)
        }
        #expect(Set(e.apps[app]!.delivered.map(\.identifier)) == ["h1", "h2"])
    }

    @Test func remoteWithoutRegisteredTypesArrivesSilently() throws {
        var e = DeviceEngine(policy: FixedDecision(allow: true))
        _ = try e.handle(.installApp(InstalledApp(bundleID: app)), now: t0)
        let payload = try Payload(json: #"{"aps":{"alert":"hello","badge":1}}"#)
        let actions = try e.handle(
            .remoteNotification(app: app, payload: payload, apnsID: "id-1", collapseID: nil), now: t0)
        guard case .deliverSilently(_, let n) = actions.first, actions.count == 1 else {
            Issue.record("\(actions)"); return
        }
        #expect(n.isRemote && n.apnsID == "id-1" && e.apps[app]!.badge == 0)
    }

    @Test func contentAvailableWakesTheAppInTheBackground() throws {
        var e = try engine()
        let payload = try Payload(json: #"{"aps":{"content-available":1},"sync":"inbox"}"#)
        let actions = try e.handle(
            .remoteNotification(app: app, payload: payload, apnsID: "w", collapseID: nil), now: t0)
        #expect(actions.count == 2)
        // The launch comes first: the wake is held for the launched app until it connects.
        guard case .launchApp(_, .background, _) = actions[0], case .backgroundWake(_, let n, let budget) = actions[1]
        else {
            Issue.record("\(actions)")
            return
        }
        #expect(budget == 30 && n.request.content.userInfo["sync"] == .string("inbox"))
        #expect(e.apps[app]!.delivered.isEmpty)
    }

    /// `widgets` and `controls` pushes reload the app's widgets or controls and are no notification
    /// (nothing shown, nothing kept, even with an alert in the payload); without `content-changed`
    /// they are refused. A `location` push goes to the app's location query handler, launching the
    /// app in the background when it is not running, whatever the notification settings.
    @Test func widgetsControlsAndLocationPushesAreNoNotifications() throws {
        var e = try engine()
        let changed = try Payload(json: #"{"aps":{"content-changed":true,"alert":"ignored"}}"#)
        for (type, kind) in [(PushType.widgets, ReloadKind.widgets), (.controls, .controls)] {
            let actions = try e.handle(
                .remoteNotification(app: app, payload: changed, apnsID: "r", collapseID: nil, pushType: type), now: t0)
            #expect(actions == [.reloadContent(app: app, kind: kind, apnsID: "r")])
        }
        #expect(e.apps[app]!.delivered.isEmpty)
        let unchanged = try Payload(json: #"{"aps":{}}"#)
        #expect(throws: NotificationError.self) {
            _ = try e.handle(
                .remoteNotification(app: app, payload: unchanged, apnsID: "u", collapseID: nil, pushType: .widgets),
                now: t0)
        }

        let query = try Payload(json: #"{"aps":{},"query":"where"}"#)
        let notRunning = try e.handle(
            .remoteNotification(app: app, payload: query, apnsID: "l1", collapseID: nil, pushType: .location), now: t0)
        guard notRunning.count == 2, case .launchApp(_, .background, _) = notRunning[0],
            case .locationQuery(_, let n) = notRunning[1]
        else {
            Issue.record("\(notRunning)")
            return
        }
        #expect(n.apnsID == "l1" && n.request.content.userInfo["query"] == .string("where"))
        _ = try e.handle(.appStateChanged(app: app, state: .background), now: t0)
        let running = try e.handle(
            .remoteNotification(app: app, payload: query, apnsID: "l2", collapseID: nil, pushType: .location), now: t0)
        #expect(running.count == 1 && running.first.map { if case .locationQuery = $0 { true } else { false } } == true)
        #expect(e.apps[app]!.delivered.isEmpty)
    }

    @Test func remoteLocKeysCategoryCollapseIdAndSound() throws {
        var e = try engine()
        _ = try e.handle(
            .installApp(
                InstalledApp(
                    bundleID: app,
                    localization: LocalizationBundle(tables: ["fr": StringsTable(["INVITE": "%@ vous invite"])]))),
            now: t0)
        e.configuration.preferredLanguages = ["fr"]
        let payload = try Payload(
            json:
                #"{"aps":{"alert":{"loc-key":"INVITE","loc-args":["Ana"]},"sound":"bell.caf","category":"INVITE_CATEGORY"}}"#
        )
        let actions = try e.handle(
            .remoteNotification(app: app, payload: payload, apnsID: "x", collapseID: "game-1"), now: t0)
        let p = try #require(actions.presentations.first)
        #expect(p.notification.request.content.body == "Ana vous invite")
        #expect(p.notification.identifier == "game-1" && p.sound == .named("bell.caf"))
    }

    @Test func mutableContentWaitsForTheExtensionOrItsDeadline() throws {
        var e = try engine()
        let payload = try Payload(json: #"{"aps":{"alert":"encrypted","mutable-content":1}}"#)
        let actions = try e.handle(
            .remoteNotification(app: app, payload: payload, apnsID: "m1", collapseID: nil), now: t0)
        guard case .runServiceExtension(_, _, let deadline) = actions.first else { Issue.record("\(actions)"); return }
        #expect(deadline == t0.addingTimeInterval(30) && e.nextWake == deadline)
        var rewritten = NotificationContent(body: "decrypted")
        rewritten.sound = .default
        let shown = try e.handle(
            .serviceExtensionFinished(app: app, identifier: "m1", content: rewritten), now: t0.addingTimeInterval(2))
        #expect(shown.presentations.first?.notification.request.content.body == "decrypted")
        // No answer in time: the original is shown.
        _ = try e.handle(.remoteNotification(app: app, payload: payload, apnsID: "m2", collapseID: nil), now: t0)
        #expect(e.advance(to: t0.addingTimeInterval(29)).isEmpty)
        #expect(
            e.advance(to: t0.addingTimeInterval(30)).presentations.first?.notification.request.content.body
                == "encrypted")
    }
}

@Suite struct ResponseTests {
    let app = "com.example.app"
    let t0 = at("2025-01-01T00:00:00Z")

    func engineWithTimer() throws -> DeviceEngine {
        var e = try engine()
        // Seed 001: TIMER_EXPIRED with SNOOZE (background) and STOP (foreground, destructive); a reply action.
        let snooze = try NotificationAction(identifier: "SNOOZE_ACTION", title: "Snooze")
        let stop = try NotificationAction(
            identifier: "STOP_ACTION", title: "Stop", options: [.foreground, .destructive])
        let reply = try NotificationAction(
            identifier: "REPLY", title: "Reply", textInput: TextInput(buttonTitle: "Send"))
        _ = try e.handle(
            .setCategories(
                app: app,
                categories: [
                    try NotificationCategory(identifier: "TIMER_EXPIRED", actions: [snooze, stop]),
                    try NotificationCategory(identifier: "MESSAGE", actions: [reply], options: [.customDismissAction]),
                ]), now: t0)
        for (id, category) in [("timer", "TIMER_EXPIRED"), ("msg", "MESSAGE"), ("plain", "")] {
            _ = try e.handle(
                .add(app: app, request: NotificationRequest(identifier: id, content: content(id, category: category))),
                now: t0)
        }
        return e
    }

    @Test func categoryActionsArePresented() throws {
        var e = try engineWithTimer()
        let actions = try e.handle(
            .add(
                app: app,
                request: NotificationRequest(identifier: "t2", content: content("t", category: "TIMER_EXPIRED"))),
            now: t0)
        #expect(actions.presentations.first?.actions.map(\.identifier) == ["SNOOZE_ACTION", "STOP_ACTION"])
        let unknown = try e.handle(
            .add(app: app, request: NotificationRequest(identifier: "t3", content: content("t", category: "NOPE"))),
            now: t0)
        #expect(unknown.presentations.first?.actions == [])
    }

    @Test func defaultActionLaunchesANotRunningAppWithTheNotification() throws {
        var e = try engineWithTimer()
        let actions = try e.handle(
            .respond(app: app, identifier: "plain", actionIdentifier: StandardAction.defaultIdentifier, text: nil),
            now: t0)
        guard case .launchApp(_, .foreground, let options?) = actions[1] else { Issue.record("\(actions)"); return }
        #expect(options.identifier == "plain")
        guard case .tellApp(_, let response) = actions[2] else { Issue.record("\(actions)"); return }
        #expect(response.actionIdentifier == StandardAction.defaultIdentifier)
        #expect(e.apps[app]!.delivered.map(\.identifier) == ["msg", "timer"])
    }

    @Test func snoozeRunsInTheBackgroundStopBringsTheAppForward() throws {
        var e = try engineWithTimer()
        _ = try e.handle(.appStateChanged(app: app, state: .background), now: t0)
        let snooze = try e.handle(
            .respond(app: app, identifier: "timer", actionIdentifier: "SNOOZE_ACTION", text: nil), now: t0)
        #expect(snooze.count == 2)  // removed from screen, app told; no launch, no bring-forward
        _ = try e.handle(
            .add(
                app: app,
                request: NotificationRequest(identifier: "timer", content: content("again", category: "TIMER_EXPIRED"))),
            now: t0)
        let stop = try e.handle(
            .respond(app: app, identifier: "timer", actionIdentifier: "STOP_ACTION", text: nil), now: t0)
        #expect(stop.contains(.bringToForeground(app: app)))
        _ = try e.handle(.appStateChanged(app: app, state: .notRunning), now: t0)
        _ = try e.handle(
            .add(
                app: app,
                request: NotificationRequest(identifier: "timer", content: content("again", category: "TIMER_EXPIRED"))),
            now: t0)
        let snoozeCold = try e.handle(
            .respond(app: app, identifier: "timer", actionIdentifier: "SNOOZE_ACTION", text: nil), now: t0)
        guard case .launchApp(_, .background, _) = snoozeCold[1] else { Issue.record("\(snoozeCold)"); return }
    }

    @Test func dismissIsReportedOnlyWithCustomDismissAction() throws {
        var e = try engineWithTimer()
        let plain = try e.handle(
            .respond(app: app, identifier: "timer", actionIdentifier: StandardAction.dismissIdentifier, text: nil),
            now: t0)
        #expect(plain == [.removeFromScreen(app: app, identifiers: ["timer"])])
        let custom = try e.handle(
            .respond(app: app, identifier: "msg", actionIdentifier: StandardAction.dismissIdentifier, text: nil),
            now: t0)
        #expect(custom.contains { if case .tellApp = $0 { true } else { false } })
    }

    @Test func textInputCarriesTheTextAndUnknownActionsAreErrors() throws {
        var e = try engineWithTimer()
        let actions = try e.handle(
            .respond(app: app, identifier: "msg", actionIdentifier: "REPLY", text: "on my way"), now: t0)
        guard case .tellApp(_, let response) = actions.last else { Issue.record("\(actions)"); return }
        #expect(response.userText == "on my way")
        #expect(throws: NotificationError.self) {
            try e.handle(.respond(app: app, identifier: "timer", actionIdentifier: "EXPLODE", text: nil), now: t0)
        }
        #expect(throws: NotificationError.self) {
            try e.handle(
                .respond(
                    app: app, identifier: "missing", actionIdentifier: StandardAction.defaultIdentifier, text: nil),
                now: t0)
        }
    }
}
