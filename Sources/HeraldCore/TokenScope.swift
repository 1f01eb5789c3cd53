/// What a token is for beyond its app's own remote notifications (docs/live-activities.md): one Live
/// Activity's push token, or the app's push-to-start token for one kind of activity. The push service
/// issues one token per app, device, environment and scope; pushes to it reach the device like any
/// other, and the device hands them to the activity (or starts one). On the wire it is its raw text,
/// `activity:<id>` or `push-to-start:<attributes type>`.
public enum TokenScope: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The token of one Live Activity (ActivityKit's `pushToken`), by the activity's id.
    case activity(String)
    /// The app's push-to-start token for activities of one attributes type
    /// (ActivityKit's `pushToStartToken`).
    case pushToStart(String)

    /// The longest scope text taken, in bytes (an activity's UUID or a type name is far shorter).
    public static let maximumLength = 256

    /// Reads `activity:<id>` or `push-to-start:<type>` (the part after the colon not empty, the
    /// whole at most ``maximumLength`` bytes).
    public init?(rawValue: String) {
        guard rawValue.utf8.count <= Self.maximumLength else { return nil }
        if rawValue.hasPrefix("activity:"), rawValue.count > "activity:".count {
            self = .activity(String(rawValue.dropFirst("activity:".count)))
        } else if rawValue.hasPrefix("push-to-start:"), rawValue.count > "push-to-start:".count {
            self = .pushToStart(String(rawValue.dropFirst("push-to-start:".count)))
        } else {
            return nil
        }
    }

    /// `activity:<id>` or `push-to-start:<type>`.
    public var rawValue: String {
        switch self {
        case .activity(let id): "activity:" + id
        case .pushToStart(let type): "push-to-start:" + type
        }
    }

    /// The raw text.
    public var description: String { rawValue }

    /// Reads the raw text; anything else is an error naming it.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let scope = TokenScope(rawValue: text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "'\(text)' is not activity:<id> or push-to-start:<type>")
        }
        self = scope
    }

    /// Writes the raw text.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
