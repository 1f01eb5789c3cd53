import Foundation
import HeraldCore

/// One step in a push's life, for the delivery log (lookup by `apns-id` or `apns-unique-id`).
public struct DeliveryEvent: Sendable, Codable, Equatable {
    /// The steps.
    public enum Kind: String, Sendable, Codable, CaseIterable {
        /// The provider API answered 200.
        case accepted
        /// Written to the offline store.
        case stored
        /// Sent down the device link.
        case delivered
        /// The device acknowledged it.
        case acknowledged
        /// Replaced in the offline store by a newer push (same topic or collapse id).
        case replaced
        /// Dropped: expired, expiration 0 while offline, or the token became invalid.
        case discarded
        /// The device acknowledged it but could not use it (the detail says why, naming the key
        /// when the payload is at fault).
        case refused
        /// Accepted, but Apple would handle it quietly in a way its sender probably did not mean: one
        /// line per warning, beside `accepted`. The log keeps the ``PushWarning``'s name as the
        /// detail; the admin API adds what Apple does (``PushWarning/detail``).
        case warning
        /// The provider API refused it (400, 403, 410, 429, …): the detail gives the status and
        /// reason, what it was for, and why when the gateway knows more than the reason says.
        case rejected
    }
    /// `apns-id`.
    public var apnsID: String
    /// `apns-unique-id`.
    public var uniqueID: String?
    /// The step.
    public var kind: Kind
    /// When it happened.
    public var at: Date
    /// Extra detail (the device, why it was discarded, …).
    public var detail: String?

    /// Creates an event.
    public init(apnsID: String, uniqueID: String?, kind: Kind, at: Date, detail: String? = nil) {
        self.apnsID = apnsID
        self.uniqueID = uniqueID
        self.kind = kind
        self.at = at
        self.detail = detail
    }
}

