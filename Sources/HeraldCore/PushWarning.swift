import Foundation

/// A push that Apple's provider API accepts with a 200 and then handles quietly in a way its
/// sender probably did not mean: shown nothing, not woken, dropped on the device. Herald names
/// each when it accepts such a push (docs/provider-api.md, "Warnings"), and its gateway can refuse
/// them instead (`--strict`).
///
/// The raw value is the name Herald gives it: in the `herald-warnings` answer header, the
/// delivery log, `/metrics` and, under `--strict`, the `reason` of the 400.
public enum PushWarning: String, CaseIterable, Sendable, Codable {
    /// A `background` push that also carries an alert, a sound or a badge.
    case backgroundWithAlert = "BackgroundWithAlert"
    /// A `background` push without `content-available: 1`.
    case backgroundWithoutContentAvailable = "BackgroundWithoutContentAvailable"
    /// An `alert` push with no alert text, no sound and no badge.
    case alertWithNothingToShow = "AlertWithNothingToShow"
    /// `apns-push-type` says one kind of push and the payload is another.
    case pushTypeMismatch = "PushTypeMismatch"
    /// `mutable-content: 1` without an alert title, subtitle or body.
    case mutableContentWithoutAlert = "MutableContentWithoutAlert"
    /// A `liveactivity` push without `aps.timestamp`.
    case liveActivityWithoutTimestamp = "LiveActivityWithoutTimestamp"
    /// A push-to-start (`event: start`) without `aps.attributes-type` or `aps.attributes`.
    case pushToStartWithoutAttributesType = "PushToStartWithoutAttributesType"
    /// `aps.badge` is not a whole number of at least 0 (a string, say).
    case badgeNotANumber = "BadgeNotANumber"
    /// The alert's title, subtitle or body is longer than a lock-screen notification shows.
    case alertTruncated = "AlertTruncated"

    /// What Apple's service and devices do with such a push, in a sentence.
    public var explanation: String {
        switch self {
        case .backgroundWithAlert:
            "a background push carries content-available only: the alert, sound or badge is not presented"
        case .backgroundWithoutContentAvailable:
            "a background push without content-available: 1 wakes nothing: the app never hears of it"
        case .alertWithNothingToShow:
            "an alert push with no title, subtitle, body, sound or badge: the device shows nothing"
        case .pushTypeMismatch:
            "apns-push-type does not match the payload: APNs may delay or drop it"
        case .mutableContentWithoutAlert:
            "mutable-content without an alert title, subtitle or body: the notification service extension never runs"
        case .liveActivityWithoutTimestamp:
            "a Live Activity push without aps.timestamp: the system cannot order it and ignores it"
        case .pushToStartWithoutAttributesType:
            "a push-to-start without aps.attributes-type and aps.attributes: no Live Activity is started"
        case .badgeNotANumber:
            "aps.badge is not a whole number: the badge is left as it was"
        case .alertTruncated:
            "the alert is longer than the lock screen shows (a title or subtitle over \(Self.titleLimit), a body over \(Self.bodyLimit) characters): it is cut off"
        }
    }

    /// The Apple documentation page that says so (by its title, as Apple's developer site names it).
    public var source: String {
        switch self {
        case .backgroundWithAlert, .backgroundWithoutContentAvailable: "Pushing background updates to your App"
        case .alertWithNothingToShow, .badgeNotANumber: "Generating a remote notification"
        case .pushTypeMismatch: "Sending notification requests to APNs (apns-push-type)"
        case .mutableContentWithoutAlert: "Modifying content in newly delivered notifications"
        case .liveActivityWithoutTimestamp, .pushToStartWithoutAttributesType:
            "Starting and updating Live Activities with ActivityKit push notifications"
        case .alertTruncated: "Human Interface Guidelines: Notifications (Herald's limits: UNVERIFIED)"
        }
    }

    /// The longest title or subtitle, in characters, that a lock-screen notification shows whole
    /// (one line on an iPhone in portrait): Herald's choice, as Apple publishes no figure.
    public static let titleLimit = 40
    /// The longest body, in characters, that a lock-screen notification shows whole (four lines).
    public static let bodyLimit = 110

    /// The name, a colon and the explanation: a delivery-log line's detail.
    public var detail: String { "\(rawValue): \(explanation)" }
}

