import Foundation
import HeraldKit
import Synchronization

/// `herald app … listen`: prints what the app is told and answers like a simple app.
final class EventPrinter: UserNotificationCenterDelegate {
    let json: Bool
    let present: PresentationOptions
    let limit: Int?
    let state = Mutex<(count: Int, done: CheckedContinuation<Void, Never>?, finished: Bool)>((0, nil, false))

    init(json: Bool, present: PresentationOptions, limit: Int?) {
        self.json = json
        self.present = present
        self.limit = limit
    }

    func emit(
        _ kind: String, _ notification: DeliveredNotification, extra: [String: String] = [:], counts: Bool = true
    ) {
        let content = notification.request.content
        if json {
            var object: [String: String] = [
                "event": kind, "identifier": notification.identifier, "title": content.title, "body": content.body,
            ]
            object.merge(extra) { $1 }
            if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) {
                print(String(decoding: data, as: UTF8.self))
            }
        } else {
            let details = extra.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            print(
                "\(kind) \(notification.identifier): \(content.title) \(content.body)"
                    + (details.isEmpty ? "" : " (\(details))"))
        }
        fflush(nil)
        if counts { count() }
    }

    /// Counts an event toward `--count`.
    func count() {
        let finished = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.count += 1
            guard let limit, state.count >= limit else { return nil }
            state.finished = true
            defer { state.done = nil }
            return state.done
        }
        finished?.resume()
    }

    func willPresent(_ notification: DeliveredNotification, center: UserNotificationCenter) async -> PresentationOptions
    {
        emit("willPresent", notification, extra: ["answer": present.nameList.joined(separator: ",")])
        return present
    }

    func didReceive(_ response: NotificationResponse, center: UserNotificationCenter) async {
        var extra = ["action": response.actionIdentifier]
        if let text = response.userText { extra["text"] = text }
        if let target = response.notification.request.content.targetContentIdentifier { extra["target"] = target }
        emit("didReceive", response.notification, extra: extra)
    }

    func backgroundTimeExpired(identifier: String, kind: String, center: UserNotificationCenter) async {
        if json {
            print(#"{"event":"backgroundTimeExpired","identifier":"\#(identifier)","kind":"\#(kind)"}"#)
        } else {
            print("backgroundTimeExpired \(identifier) (\(kind))")
        }
        fflush(nil)
        count()
    }

    func focusStatusChanged(_ status: FocusStatus, center: UserNotificationCenter) async {
        let focused = status.isFocused.map { $0 ? "focused" : "not focused" } ?? "unknown"
        if json {
            print(#"{"event":"focusStatus","status":"\#(focused)"}"#)
        } else {
            print("focusStatus \(focused)")
        }
        fflush(nil)
        count()
    }

    func didReceiveRemoteNotification(_ notification: DeliveredNotification, center: UserNotificationCenter) async
        -> BackgroundFetchResult
    {
        emit("remoteNotification", notification)
        return .newData
    }

    func contentChanged(_ kind: ReloadKind, center: UserNotificationCenter) async {
        if json {
            print(#"{"event":"contentChanged","kind":"\#(kind.rawValue)"}"#)
        } else {
            print("contentChanged \(kind.rawValue)")
        }
        fflush(nil)
        count()
    }

    func didReceiveLocationPush(_ notification: DeliveredNotification, center: UserNotificationCenter) async {
        emit("locationPush", notification)
    }

    func activityChanged(_ activity: LiveActivity, center: UserNotificationCenter) async {
        if json {
            let encoder = JSONEncoder.appLink
            if let data = try? encoder.encode(activity), var object = (try? JSONValue.parse(data))?.objectValue {
                object["event"] = .string("activity")
                if let line = try? encoder.encode(object) { print(String(decoding: line, as: UTF8.self)) }
            }
        } else {
            print("activity " + Self.line(activity))
        }
        fflush(nil)
        count()
    }

    /// Ends ``waitUntilDone(_:)``.
    func finish() {
        let done = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.finished = true
            defer { state.done = nil }
            return state.done
        }
        done?.resume()
    }

    /// Returns after `limit` events, or when the link closes or the process is interrupted.
    func waitUntilDone(_ center: UserNotificationCenter) async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.finished { return true }
                state.done = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}

extension EventPrinter {
    /// `<id> <type> <state>: <content state> (token …, channel …)`.
    static func line(_ activity: LiveActivity) -> String {
        var extras: [String] = []
        if let token = activity.pushToken { extras.append("token \(token)") }
        if let channel = activity.channelID { extras.append("channel \(channel)") }
        if let stale = activity.content.staleDate { extras.append("stale at \(AppLinkDates.format(stale))") }
        let state = String(decoding: activity.content.state.jsonData(), as: UTF8.self)
        return "\(activity.id) \(activity.attributesType) \(activity.state.rawValue): \(state)"
            + (extras.isEmpty ? "" : " (\(extras.joined(separator: ", ")))")
    }
}
