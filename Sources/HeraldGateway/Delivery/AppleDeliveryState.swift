import Foundation
import HeraldCore

/// The states Apple's Push Notifications Console reports a notification in (its Metrics tab and
/// delivery log), onto which Herald maps the steps of its own delivery log (docs/admin-api.md,
/// "Apple's delivery states").
public enum AppleDeliveryState: String, CaseIterable, Sendable, Codable {
    /// Accepted by the provider API (Herald's `accepted`).
    case received = "received"
    /// Delivered to the device at once (Herald's `delivered`, then `acknowledged`).
    case delivered = "delivered"
    /// Delivered to the device from storage, after it came back (`delivered`, "from the offline store").
    case deliveredFromStorage = "delivered-from-storage"
    /// Stored because the device is offline or did not acknowledge it (`stored`).
    case storedDeviceOffline = "stored-device-offline"
    /// Stored for power considerations: priority 5 waiting for its batch, priority 1 waiting for
    /// other traffic, a background push beyond the budget (`stored`, "held").
    case storedPowerConsiderations = "stored-power-considerations"
    /// Discarded at the device: its app is not installed (`refused`, "not installed").
    case discardedTokenUnregistered = "discarded-token-unregistered"
    /// Discarded from storage: the token became invalid before delivery (`discarded`).
    case discardedTokenUnregisteredFromStorage = "discarded-token-unregistered-from-storage"
    /// Discarded: expired in storage, or expiration 0 while the device was offline (`discarded`).
    case discardedExpired = "discarded-expired"
    /// Discarded at the device: it would not present it (`refused` for any other reason).
    case discardedDisabled = "discarded-disabled"
    /// The same, for a push delivered from storage.
    case discardedDisabledFromStorage = "discarded-disabled-from-storage"

    /// The state as Apple's console names it.
    public var title: String {
        switch self {
        case .received: "Received by APNs"
        case .delivered: "Delivered to Device"
        case .deliveredFromStorage: "Delivered to Device (From Storage)"
        case .storedDeviceOffline: "Stored - Device Offline"
        case .storedPowerConsiderations: "Stored - Power Considerations"
        case .discardedTokenUnregistered: "Discarded - Token Unregistered"
        case .discardedTokenUnregisteredFromStorage: "Discarded - Token Unregistered (From Storage)"
        case .discardedExpired: "Discarded - Expired"
        case .discardedDisabled: "Discarded - Disabled"
        case .discardedDisabledFromStorage: "Discarded - Disabled (From Storage)"
        }
    }

    /// The state a delivery-log step speaks of, if any (`acknowledged`, `replaced`, `warning` and
    /// `rejected` have none: Apple's states begin with a push received and end at the device).
    public init?(_ event: DeliveryEvent) {
        let detail = event.detail ?? ""
        switch event.kind {
        case .accepted: self = .received
        case .delivered:
            if detail.isEmpty {
                self = .delivered
            } else if detail.hasPrefix(Self.fromStorage) {
                self = .deliveredFromStorage
            } else {
                return nil  // not acknowledged in time: the `stored` step that follows says where it went
            }
        case .stored: self = detail.contains(Self.heldForPower) ? .storedPowerConsiderations : .storedDeviceOffline
        case .discarded:
            if detail.hasPrefix("its token") {
                self = .discardedTokenUnregisteredFromStorage
            } else if detail.contains("the token is no longer valid") {
                self = .discardedTokenUnregistered  // the legacy binary interface's silent 410
            } else {
                self = .discardedExpired
            }
        case .refused:
            let fromStorage = detail.contains(Self.fromStorage)
            if detail.contains("is not installed") {
                self = fromStorage ? .discardedTokenUnregisteredFromStorage : .discardedTokenUnregistered
            } else {
                self = fromStorage ? .discardedDisabledFromStorage : .discardedDisabled
            }
        case .acknowledged, .replaced, .warning, .rejected: return nil
        }
    }

    /// What a `delivered` (or `refused`) step's detail says of a push that came from the offline store.
    static let fromStorage = "from the offline store"
    /// What a `stored` step's detail says of a push the link's QoS held back.
    static let heldForPower = "held for power considerations"
}

/// How many pushes of an app reached a state on a day (UTC): what the console's Metrics view shows
/// and `GET /deliveries/metrics` answers.
public struct DeliveryCount: Sendable, Codable, Equatable, Hashable {
    /// The day, `YYYY-MM-DD` in UTC.
    public var day: String
    /// The app's bundle id.
    public var app: String
    /// The state.
    public var state: AppleDeliveryState
    /// How many.
    public var count: Int

    /// Creates a count.
    public init(day: String, app: String, state: AppleDeliveryState, count: Int) {
        self.day = day
        self.app = app
        self.state = state
        self.count = count
    }

    /// The key counts are summed by.
    public struct Key: Sendable, Hashable {
        /// The day, `YYYY-MM-DD` in UTC.
        public var day: String
        /// The app's bundle id.
        public var app: String
        /// The state.
        public var state: AppleDeliveryState
    }

    /// The UTC day of `date`, `YYYY-MM-DD`.
    public static func day(of date: Date) -> String {
        let civil = Civil.date(Int64((date.timeIntervalSince1970 / 86400).rounded(.down)))
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(civil.year)-\(two(civil.month))-\(two(civil.day))"
    }

    /// The app a push of `pushType` to `topic` is for: the topic without that push type's suffix
    /// (`.voip`, `.push-type.liveactivity`, …), which the provider API checked it carries. (An app
    /// whose own bundle id ends like a suffix, `com.example.voip`, is not cut short.)
    public static func app(ofTopic topic: String, pushType: PushType) -> String {
        guard let suffix = pushType.topicSuffix, !suffix.isEmpty, topic.hasSuffix(suffix),
            topic.utf8.count > suffix.utf8.count
        else { return topic }
        return String(topic.dropLast(suffix.count))
    }
}

/// `GET /delivery-metrics`: pushes by day, app and Apple's delivery state, from `from` to `to`
/// (UTC days; a day without pushes has no rows), and every state with Apple's name for it.
struct DeliveryMetricsView: Codable {
    struct StateView: Codable {
        var name: AppleDeliveryState
        var title: String
    }
    var from: String
    var to: String
    var states = AppleDeliveryState.allCases.map { StateView(name: $0, title: $0.title) }
    var counts: [DeliveryCount]

    init(from: String, to: String, counts: [DeliveryCount]) {
        self.from = from
        self.to = to
        self.counts = counts
    }
}

/// A delivery-log step as the admin API answers it: the step, and the Apple state it maps onto.
struct DeliveryEventView: Codable {
    var apnsID: String
    var uniqueID: String?
    var kind: DeliveryEvent.Kind
    var at: Date
    var detail: String?
    var state: AppleDeliveryState?

    init(_ event: DeliveryEvent) {
        apnsID = event.apnsID
        uniqueID = event.uniqueID
        kind = event.kind
        at = event.at
        // A warning's line keeps only its name: what it means is added here.
        detail =
            event.kind == .warning
            ? event.detail.flatMap(PushWarning.init(rawValue:))?.detail ?? event.detail : event.detail
        state = AppleDeliveryState(event)
    }
}
