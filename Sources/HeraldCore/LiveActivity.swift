import Foundation

/// Where a Live Activity is in its life (ActivityKit's `ActivityState`, docs/live-activities.md).
public enum ActivityState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Shown and updatable.
    case active
    /// Shown, but its content is past its stale date.
    case stale
    /// Ended; still shown until its dismissal time.
    case ended
    /// Gone from the screen.
    case dismissed
}

/// An activity's changing content (ActivityKit's `ActivityContent`, its state as JSON): the app's state, when it goes
/// stale, and how relevant it is beside the app's other activities.
public struct LiveActivityContent: Sendable, Hashable, Codable {
    /// The app's content state, a JSON object.
    public var state: JSONValue
    /// After this the activity shows as out of date.
    public var staleDate: Date?
    /// Higher comes first among the app's activities.
    public var relevanceScore: Double

    /// Creates content.
    public init(state: JSONValue, staleDate: Date? = nil, relevanceScore: Double = 0) {
        self.state = state
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
    }
}

/// How an activity is updated by its provider (ActivityKit's `PushType`).
public enum ActivityPushType: Sendable, Hashable, Codable {
    /// By pushes to the activity's own token, which the device gets from the push service.
    case token
    /// By broadcasts on a channel the activity subscribes to.
    case channel(String)
}

/// When an ended activity leaves the screen (ActivityKit's `ActivityUIDismissalPolicy`).
public enum ActivityDismissalPolicy: Sendable, Hashable, Codable {
    /// After up to four hours.
    case `default`
    /// At once.
    case immediate
    /// At this time (at once if it has passed; never later than four hours after the end).
    case after(Date)
}

/// An alert shown with an update (ActivityKit's `AlertConfiguration`), under the user's settings.
public struct ActivityAlert: Sendable, Hashable, Codable {
    /// The title.
    public var title: String?
    /// The body.
    public var body: String?
    /// The sound: `default` or a file name.
    public var sound: String?

    /// Creates an alert.
    public init(title: String? = nil, body: String? = nil, sound: String? = nil) {
        self.title = title
        self.body = body
        self.sound = sound
    }
}

/// What an app asks for when it starts an activity (`Activity.request`).
public struct ActivityRequest: Sendable, Hashable, Codable {
    /// The attributes' type name (what a push-to-start names in `attributes-type`).
    public var attributesType: String
    /// The activity's fixed attributes, a JSON object.
    public var attributes: JSONValue
    /// The first content.
    public var content: LiveActivityContent
    /// How the provider updates it; `nil`: only the app does.
    public var pushType: ActivityPushType?

    /// Creates a request.
    public init(
        attributesType: String, attributes: JSONValue, content: LiveActivityContent, pushType: ActivityPushType?
    ) {
        self.attributesType = attributesType
        self.attributes = attributes
        self.content = content
        self.pushType = pushType
    }
}

/// A Live Activity as the device keeps it and tells its app of it.
public struct LiveActivity: Sendable, Hashable, Codable {
    /// Its id (a UUID).
    public var id: String
    /// The app's bundle id.
    public var app: String
    /// The attributes' type name.
    public var attributesType: String
    /// The fixed attributes, a JSON object.
    public var attributes: JSONValue
    /// The current content.
    public var content: LiveActivityContent
    /// Where it is in its life.
    public var state: ActivityState
    /// How the provider updates it.
    public var pushType: ActivityPushType?
    /// Its push token (hex), once the push service gave it (push type `.token`).
    public var pushToken: String?
    /// When it started.
    public var startedAt: Date
    /// When its content last changed.
    public var updatedAt: Date
    /// The `timestamp` of the content applied last (a push's, or the time of the app's own update):
    /// an update older than this is ignored.
    public var timestamp: Date
    /// When it ended.
    public var endedAt: Date?
    /// When it leaves the screen, once ended.
    public var dismissAt: Date?
    /// The alert of the update applied last, if it had one.
    public var alert: ActivityAlert?
    /// Started by a push to a push-to-start token, not by the app.
    public var startedByPush: Bool

    /// Creates an activity.
    public init(
        id: String, app: String, attributesType: String, attributes: JSONValue, content: LiveActivityContent,
        state: ActivityState = .active, pushType: ActivityPushType? = nil, pushToken: String? = nil,
        startedAt: Date, timestamp: Date? = nil, startedByPush: Bool = false
    ) {
        self.id = id
        self.app = app
        self.attributesType = attributesType
        self.attributes = attributes
        self.content = content
        self.state = state
        self.pushType = pushType
        self.pushToken = pushToken
        self.startedAt = startedAt
        self.updatedAt = startedAt
        self.timestamp = timestamp ?? startedAt
        self.startedByPush = startedByPush
    }

    /// The channel it is subscribed to, for push type `.channel`.
    public var channelID: String? {
        if case .channel(let id) = pushType { return id }
        return nil
    }

    /// Whether it is still shown and updatable (active or stale).
    public var isLive: Bool { state == .active || state == .stale }
}

/// Why the device refused an activity call (ActivityKit's `ActivityAuthorizationError` and
/// `ActivityError`; docs/live-activities.md lists them).
public struct ActivityError: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    /// The case, by ActivityKit's name.
    public var code: Code
    /// What went wrong, naming the field.
    public var message: String

    /// ActivityKit's cases the device answers with.
    public enum Code: String, Sendable, Hashable, Codable, CaseIterable {
        /// The user turned Live Activities off for the app.
        case denied
        /// The app has as many active activities as it may.
        case targetMaximumExceeded
        /// The attributes and content are larger than 4 KB.
        case attributesTooLarge
        /// Push type `.token` without an `aps-environment`: the app cannot get push tokens.
        case unentitled
        /// No activity with that id (or it has ended).
        case notFound
        /// A field has a value the device cannot take.
        case invalidArgument
        /// The push service could not be reached for a token.
        case pushServiceUnreachable
    }

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}
