import Foundation
import Synchronization

/// An activity's fixed data and the shape of its changing state (ActivityKit's `ActivityAttributes`).
public protocol ActivityAttributes: Codable, Sendable {
    /// The activity's changing state.
    associatedtype ContentState: Codable, Hashable, Sendable
    /// The name a push-to-start names in `attributes-type` (default: the type's name).
    static var typeName: String { get }
}

extension ActivityAttributes {
    /// The type's name, as ActivityKit uses it.
    public static var typeName: String { String(describing: Self.self) }
}

/// An activity's content (ActivityKit's `ActivityContent`): its state, when it goes stale and how
/// relevant it is.
public struct ActivityContent<State: Codable & Hashable & Sendable>: Sendable, Hashable {
    /// The state.
    public var state: State
    /// After this the activity shows as out of date.
    public var staleDate: Date?
    /// Higher comes first among the app's activities.
    public var relevanceScore: Double

    /// Creates content.
    public init(state: State, staleDate: Date?, relevanceScore: Double = 0) {
        self.state = state
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
    }
}

/// A Live Activity of the app, shaped like ActivityKit's `Activity` (docs/live-activities.md): started
/// by ``request(attributes:content:pushType:center:)`` or by a push to a push-to-start token
/// (``activityUpdates(center:)``), updated and ended by the app or its provider.
public final class Activity<Attributes: ActivityAttributes>: Sendable, Identifiable {
    /// The activity's id.
    public let id: String
    /// Its fixed attributes.
    public let attributes: Attributes
    let center: UserNotificationCenter
    /// The activity when this object was made: what its streams start from.
    let created: LiveActivity
    private let current: Mutex<LiveActivity>

    init(_ activity: LiveActivity, center: UserNotificationCenter) throws {
        id = activity.id
        attributes = try Self.decode(Attributes.self, activity.attributes)
        self.center = center
        created = activity
        current = Mutex(activity)
    }

    /// The activity as the device last told of it.
    public var snapshot: LiveActivity {
        let mine = current.withLock { $0 }
        guard let latest = center.latestActivity(id), latest.updatedAt >= mine.updatedAt else { return mine }
        return latest
    }
    /// Where it is in its life.
    public var activityState: ActivityState { snapshot.state }
    /// Its current content.
    public var content: ActivityContent<Attributes.ContentState> {
        get throws { try Self.content(snapshot.content) }
    }
    /// Its push token, once the push service gave it (push type `.token`).
    public var pushToken: Data? { snapshot.pushToken.flatMap(Self.bytes) }

    /// Every change of the activity as the device tells of it since this object was made (the
    /// latest at once, if it changed meanwhile).
    public var updates: AsyncStream<LiveActivity> {
        let (stream, continuation) = AsyncStream.makeStream(of: LiveActivity.self)
        let id = self.id
        let observer = center.observeActivity(id, since: created) { [weak self] activity in
            self?.current.withLock { $0 = activity }
            continuation.yield(activity)
            if activity.state == .dismissed { continuation.finish() }
        }
        // A reader that stops (or a stream finished) leaves no observer behind.
        continuation.onTermination = { [center] _ in center.stopObserving(observer) }
        return stream
    }

    /// The state each time it changes (ActivityKit's `activityStateUpdates`).
    public var activityStateUpdates: AsyncStream<ActivityState> {
        derived { last, now in now.state == last.state ? nil : now.state }
    }

    /// The content each time it changes (ActivityKit's `contentUpdates`).
    public var contentUpdates: AsyncStream<ActivityContent<Attributes.ContentState>> {
        derived { last, now in now.content == last.content ? nil : try? Self.content(now.content) }
    }

    /// The push token each time the push service gives one (ActivityKit's `pushTokenUpdates`); the
    /// current one first, if there is one.
    public var pushTokenUpdates: AsyncStream<Data> {
        derived(first: created.pushToken.flatMap(Self.bytes)) { last, now in
            guard let token = now.pushToken, token != last.pushToken else { return nil }
            return Self.bytes(token)
        }
    }

