import Foundation

/// The app link: how an app process talks to its device daemon over a Unix stream socket
/// (docs/app-link.md). Every message is one JSON object on one line (`\n`-terminated).
public enum AppLink {
    /// The socket's file name in the daemon's state directory.
    public static let socketName = "app.sock"
    /// The largest message either side accepts, in bytes.
    public static let maximumMessageSize = 1 << 20
    /// The error domain of Apple's notification error codes (`UNErrorDomain`).
    public static let notificationErrorDomain = "UNErrorDomain"
    /// The error domain of registration failures Apple reports as Cocoa errors (code 3000: no
    /// `aps-environment` entitlement; 3010: remote notifications unavailable).
    public static let cocoaErrorDomain = "NSCocoaErrorDomain"
    /// The error domain of Herald's own app-link errors.
    public static let heraldErrorDomain = "Herald"

    /// Environment variables the daemon sets when it launches an app.
    public enum Environment {
        /// The app link's socket path.
        public static let socket = "HERALD_APP_LINK"
        /// The bundle id the app was launched as.
        public static let bundleID = "HERALD_BUNDLE_ID"
        /// `foreground` or `background`.
        public static let launchMode = "HERALD_LAUNCH_MODE"
        /// The notification that launched the app, as JSON (a `DeliveredNotification`).
        public static let launchOptions = "HERALD_LAUNCH_OPTIONS"
    }
}

/// A call from an app to its daemon; the daemon answers each with a result or a failure.
public enum AppLinkCall: Sendable, Hashable, Codable {
    /// The first message on a connection: who the app is and how it runs.
    case hello(bundleID: String, state: AppRunState)
    /// The app moved to the foreground or the background.
    case setState(state: AppRunState)
    case requestAuthorization(options: AuthorizationOptions)
    case notificationSettings
    case setCategories(categories: [NotificationCategory])
    case categories
    case add(request: NotificationRequest)
    case pending
    case removePending(identifiers: [String]?)
    case delivered
    case removeDelivered(identifiers: [String]?)
    case setBadge(badge: Int)
    case registerForRemoteNotifications
    case unregisterForRemoteNotifications
    /// Asks the user (once) to let the app use the device's location, which location triggers need
    /// (`CLLocationManager.requestWhenInUseAuthorization`); later calls return the current answer.
    case requestLocationAuthorization
    /// The app's answer to a `willPresent` event.
    case willPresentAnswer(identifier: String, options: PresentationOptions)
    /// The app finished handling a `didReceive` event (its completion handler ran).
    case responseHandled(identifier: String)
    /// The app finished the background work of a `backgroundWake` event.
    case backgroundFinished(identifier: String, result: BackgroundFetchResult)
    /// The app's service extension finished a `serviceExtension` event (`nil`: keep the original).
    case serviceExtensionFinished(identifier: String, content: NotificationContent?)
    /// Starts a Live Activity (`Activity.request`); answered with `activity`.
    case requestActivity(request: ActivityRequest)
    /// Updates one of the app's live activities; answered with `activity`.
    case updateActivity(id: String, content: LiveActivityContent, alert: ActivityAlert?)
    /// Ends one of the app's live activities; answered with `activity`.
    case endActivity(id: String, content: LiveActivityContent?, dismissal: ActivityDismissalPolicy)
    /// The app's activities (`Activity.activities`); answered with `activities`.
    case activities
    /// The app's push-to-start token for an attributes type (`Activity.pushToStartToken`); answered
    /// with `token`.
    case pushToStartToken(attributesType: String)
    /// The app's badge number (`applicationIconBadgeNumber`); answered with `badge`.
    case badge
    /// `scheduleLocalNotification:` / `presentLocalNotificationNow:`: the device computes the
    /// schedule's dates on its own clock (a past fire date delivers at once).
    case addLegacy(notification: LegacyNotification)
    /// `cancelLocalNotification:` / `cancelAllLocalNotifications` (`nil`): removes the pending ones
    /// and takes them off the screen if shown.
    case cancelLegacy(identifiers: [String]?)
    /// Asks the user (once) to let the app know whether a Focus is on (`INFocusStatusCenter`);
    /// answered with `focusAuthorization`.
    case requestFocusStatusAuthorization
    /// Whether a Focus is on (`INFocusStatusCenter.focusStatus`); answered with `focusStatus`.
    case focusStatus
}

/// Whether the user is focused, as an app may read it (`INFocusStatus`): `isFocused` is `nil` until
/// the user lets the app know.
public struct FocusStatus: Sendable, Hashable, Codable {
    /// Whether a Focus is on; `nil` until the user lets the app know.
    public var isFocused: Bool?

    /// Creates a status.
    public init(isFocused: Bool?) { self.isFocused = isFocused }
}