/// The warnings of one push: a set of ``PushWarning``s in one word, so that judging every push the
/// gateway accepts costs no allocation.
public struct PushWarnings: Sendable, Equatable, Hashable, Sequence {
    /// One bit per ``PushWarning``, in `allCases` order.
    public var rawValue: UInt16

    /// No warnings.
    public init() { rawValue = 0 }

    /// The given warnings.
    public init(_ warnings: some Sequence<PushWarning>) {
        rawValue = 0
        for warning in warnings { insert(warning) }
    }

    /// Whether there are none (the usual case).
    public var isEmpty: Bool { rawValue == 0 }

    /// Whether `warning` is among them.
    public func contains(_ warning: PushWarning) -> Bool { rawValue & Self.bit(warning) != 0 }

    /// Adds one.
    public mutating func insert(_ warning: PushWarning) { rawValue |= Self.bit(warning) }

    /// Every warning, in `allCases` order, made once (`allCases` makes an array on each use).
    static let all = PushWarning.allCases
    /// Each warning's bit.
    static let bits = Dictionary(uniqueKeysWithValues: all.enumerated().map { ($0.element, UInt16(1) << $0.offset) })

    static func bit(_ warning: PushWarning) -> UInt16 { bits[warning]! }

    /// The warnings in `allCases` order, read from the bits: nothing is allocated (it runs for
    /// every push the delivery log records, nearly all with none).
    public struct Iterator: IteratorProtocol {
        var remaining: UInt16
        /// The next warning.
        public mutating func next() -> PushWarning? {
            guard remaining != 0 else { return nil }
            let index = remaining.trailingZeroBitCount
            remaining &= remaining - 1
            return PushWarnings.all[index]
        }
    }

    /// The warnings in `allCases` order.
    public func makeIterator() -> Iterator { Iterator(remaining: rawValue) }

    /// The first in `allCases` order: the reason a `--strict` gateway answers.
    public var first: PushWarning? { rawValue == 0 ? nil : Self.all[rawValue.trailingZeroBitCount] }

    /// The names, comma-separated: the `herald-warnings` header's value.
    public var headerValue: String {
        // One warning (the usual case, on every answer of a campaign) is its name as it stands: no
        // array and no joined string for each answer.
        if rawValue & (rawValue &- 1) == 0, let only = first { return only.rawValue }
        return map(\.rawValue).joined(separator: ", ")
    }

    /// Reads a `herald-warnings` header's value; names it does not know are left out.
    public init(headerValue: String) {
        self.init(
            headerValue.split(separator: ",").compactMap {
                PushWarning(rawValue: $0.trimmingCharacters(in: .whitespaces))
            })
    }

    /// Judges a push of `pushType` (as given, or as APNs infers it) whose payload `summary` describes.
    public init(summary s: PayloadSummary, pushType: PushType) {
        self.init()
        switch pushType {
        case .background:
            if s.hasUserVisibleContent { insert(.backgroundWithAlert) }
            if !s.contentAvailable { insert(.backgroundWithoutContentAvailable) }
        case .alert:
            if s.contentAvailable, !s.hasUserVisibleContent {
                // A background update sent as an alert: at alert priority, showing nothing.
                insert(.pushTypeMismatch)
            } else if !s.alertHasText, !s.hasSound, !s.hasBadge {
                insert(.alertWithNothingToShow)
            }
        case .liveactivity:
            if !s.hasEvent { insert(.pushTypeMismatch) }
            if !s.hasTimestamp { insert(.liveActivityWithoutTimestamp) }
            if s.startsActivity, !s.hasAttributesType || !s.hasAttributes { insert(.pushToStartWithoutAttributesType) }
        case .widgets, .controls:
            if !s.hasContentChanged { insert(.pushTypeMismatch) }
        default:
            break
        }
        if pushType != .liveactivity, s.hasEvent || s.hasContentState { insert(.pushTypeMismatch) }
        if s.mutableContent, !s.alertHasText { insert(.mutableContentWithoutAlert) }
        if s.hasBadge, !s.badgeIsCount { insert(.badgeNotANumber) }
        if s.titleLength > PushWarning.titleLimit || s.subtitleLength > PushWarning.titleLimit
            || s.bodyLength > PushWarning.bodyLimit
        {
            insert(.alertTruncated)
        }
    }
}
