import Foundation
import HeraldCore

/// What the link to the push service asks of the daemon: the topics to register, and each push
/// handed to the engine.
extension DeviceService: GatewaySessionHost {
    func registrableTopics() -> [GatewaySession.Topic] {
        engine.apps.values.compactMap { record in
            record.app.apsEnvironment.map { GatewaySession.Topic(topic: record.app.bundleID, environment: $0) }
        }
    }

    /// Hands pushes to the engine and saves what they changed in one write, then carries out what the
    /// engine decided. A push the device cannot use (its app is not installed, its payload is not one,
    /// the engine refuses it) is shown in the device's log and on its presenters and refused; when the
    /// write fails none is acknowledged, so they come again.
    func take(_ pushes: [LinkPush]) async -> [GatewaySession.Outcome] {
        var outcomes: [GatewaySession.Outcome] = []
        var actions: [DeviceAction] = []
        let now = clock.now()
        for push in pushes {
            guard let app = engine.apps[push.topic] ?? Self.baseApp(of: push.topic, in: engine.apps) else {
                outcomes.append(refuse(push, app: push.topic, reason: "the app \(push.topic) is not installed"))
                continue
            }
            let bundleID = app.app.bundleID
            do {
                let payload = try Payload(data: push.payload)
                if push.pushType == .liveactivity {
                    actions += try engine.handleActivity(
                        .push(
                            app: bundleID, payload: payload, apnsID: push.apnsID, priority: push.priority,
                            token: push.token.hex), now: now)
                } else {
                    actions += try engine.handle(
                        .remoteNotification(
                            app: bundleID, payload: payload, apnsID: push.apnsID, collapseID: push.collapseID,
                            pushType: push.pushType), now: now)
                }
                outcomes.append(.taken)
            } catch {
                outcomes.append(refuse(push, app: bundleID, reason: "\(error)"))
            }
        }
        var saved = true
        do {
            try await persist()
        } catch {
            // The engine has them (its changes stay marked for the next write): the device shows
            // them now, and they are acknowledged once a write succeeds (``saveNow()``).
            logger.error("pushes not saved; not acknowledged yet", metadata: ["error": "\(error)"])
            saved = false
        }
        perform(actions)
        rescheduleTimer()
        return saved ? outcomes : outcomes.map { if case .taken = $0 { .notSaved } else { $0 } }
    }

    /// Writes what the engine holds unsaved; whether it is saved now.
    func saveNow() async -> Bool {
        do {
            try await persist()
            return true
        } catch {
            logger.error("saving failed again", metadata: ["error": "\(error)"])
            return false
        }
    }

    private func refuse(_ push: LinkPush, app: String, reason: String) -> GatewaySession.Outcome {
        logger.notice(
            "push refused", metadata: ["apns-id": "\(push.apnsID)", "topic": "\(push.topic)", "reason": "\(reason)"])
        note(.refused, app: app, push.apnsID, "refused push \(push.apnsID): \(reason)")
        return .refused(reason: reason)
    }

    /// A broadcast on a channel the app's activities subscribe to.
    func take(_ broadcast: LinkBroadcast) async {
        guard let app = Self.baseApp(of: broadcast.topic, in: engine.apps)?.app.bundleID else {
            note(.refused, app: broadcast.topic, broadcast.uniqueID, "broadcast for an app not installed")
            return
        }
        do {
            let payload = try Payload(data: broadcast.payload)
            try await applyActivity(
                .broadcast(
                    app: app, channelID: broadcast.channelID, payload: payload, uniqueID: broadcast.uniqueID,
                    priority: broadcast.priority))
        } catch {
            note(.refused, app: app, broadcast.uniqueID, "refused broadcast \(broadcast.uniqueID): \(error)")
        }
    }

    /// What the push service must give or know for the activities, each time the link comes up.
    func activityNeeds() -> GatewaySession.ActivityNeeds {
        var needs = GatewaySession.ActivityNeeds()
        for record in engine.apps.values {
            guard let environment = record.app.apsEnvironment else { continue }
            let app = record.app.bundleID
            let state = record.liveActivities
            for activity in state.activities.values where activity.isLive {
                switch activity.pushType {
                case .token: needs.tokens.append(.init(app: app, environment: environment, activityID: activity.id))
                case .channel(let channel):
                    needs.channels[GatewaySession.Topic(topic: app, environment: environment), default: []]
                        .insert(channel)
                case nil: break
                }
            }
            for type in state.pushToStartTokens.keys {
                needs.pushToStart.append(.init(app: app, environment: environment, activityID: type))
            }
        }
        return needs
    }

    func activityTokenIssued(app: String, activityID: String, token: String) async {
        _ = try? await applyActivity(.tokenIssued(app: app, id: activityID, token: token))
    }

    func pushToStartTokenIssued(app: String, attributesType: String, token: String) async {
        _ = try? await applyActivity(.pushToStartTokenIssued(app: app, attributesType: attributesType, token: token))
    }

    /// `com.example.app.voip` and the like belong to `com.example.app`.
    static func baseApp(of topic: String, in apps: [String: AppRecord]) -> AppRecord? {
        for suffix in [
            ".voip", ".complication", ".pushkit.fileprovider", ".push-type.liveactivity", ".push-type.widgets",
            ".push-type.controls", ".location-query",
        ]
        where topic.hasSuffix(suffix) {
            return apps[String(topic.dropLast(suffix.count))]
        }
        return nil
    }

    func linkNote(app: String, _ text: String) {
        note(.system, app: app, text)
    }

    func tokenChanged(app: String, token: String) {
        sessions[app]?.send(.event(event: .tokenChanged(token: token)))
    }
}