/// What a background task reports when it is done (`UIBackgroundFetchResult`).
public enum BackgroundFetchResult: String, Sendable, Hashable, Codable, CaseIterable {
    case newData, noData, failed
}

/// A successful answer to an `AppLinkCall`.
public enum AppLinkResult: Sendable, Hashable, Codable {
    case done
    case authorization(granted: Bool, settings: NotificationSettings)
    case settings(settings: NotificationSettings)
    case categories(categories: [NotificationCategory])
    case pending(requests: [PendingRequest])
    case delivered(notifications: [DeliveredNotification])
    case token(token: String)
    case locationAuthorization(granted: Bool)
    case activity(activity: LiveActivity)
    case activities(activities: [LiveActivity])
    case badge(badge: Int)
    case focusAuthorization(granted: Bool)
    case focusStatus(status: FocusStatus)
}

/// Something the daemon tells an app without being asked.
public enum AppLinkEvent: Sendable, Hashable, Codable {
    /// A notification arrived while the app is in the foreground: answer with `willPresentAnswer`.
    case willPresent(notification: DeliveredNotification)
    /// The user acted on a notification: answer with `responseHandled` when done.
    case didReceive(response: NotificationResponse)
    /// A remote notification for an app without notification types, delivered without any UI.
    case remoteNotification(notification: DeliveredNotification)
    /// `content-available`: background time to fetch; answer with `backgroundFinished` within `budget` seconds.
    case backgroundWake(notification: DeliveredNotification, budget: Double)
    /// `mutable-content`: rewrite the content before `deadline`; answer with `serviceExtensionFinished`.
    case serviceExtension(notification: DeliveredNotification, deadline: Date)
    /// The app's device token changed (for example after a device reset).
    case tokenChanged(token: String)
    /// The system moved the app to another run state (a notification brought it forward).
    case stateChanged(state: AppRunState)
    /// A `widgets` or `controls` push (`content-changed: true`): the app's widgets or controls
    /// should reload their content (WidgetKit's reload of timelines or control values).
    case contentChanged(kind: ReloadKind)
    /// A `location` push: the app's location query handler gets the payload (Apple's location push
    /// service extension); answer with `backgroundFinished` when done (within the background budget).
    case locationPush(notification: DeliveredNotification)
    /// One of the app's Live Activities changed: started (by the app or a push), updated, got its
    /// push token, went stale, ended or was dismissed.
    case activityChanged(activity: LiveActivity)
    /// The time the app was given for background work (`kind`: background fetch, response, location
    /// query) ran out before it said it finished: the system suspends it now (its link closes next).
    case backgroundTimeExpired(identifier: String, kind: String)
    /// A Focus came on or went off (only to an app the user lets know).
    case focusStatusChanged(status: FocusStatus)
}

/// What a `widgets` or `controls` push asks to reload.
public enum ReloadKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// The app's widgets (push type `widgets`, topic `<bundle>.push-type.widgets`).
    case widgets
    /// The app's controls (push type `controls`, topic `<bundle>.push-type.controls`).
    case controls
}