    /// A stream of what `pick` makes of each change, given the activity before and after it.
    func derived<T: Sendable>(
        first: T? = nil, _ pick: @escaping @Sendable (LiveActivity, LiveActivity) -> T?
    ) -> AsyncStream<T> {
        let source = updates
        let initial = created
        return AsyncStream { continuation in
            if let first { continuation.yield(first) }
            let task = Task {
                var last = initial
                for await activity in source {
                    if let value = pick(last, activity) { continuation.yield(value) }
                    last = activity
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Starts an activity (ActivityKit's `Activity.request`). `pushType` `.token` gets it a push
    /// token from the push service (``pushTokenUpdates``); `.channel(id)` subscribes it to a
    /// broadcast channel; `nil` leaves its updates to the app. Throws ``ActivityError`` (as an
    /// `AppLinkFailure` in the `ActivityKit` domain: ``AppLinkFailure/activityError``).
    public static func request(
        attributes: Attributes, content: ActivityContent<Attributes.ContentState>, pushType: ActivityPushType? = nil,
        center: UserNotificationCenter
    ) async throws -> Activity<Attributes> {
        let request = ActivityRequest(
            attributesType: Attributes.typeName, attributes: try encode(attributes), content: try raw(content),
            pushType: pushType)
        return try Activity(try await center.requestActivity(request), center: center)
    }

    /// Updates the activity's content, with an alert shown under the user's settings.
    public func update(
        _ content: ActivityContent<Attributes.ContentState>, alertConfiguration: ActivityAlert? = nil
    ) async throws {
        let updated = try await center.updateActivity(id: id, content: try Self.raw(content), alert: alertConfiguration)
        current.withLock { $0 = updated }
    }

    /// Ends the activity, with final content if given; it leaves the screen as `dismissalPolicy` says.
    public func end(
        _ content: ActivityContent<Attributes.ContentState>?, dismissalPolicy: ActivityDismissalPolicy = .default
    ) async throws {
        let ended = try await center.endActivity(
            id: id, content: try content.map(Self.raw), dismissal: dismissalPolicy)
        current.withLock { $0 = ended }
    }

    /// The app's activities of this attributes type that are live or ended and still shown.
    public static func activities(center: UserNotificationCenter) async throws -> [Activity<Attributes>] {
        return try await center.activities().filter { $0.attributesType == Attributes.typeName }.map {
            try Activity($0, center: center)
        }
    }

    /// Activities of this type that the device starts from now on (by a push to the push-to-start
    /// token; ActivityKit's `activityUpdates`).
    public static func activityUpdates(center: UserNotificationCenter) -> AsyncStream<Activity<Attributes>> {
        let (stream, continuation) = AsyncStream.makeStream(of: Activity<Attributes>.self)
        let observer = center.observeNewActivities(Attributes.typeName) { activity in
            if let made = try? Activity(activity, center: center) { continuation.yield(made) }
        }
        continuation.onTermination = { _ in center.stopObserving(observer) }
        return stream
    }

    /// The app's push-to-start token for this attributes type (ActivityKit's `pushToStartToken`).
    public static func pushToStartToken(center: UserNotificationCenter) async throws -> Data {
        guard let bytes = bytes(try await center.pushToStartToken(attributesType: Attributes.typeName)) else {
            throw UserNotificationCenter.unexpected("pushToStartToken")
        }
        return bytes
    }

    // MARK: - JSON

    static func encode(_ value: some Encodable) throws -> JSONValue {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        return try JSONDecoder().decode(JSONValue.self, from: encoder.encode(value))
    }

    static func decode<T: Decodable>(_ type: T.Type, _ value: JSONValue) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return try decoder.decode(type, from: value.jsonData())
    }

    static func raw(_ content: ActivityContent<Attributes.ContentState>) throws -> LiveActivityContent {
        LiveActivityContent(
            state: try encode(content.state), staleDate: content.staleDate, relevanceScore: content.relevanceScore)
    }

    static func content(_ raw: LiveActivityContent) throws -> ActivityContent<Attributes.ContentState> {
        ActivityContent(
            state: try decode(Attributes.ContentState.self, raw.state), staleDate: raw.staleDate,
            relevanceScore: raw.relevanceScore)
    }

    static func bytes(_ hex: String) -> Data? { DeviceToken(hex: hex).map { Data($0.bytes) } }
}