extension DeliveryEvent {
    /// Appends the event's JSON to `w`; without `identifiers`, only its kind, time and detail.
    func write(to w: inout JSONWriter, identifiers: Bool) {
        w.raw("{")
        if identifiers {
            w.raw(#""apnsID":"#)
            w.string(apnsID)
            if let uniqueID {
                w.raw(#","uniqueID":"#)
                w.string(uniqueID)
            }
            w.raw(",")
        }
        w.raw(#""kind":"#)
        w.string(kind.rawValue)
        w.raw(#","at":"#)
        w.integer(Int64((at.timeIntervalSince1970 * 1000).rounded()))
        if let detail {
            w.raw(#","detail":"#)
            w.string(detail)
        }
        w.raw("}")
    }

    /// A run of events of one push (accepted, delivered, acknowledged come together) as the SQLite
    /// store keeps it, written by hand as this runs for every push: a JSON array of the events
    /// without their identifiers, which the row's columns hold once for all of them.
    static func writeRun(_ events: ArraySlice<DeliveryEvent>, to w: inout JSONWriter) {
        w.raw("[")
        for (i, event) in zip(events.indices, events) {
            if i > events.startIndex { w.raw(",") }
            event.write(to: &w, identifiers: false)
        }
        w.raw("]")
    }
}

/// An element of a delivery-log record as stored: the identifiers are absent from runs (the row
/// has them) and present in records written before runs were.
struct StoredDeliveryEvent: Decodable {
    var apnsID: String?
    var uniqueID: String?
    var kind: DeliveryEvent.Kind
    var at: Date
    var detail: String?

    /// The event, taking the identifiers the record leaves out from its row.
    func event(apnsID rowApnsID: String, uniqueID rowUniqueID: String?) -> DeliveryEvent {
        DeliveryEvent(
            apnsID: apnsID ?? rowApnsID, uniqueID: apnsID == nil ? rowUniqueID : uniqueID, kind: kind, at: at,
            detail: detail)
    }
}

/// A push that went down a device's link and was acknowledged before the provider's answer: the
/// common case by far, so its three delivery-log steps travel as one value, without an array of
/// events or a detail string built for each push, and is stored as a compact record
/// (``DeliveredRecord``). Its ``events`` are what the log shows.
public struct DeliveredPush: Sendable, Equatable {
    /// `apns-id`.
    public var apnsID: String
    /// `apns-unique-id` (development only).
    public var uniqueID: String?
    /// The device it went to.
    public var deviceID: String
    /// `apns-topic` as sent.
    public var topic: String
    /// The provider's identifier, for a notification from the legacy binary interface.
    public var binaryIdentifier: UInt32?
    /// When the provider API accepted it.
    public var acceptedAt: Date
    /// When it was written to the device.
    public var deliveredAt: Date
    /// When the device acknowledged it.
    public var acknowledgedAt: Date
    /// What Apple would do quietly with it: a `warning` line each, after `accepted`.
    public var warnings: PushWarnings
    /// Its push type (for the counts: which app its topic is of).
    public var pushType: PushType

    /// Creates a record.
    public init(
        apnsID: String, uniqueID: String?, deviceID: String, topic: String, binaryIdentifier: UInt32? = nil,
        acceptedAt: Date, deliveredAt: Date, acknowledgedAt: Date, warnings: PushWarnings = PushWarnings(),
        pushType: PushType = .alert
    ) {
        self.warnings = warnings
        self.pushType = pushType
        self.apnsID = apnsID
        self.uniqueID = uniqueID
        self.deviceID = deviceID
        self.topic = topic
        self.binaryIdentifier = binaryIdentifier
        self.acceptedAt = acceptedAt
        self.deliveredAt = deliveredAt
        self.acknowledgedAt = acknowledgedAt
    }

    /// An accepted event's detail, "device D, topic T[, binary interface identifier N]", built in
    /// one allocation.
    static func acceptedDetail(device: String, topic: String, binaryIdentifier: UInt32?) -> String {
        var detail = ""
        detail.reserveCapacity(16 + device.utf8.count + topic.utf8.count + 40)
        detail += "device "
        detail += device
        detail += ", topic "
        detail += topic
        if let binaryIdentifier {
            detail += ", binary interface identifier "
            detail += String(binaryIdentifier)
        }
        return detail
    }

    /// Its delivery-log steps: accepted, a warning each, delivered, acknowledged.
    public var events: [DeliveryEvent] {
        Self.events(
            apnsID: apnsID, uniqueID: uniqueID, deviceID: deviceID, topic: topic, binaryIdentifier: binaryIdentifier,
            acceptedAt: acceptedAt, deliveredAt: deliveredAt, acknowledgedAt: acknowledgedAt,
            warnings: warnings.map(\.rawValue))
    }

    /// The steps of a delivered push from its fields (``events``, and a record read back, whose
    /// warnings are the names it kept).
    static func events(
        apnsID: String, uniqueID: String?, deviceID: String, topic: String, binaryIdentifier: UInt32?,
        acceptedAt: Date, deliveredAt: Date, acknowledgedAt: Date, warnings: [String]
    ) -> [DeliveryEvent] {
        [
            DeliveryEvent(
                apnsID: apnsID, uniqueID: uniqueID, kind: .accepted, at: acceptedAt,
                detail: acceptedDetail(device: deviceID, topic: topic, binaryIdentifier: binaryIdentifier))
        ]
            + warnings.map {
                DeliveryEvent(apnsID: apnsID, uniqueID: uniqueID, kind: .warning, at: acceptedAt, detail: $0)
            } + [
                DeliveryEvent(apnsID: apnsID, uniqueID: uniqueID, kind: .delivered, at: deliveredAt),
                DeliveryEvent(apnsID: apnsID, uniqueID: uniqueID, kind: .acknowledged, at: acknowledgedAt),
            ]
    }
}

/// The detail of a `rejected` line: "STATUS REASON; device D, topic T, token X; why", each part
/// present when known (the device when the token is one of this gateway's, the why when the
/// gateway knows more than the reason says, as for a body that is no JSON object).
struct RejectedDetail: Equatable {
    var status: Int
    var reason: String
    var device: String?
    var topic: String?
    var token: String?
    var why: String?

    init(response: ProviderResponse, refused: RefusedPush) {
        status = response.status
        reason = response.reasonText ?? ""
        device = refused.device
        topic = refused.topic
        token = refused.token
        why = response.note
    }

    var text: String {
        var target: [String] = []
        if let device { target.append("device " + device) }
        if let topic { target.append("topic " + topic) }
        if let token { target.append("token " + token) }
        // A connection a fault rule closed instead of answering.
        var text = status == 0 ? "closed" : "\(status) \(reason)"
        if !target.isEmpty || why != nil { text += "; " + target.joined(separator: ", ") }
        if let why { text += "; " + why }
        return text
    }

    /// Reads ``text`` back (the history's device and topic).
    init?(text: String) {
        let parts = text.split(separator: "; ", maxSplits: 2, omittingEmptySubsequences: false)
        let head = parts[0].split(separator: " ", maxSplits: 1)
        if head.first == "closed" {
            status = 0
            reason = ""
        } else {
            guard head.count == 2, let status = Int(head[0]) else { return nil }
            self.status = status
            reason = String(head[1])
        }
        if parts.count > 1 {
            for field in parts[1].split(separator: ", ") {
                if field.hasPrefix("device ") { device = String(field.dropFirst(7)) }
                if field.hasPrefix("topic ") { topic = String(field.dropFirst(6)) }
                if field.hasPrefix("token ") { token = String(field.dropFirst(6)) }
            }
        }
        if parts.count > 2 { why = String(parts[2]) }
    }
}