/// A failure answer: Apple's domain and code where Apple has one, and a message that names the field.
public struct AppLinkFailure: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    /// `UNErrorDomain`, `NSCocoaErrorDomain` or `Herald`.
    public var domain: String
    /// The code within the domain.
    public var code: Int
    /// What went wrong.
    public var message: String

    /// Creates a failure.
    public init(domain: String, code: Int, message: String) {
        self.domain = domain
        self.code = code
        self.message = message
    }

    /// The failure for one of Apple's notification errors.
    public init(_ error: NotificationError) {
        self.init(domain: AppLink.notificationErrorDomain, code: error.code.rawValue, message: error.message)
    }

    /// The notification error it carries, if its domain is `UNErrorDomain`.
    public var notificationError: NotificationError? {
        domain == AppLink.notificationErrorDomain
            ? NotificationError(NotificationError.Code(rawValue: code), message) : nil
    }

    /// `domain code: message`.
    public var description: String { "\(domain) \(code): \(message)" }

    /// A failure's domain and code: the codes the daemon answers with beside Apple's
    /// `UNErrorDomain` ones (``NotificationError``), defined once.
    public struct Code: Hashable, Sendable {
        /// The error domain.
        public var domain: String
        /// The code within it.
        public var code: Int

        /// Herald 1: a call the daemon cannot take in this state (no `hello` yet, or an unknown app).
        public static let protocolError = Code(domain: AppLink.heraldErrorDomain, code: 1)
        /// Herald 2: the device failed (its store, say).
        public static let deviceFailed = Code(domain: AppLink.heraldErrorDomain, code: 2)
        /// Herald 3: the push service is not reachable and the app has no token yet. No longer sent:
        /// `registerForRemoteNotifications` waits for the push service, then fails with 3010
        /// (``remoteNotificationsNotSupported``); kept so that apps that test for it still build.
        public static let pushServiceUnreachable = Code(domain: AppLink.heraldErrorDomain, code: 3)
        /// `NSCocoaErrorDomain` 3000: `registerForRemoteNotifications` without an `aps-environment`.
        public static let noAPSEnvironment = Code(domain: AppLink.cocoaErrorDomain, code: 3000)
        /// `NSCocoaErrorDomain` 3010: remote notifications are not supported (the device has no push
        /// service).
        public static let remoteNotificationsNotSupported = Code(domain: AppLink.cocoaErrorDomain, code: 3010)
    }

    /// The error domain of ActivityKit's errors (``ActivityError``).
    public static let activityErrorDomain = "ActivityKit"

    /// The failure for one of ActivityKit's errors: its case's position (from 1) as the code, its
    /// case and message as the message.
    public init(_ error: ActivityError) {
        let code = (ActivityError.Code.allCases.firstIndex(of: error.code) ?? -1) + 1
        self.init(domain: Self.activityErrorDomain, code: code, message: error.description)
    }

    /// The ActivityKit error it carries, if its domain is ActivityKit's.
    public var activityError: ActivityError? {
        guard domain == Self.activityErrorDomain, code >= 1, code <= ActivityError.Code.allCases.count else {
            return nil
        }
        let kind = ActivityError.Code.allCases[code - 1]
        let prefix = kind.rawValue + ": "
        return ActivityError(kind, message.hasPrefix(prefix) ? String(message.dropFirst(prefix.count)) : message)
    }

    /// A failure with one of the daemon's codes.
    public init(_ code: Code, _ message: String) {
        self.init(domain: code.domain, code: code.code, message: message)
    }

    /// Its domain and code.
    public var kind: Code { Code(domain: domain, code: code) }

    /// Herald: a call the daemon cannot take in this state (no `hello` yet, or an unknown app).
    public static func protocolError(_ message: String) -> AppLinkFailure {
        AppLinkFailure(.protocolError, message)
    }
}

/// One line on the app link.
public enum AppLinkFrame: Sendable, Hashable, Codable {
    case call(id: Int, call: AppLinkCall)
    case result(id: Int, result: AppLinkResult)
    case failure(id: Int, failure: AppLinkFailure)
    case event(event: AppLinkEvent)

    /// The frame as one line of JSON, with its `\n`.
    public func encodedLine() throws -> Data {
        var data = try JSONEncoder.appLink.encode(self)
        data.append(UInt8(ascii: "\n"))
        return data
    }

    /// The `id` of a `result` or `failure` line, even when the rest of it cannot be read.
    public static func answerID(line: some Collection<UInt8>) -> Int? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any] else { return nil }
        let answer = (object["result"] ?? object["failure"]) as? [String: Any]
        return answer?["id"] as? Int
    }

    /// Reads one line (with or without its `\n`); errors name what is wrong.
    public init(line: some Collection<UInt8>) throws {
        do {
            self = try JSONDecoder.appLink.decode(AppLinkFrame.self, from: Data(line))
        } catch let error as DecodingError {
            throw AppLinkFailure.protocolError("bad app-link message: \(DecodingErrorText.describe(error))")
        }
    }
}

extension JSONEncoder {
    /// The app link's encoder: dates as ISO 8601, keys sorted.
    public static var appLink: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(AppLinkDates.format(date))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

extension JSONDecoder {
    /// The app link's decoder: dates as ISO 8601 (with or without fractional seconds).
    public static var appLink: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = AppLinkDates.parse(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "'\(text)' is not an ISO 8601 date")
            }
            return date
        }
        return decoder
    }
}

/// ISO 8601 dates with milliseconds, as the app link and the device API write them.
public enum AppLinkDates {
    /// `2026-11-22T10:00:00.000Z`.
    public static func format(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
    }

    /// Reads an ISO 8601 date with a zone, with or without fractional seconds.
    public static func parse(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}

/// Turns a `DecodingError` into one line that names the field.
public enum DecodingErrorText {
    /// `path.to.field: what is wrong`.
    public static func describe(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            let text = keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
            return text.isEmpty ? "(top level)" : text
        }
        switch error {
        case .keyNotFound(let key, let context): return "\(path(context.codingPath + [key])): missing"
        case .typeMismatch(_, let context): return "\(path(context.codingPath)): \(context.debugDescription)"
        case .valueNotFound(_, let context): return "\(path(context.codingPath)): missing value"
        case .dataCorrupted(let context): return "\(path(context.codingPath)): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }
}
