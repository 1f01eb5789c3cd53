import Foundation
import HeraldCore
import Testing

@testable import HeraldDevice

/// The engine's Live Activities (docs/live-activities.md): requests, tokens, pushes in timestamp
/// order, stale and dismissal dates, the update budget, push-to-start, broadcasts and the limits.
@Suite struct LiveActivityEngineTests {
    static let t0 = at("2026-11-25T10:00:00Z")
    static let app = "com.example.trip"

    /// An engine with the app installed (with an `aps-environment` unless told otherwise) and its
    /// notifications allowed.
    func engine(entitled: Bool = true, frequent: Bool = false, allowed: Bool = true) throws -> DeviceEngine {
        var e = DeviceEngine(policy: CountingPolicy(allow: allowed))
        _ = try e.handle(
            .installApp(
                InstalledApp(
                    bundleID: Self.app, apsEnvironment: entitled ? .development : nil,
                    supportsFrequentActivityUpdates: frequent)), now: Self.t0)
        _ = try e.handle(.requestAuthorization(app: Self.app, options: [.alert, .sound]), now: Self.t0)
        return e
    }

    func request(_ push: ActivityPushType? = .token, stale: Date? = nil, size: Int = 0) -> ActivityRequest {
        ActivityRequest(
            attributesType: "TripAttributes",
            attributes: .object(["order": .string(String(repeating: "x", count: size))]),
            content: LiveActivityContent(state: .object(["stop": .int(9)]), staleDate: stale), pushType: push)
    }

    func payload(_ json: String) throws -> Payload { try Payload(data: Data(json.utf8)) }

    func update(_ stop: Int, at stamp: Int, extra: String = "") throws -> Payload {
        try payload(#"{"aps":{"event":"update","timestamp":\#(stamp),"content-state":{"stop":\#(stop)}\#(extra)}}"#)
    }

    func activity(_ e: DeviceEngine, _ id: String) -> LiveActivity? {
        e.apps[Self.app]?.liveActivities.activities[id]
    }

    /// Starts activity `id` with push type `.token` and gives it `token`.
    func started(_ e: inout DeviceEngine, _ id: String, token: String) throws {
        _ = try e.handleActivity(.request(app: Self.app, id: id, request: request()), now: Self.t0)
        _ = try e.handleActivity(.tokenIssued(app: Self.app, id: id, token: token), now: Self.t0)
    }

    /// Priority-10 updates to `token`, the i-th one second after t0 with `stop` i and timestamp t0 + i.
    func updates(_ e: inout DeviceEngine, _ range: ClosedRange<Int>, token: String, prefix: String) throws {
        let base = Int(Self.t0.timeIntervalSince1970)
        for i in range {
            _ = try e.handleActivity(
                .push(
                    app: Self.app, payload: try update(i, at: base + i), apnsID: "\(prefix)\(i)", priority: .immediate,
                    token: token),
                now: Self.t0.addingTimeInterval(Double(i)))
        }
    }

    @Test func aTokenActivityGetsItsTokenAndTakesNewerUpdatesOnly() throws {
        var e = try engine()
        let started = try e.handleActivity(.request(app: Self.app, id: "A", request: request()), now: Self.t0)
        guard case .activityChanged(let first) = started.first else { throw TestFailure("\(started)") }
        #expect(first.state == .active && first.pushToken == nil && first.timestamp == Self.t0)
        #expect(started.last == .requestActivityToken(app: Self.app, activityID: "A"))
        let issued = try e.handleActivity(.tokenIssued(app: Self.app, id: "A", token: "ab12"), now: Self.t0)
        #expect(issued.count == 1 && activity(e, "A")?.pushToken == "ab12")

        let stamp = Int(Self.t0.timeIntervalSince1970) + 60
        let applied = try e.handleActivity(
            .push(app: Self.app, payload: try update(5, at: stamp), apnsID: "p1", priority: .normal, token: "ab12"),
            now: Self.t0.addingTimeInterval(61))
        #expect(activity(e, "A")?.content.state == .object(["stop": .int(5)]), "\(applied)")
        // Older than what is shown: ignored, said so.
        let older = try e.handleActivity(
            .push(app: Self.app, payload: try update(7, at: stamp - 1), apnsID: "p2", priority: .normal, token: "ab12"),
            now: Self.t0.addingTimeInterval(62))
        guard case .activityNote(_, "A", let text) = older.first else { throw TestFailure("\(older)") }
        #expect(text.contains("p2 ignored") && activity(e, "A")?.content.state == .object(["stop": .int(5)]))
        // A token that is no activity's and no push-to-start token: refused.
        #expect(throws: ActivityError.self) {
            try e.handleActivity(
                .push(
                    app: Self.app, payload: try update(1, at: stamp + 5), apnsID: "p3", priority: .normal, token: "ff"),
                now: Self.t0)
        }
    }

    @Test func staleDatesAndDismissalDatesRunOnTheEnginesClock() throws {
        var e = try engine()
        _ = try e.handleActivity(
            .request(app: Self.app, id: "A", request: request(nil, stale: Self.t0.addingTimeInterval(600))),
            now: Self.t0)
        #expect(e.nextWake == Self.t0.addingTimeInterval(600))
        let stale = e.advance(to: Self.t0.addingTimeInterval(600))
        #expect(stale.compactMap(\.activity).map(\.state) == [.stale])
        // New content without a stale date makes it active again.
        _ = try e.handleActivity(
            .update(app: Self.app, id: "A", content: LiveActivityContent(state: .object([:])), alert: nil),
            now: Self.t0.addingTimeInterval(700))
        #expect(activity(e, "A")?.state == .active)
        // Ended by the app with the default policy: shown four hours, then gone.
        let end = Self.t0.addingTimeInterval(800)
        _ = try e.handleActivity(.end(app: Self.app, id: "A", content: nil, dismissal: .default), now: end)
        #expect(activity(e, "A")?.state == .ended && activity(e, "A")?.dismissAt == end.addingTimeInterval(4 * 3600))
        #expect(e.advance(to: end.addingTimeInterval(4 * 3600 - 1)).isEmpty)
        let gone = e.advance(to: end.addingTimeInterval(4 * 3600))
        #expect(gone.compactMap(\.activity).map(\.state) == [.dismissed] && activity(e, "A") == nil)
        // An update for it now is refused.
        #expect(throws: ActivityError(.notFound, "\(Self.app) has no live activity A")) {
            try e.handleActivity(
                .update(app: Self.app, id: "A", content: LiveActivityContent(state: .object([:])), alert: nil), now: end
            )
        }
    }

    @Test func anEndByPushDismissesAtItsDateAndGivesTheTokenUp() throws {
        var e = try engine()
        try started(&e, "A", token: "aa")
        try started(&e, "B", token: "bb")
        let stamp = Int(Self.t0.timeIntervalSince1970)
        // A dismissal date in the past: removed at once.
        let past = try e.handleActivity(
            .push(
                app: Self.app,
                payload: try payload(
                    #"{"aps":{"event":"end","timestamp":\#(stamp + 1),"dismissal-date":\#(stamp - 10)}}"#),
                apnsID: "e1", priority: .immediate, token: "aa"), now: Self.t0.addingTimeInterval(5))
        #expect(past.compactMap(\.activity).map(\.state) == [.dismissed])
        #expect(past.contains(.releaseActivityToken(app: Self.app, activityID: "A")) && activity(e, "A") == nil)
        // One in the future: ended until then.
        let later = try e.handleActivity(
            .push(
                app: Self.app,
                payload: try payload(
                    #"{"aps":{"event":"end","timestamp":\#(stamp + 1),"dismissal-date":\#(stamp + 900)}}"#),
                apnsID: "e2", priority: .immediate, token: "bb"), now: Self.t0.addingTimeInterval(5))
        #expect(later.compactMap(\.activity).map(\.state) == [.ended])
        #expect(later.contains(.releaseActivityToken(app: Self.app, activityID: "B")))
        #expect(e.nextWake == Self.t0.addingTimeInterval(900))
        #expect(e.advance(to: Self.t0.addingTimeInterval(900)).compactMap(\.activity).map(\.state) == [.dismissed])
        // None: four hours after the end.
        try started(&e, "C", token: "cc")
        let end = Self.t0.addingTimeInterval(1000)
        _ = try e.handleActivity(
            .push(
                app: Self.app, payload: try payload(#"{"aps":{"event":"end","timestamp":\#(stamp + 2)}}"#),
                apnsID: "e3", priority: .immediate, token: "cc"), now: end)
        #expect(activity(e, "C")?.state == .ended && activity(e, "C")?.dismissAt == end.addingTimeInterval(4 * 3600))
        // One beyond four hours, the farthest an integer can say included: four hours, as for the app's end.
        try started(&e, "D", token: "dd")
        _ = try e.handleActivity(
            .push(
                app: Self.app,
                payload: try payload(
                    #"{"aps":{"event":"end","timestamp":\#(stamp + 3),"dismissal-date":\#(Int.max)}}"#),
                apnsID: "e4", priority: .immediate, token: "dd"), now: end)
        #expect(activity(e, "D")?.state == .ended && activity(e, "D")?.dismissAt == end.addingTimeInterval(4 * 3600))
    }

    @Test func priorityTenUpdatesPastTheHourlyBudgetWaitForRoom() throws {
        var e = try engine()
        try started(&e, "A", token: "aa")
        let base = Int(Self.t0.timeIntervalSince1970)
        try updates(&e, 1...10, token: "aa", prefix: "u")
        #expect(activity(e, "A")?.content.state == .object(["stop": .int(10)]))
        // The eleventh within the hour is held; a newer one replaces it; priority 5 is not counted.
        let held = try e.handleActivity(
            .push(
                app: Self.app, payload: try update(11, at: base + 11), apnsID: "u11", priority: .immediate, token: "aa"),
            now: Self.t0.addingTimeInterval(11))
        guard case .activityNote(_, _, let text) = held.first else { throw TestFailure("\(held)") }
        #expect(text.contains("u11 held") && activity(e, "A")?.content.state == .object(["stop": .int(10)]))
        _ = try e.handleActivity(
            .push(
                app: Self.app, payload: try update(12, at: base + 12), apnsID: "u12", priority: .immediate, token: "aa"),
            now: Self.t0.addingTimeInterval(12))
        _ = try e.handleActivity(
            .push(app: Self.app, payload: try update(50, at: base + 13), apnsID: "q", priority: .normal, token: "aa"),
            now: Self.t0.addingTimeInterval(13))
        #expect(activity(e, "A")?.content.state == .object(["stop": .int(50)]), "priority 5 goes at once")
        // An hour after the first counted update there is room: the held one is applied... unless
        // the content shown is newer, as here (the priority-5 update came after it).
        #expect(e.nextWake == Self.t0.addingTimeInterval(3601))
        let released = e.advance(to: Self.t0.addingTimeInterval(3601))
        #expect(
            released.compactMap(\.activity).isEmpty && activity(e, "A")?.content.state == .object(["stop": .int(50)]),
            "\(released)")

        // With frequent updates the budget is 60.
        var f = try engine(frequent: true)
        try started(&f, "F", token: "ff")
        try updates(&f, 1...60, token: "ff", prefix: "f")
        #expect(f.apps[Self.app]?.liveActivities.activities["F"]?.content.state == .object(["stop": .int(60)]))
    }

    @Test func aHeldUpdateIsAppliedWhenTheBudgetHasRoom() throws {
        var e = try engine()
        try started(&e, "A", token: "aa")
        try updates(&e, 1...11, token: "aa", prefix: "u")
        #expect(activity(e, "A")?.content.state == .object(["stop": .int(10)]))
        let released = e.advance(to: Self.t0.addingTimeInterval(3601))
        #expect(released.compactMap(\.activity).first?.content.state == .object(["stop": .int(11)]))
    }

    @Test func aPushToStartTokenStartsAnActivityOfItsTypeOnly() throws {
        var e = try engine()
        _ = try e.handleActivity(
            .pushToStartTokenIssued(app: Self.app, attributesType: "TripAttributes", token: "5a"), now: Self.t0)
        let stamp = Int(Self.t0.timeIntervalSince1970)
        func start(_ type: String, _ extra: String) throws -> Payload {
            try payload(
                #"{"aps":{"event":"start","timestamp":\#(stamp),"attributes-type":"\#(type)","attributes":{"order":"A-17"},"content-state":{"stop":4},"alert":{"title":"On its way"},"sound":"default"\#(extra)}}"#
            )
        }
        #expect(throws: ActivityError.self) {
            try e.handleActivity(
                .push(app: Self.app, payload: try start("Other", ""), apnsID: "s0", priority: .immediate, token: "5a"),
                now: Self.t0)
        }
        let started = try e.handleActivity(
            .push(
                app: Self.app, payload: try start("TripAttributes", #","input-push-token":1"#), apnsID: "s1",
                priority: .immediate, token: "5a"), now: Self.t0)
        let new = try #require(activity(e, "s1"))
        #expect(new.startedByPush && new.attributes == .object(["order": .string("A-17")]) && new.pushType == .token)
        #expect(started.contains(.requestActivityToken(app: Self.app, activityID: "s1")))
        #expect(
            started.contains(
                .activityAlert(
                    app: Self.app, activityID: "s1", alert: ActivityAlert(title: "On its way", sound: "default"),
                    sound: .default)))
        let channel = Data(repeating: 1, count: 16).base64EncodedString()
        let onChannel = try e.handleActivity(
            .push(
                app: Self.app, payload: try start("TripAttributes", #","input-push-channel":"\#(channel)""#),
                apnsID: "s2",
                priority: .immediate, token: "5a"), now: Self.t0)
        #expect(onChannel.contains(.subscribeChannel(app: Self.app, channelID: channel)))
        #expect(activity(e, "s2")?.pushType == .channel(channel))
    }

    @Test func aBroadcastUpdatesEveryActivityOnItsChannel() throws {
        var e = try engine()
        let channel = Data(repeating: 2, count: 16).base64EncodedString()
        let first = try e.handleActivity(
            .request(app: Self.app, id: "A", request: request(.channel(channel))), now: Self.t0)
        #expect(first.contains(.subscribeChannel(app: Self.app, channelID: channel)))
        let second = try e.handleActivity(
            .request(app: Self.app, id: "B", request: request(.channel(channel))), now: Self.t0)
        #expect(!second.contains(.subscribeChannel(app: Self.app, channelID: channel)), "subscribed already")
        let stamp = Int(Self.t0.timeIntervalSince1970) + 5
        let both = try e.handleActivity(
            .broadcast(
                app: Self.app, channelID: channel, payload: try update(3, at: stamp), uniqueID: "b1",
                priority: .immediate),
            now: Self.t0.addingTimeInterval(5))
        #expect(both.compactMap(\.activity).map(\.id) == ["A", "B"])
        #expect(activity(e, "B")?.content.state == .object(["stop": .int(3)]))
        // Ending one keeps the subscription for the other; ending both ends it.
        let endA = try e.handleActivity(.end(app: Self.app, id: "A", content: nil, dismissal: .immediate), now: Self.t0)
        #expect(!endA.contains(.unsubscribeChannel(app: Self.app, channelID: channel)))
        let endB = try e.handleActivity(.end(app: Self.app, id: "B", content: nil, dismissal: .immediate), now: Self.t0)
        #expect(endB.contains(.unsubscribeChannel(app: Self.app, channelID: channel)))
        #expect(throws: ActivityError.self) {
            try e.handleActivity(
                .broadcast(
                    app: Self.app, channelID: channel, payload: try update(4, at: stamp + 1), uniqueID: "b2",
                    priority: .immediate), now: Self.t0)
        }
    }

    @Test func theLimitsAndTheUsersSwitch() throws {
        var e = try engine()
        for i in 0..<5 {
            _ = try e.handleActivity(.request(app: Self.app, id: "\(i)", request: request(nil)), now: Self.t0)
        }
        #expect(throws: ActivityError.self) {
            try e.handleActivity(.request(app: Self.app, id: "5", request: request(nil)), now: Self.t0)
        }
        do {
            _ = try e.handleActivity(.request(app: Self.app, id: "5", request: request(nil)), now: Self.t0)
        } catch {
            #expect(error.code == .targetMaximumExceeded)
        }
        // Turned off: every live one ends at once, and a new one is denied.
        let off = try e.handleActivity(.setAllowed(app: Self.app, allowed: false), now: Self.t0)
        #expect(off.compactMap(\.activity).count == 5 && e.apps[Self.app]?.liveActivities.activities.isEmpty == true)
        do {
            _ = try e.handleActivity(.request(app: Self.app, id: "6", request: request(nil)), now: Self.t0)
            Issue.record("allowed while turned off")
        } catch {
            #expect(error.code == .denied)
        }
        var u = try engine(entitled: false)
        do {
            _ = try u.handleActivity(.request(app: Self.app, id: "T", request: request(.token)), now: Self.t0)
            Issue.record("a token without aps-environment")
        } catch {
            #expect(error.code == .unentitled)
        }
        do {
            _ = try u.handleActivity(.request(app: Self.app, id: "L", request: request(nil, size: 5000)), now: Self.t0)
            Issue.record("5,000 bytes of attributes")
        } catch {
            #expect(error.code == .attributesTooLarge)
        }
    }

    @Test func anAlertFollowsTheUsersSettings() throws {
        var e = try engine()
        _ = try e.handleActivity(.request(app: Self.app, id: "A", request: request(nil)), now: Self.t0)
        let alert = ActivityAlert(title: "Delivered", body: "At the door", sound: "chime.caf")
        let shown = try e.handleActivity(
            .update(app: Self.app, id: "A", content: LiveActivityContent(state: .object([:])), alert: alert),
            now: Self.t0)
        #expect(
            shown.contains(.activityAlert(app: Self.app, activityID: "A", alert: alert, sound: .named("chime.caf"))))
        var quiet = try engine(allowed: false)
        _ = try quiet.handleActivity(.request(app: Self.app, id: "A", request: request(nil)), now: Self.t0)
        let silent = try quiet.handleActivity(
            .update(app: Self.app, id: "A", content: LiveActivityContent(state: .object([:])), alert: alert),
            now: Self.t0)
        #expect(!silent.contains { if case .activityAlert = $0 { true } else { false } })
    }

    @Test func activitiesSurviveARestartWithTheirTimers() throws {
        var e = try engine()
        _ = try e.handleActivity(.request(app: Self.app, id: "A", request: request()), now: Self.t0)
        _ = try e.handleActivity(
            .end(app: Self.app, id: "A", content: nil, dismissal: .after(Self.t0.addingTimeInterval(60))), now: Self.t0)
        let records = e.takeChanges().records
        let data = try JSONEncoder().encode(records)
        let again = DeviceEngine(
            policy: CountingPolicy(allow: true), records: try JSONDecoder().decode([AppRecord].self, from: data))
        #expect(again.apps[Self.app]?.liveActivities.activities["A"]?.state == .ended)
        #expect(again.nextWake == Self.t0.addingTimeInterval(60))
        // A record saved before activities existed still loads.
        var old = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(records[0])) as! [String: Any]
        old["activityState"] = nil
        let legacy = try JSONDecoder().decode(AppRecord.self, from: try JSONSerialization.data(withJSONObject: old))
        #expect(legacy.liveActivities.activities.isEmpty)
    }
}

extension DeviceAction {
    /// The activity an `activityChanged` carries.
    var activity: LiveActivity? {
        if case .activityChanged(let activity) = self { return activity }
        return nil
    }
}

/// A test's own failure, with what was found.
struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
