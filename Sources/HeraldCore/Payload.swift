import Foundation

/// A payload that failed validation. `key` names the offending key path (for example `aps.badge`),
/// `rule` the rule it broke; `reason` is the APNs reason a gateway answers with, when one applies.
public struct PayloadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The key path that broke the rule (`aps.sound.volume`), or `payload` for the whole body.
    public var key: String
    /// The rule, in words.
    public var rule: String
    /// The APNs reason for this failure, when APNs has one (`PayloadEmpty`, `PayloadTooLarge`, `BadPriority`).
    public var reason: APNsReason?

    /// Creates an error.
    public init(key: String, rule: String, reason: APNsReason? = nil) {
        self.key = key
        self.rule = rule
        self.reason = reason
    }

    /// `key: rule`.
    public var description: String { "\(key): \(rule)" }
}

/// The `alert` of a payload: a plain string (the body) or an object.
public struct PayloadAlert: Sendable, Hashable, Codable {
    public var title: String?
    public var subtitle: String?
    public var body: String?
    public var launchImage: String?
    public var titleLocKey: String?
    public var titleLocArgs: [String]?
    public var subtitleLocKey: String?
    public var subtitleLocArgs: [String]?
    public var locKey: String?
    public var locArgs: [String]?
    /// Legacy: the key of the action button's label.
    public var actionLocKey: String?
    /// Legacy: `"action-loc-key": null`, an alert with a single OK button that does not open the app.
    public var noAction: Bool = false
    public var summaryArg: String?
    public var summaryArgCount: Int?

    /// Creates an alert.
    public init(
        title: String? = nil, subtitle: String? = nil, body: String? = nil, launchImage: String? = nil,
        titleLocKey: String? = nil, titleLocArgs: [String]? = nil, subtitleLocKey: String? = nil,
        subtitleLocArgs: [String]? = nil, locKey: String? = nil, locArgs: [String]? = nil,
        actionLocKey: String? = nil, summaryArg: String? = nil, summaryArgCount: Int? = nil
    ) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.launchImage = launchImage
        self.titleLocKey = titleLocKey
        self.titleLocArgs = titleLocArgs
        self.subtitleLocKey = subtitleLocKey
        self.subtitleLocArgs = subtitleLocArgs
        self.locKey = locKey
        self.locArgs = locArgs
        self.actionLocKey = actionLocKey
        self.summaryArg = summaryArg
        self.summaryArgCount = summaryArgCount
    }
}

/// The `sound` of a payload: a name (`"default"` or a file) or a critical-alert object.
public struct PayloadSound: Sendable, Hashable, Codable {
    /// `default` or a sound file name.
    public var name: String
    /// Critical alert flag (`critical: 1`).
    public var critical: Bool
    /// Volume for critical alerts, 0…1.
    public var volume: Double?

    /// Creates a sound.
    public init(name: String, critical: Bool = false, volume: Double? = nil) {
        self.name = name
        self.critical = critical
        self.volume = volume
    }
}

/// `interruption-level` values.
public enum InterruptionLevel: String, Sendable, Codable, CaseIterable {
    case passive
    case active
    case timeSensitive = "time-sensitive"
    case critical
}

/// Live Activity `event` values.
public enum LiveActivityEvent: String, Sendable, Codable, CaseIterable {
    case start, update, end
}

/// Apple's dictionary of a payload: every key of docs/provider-api.md, typed. Unknown keys are ignored.
public struct APS: Sendable, Hashable, Codable {
    public var alert: PayloadAlert?
    /// `true` when `alert` was a plain string (the body).
    public var alertIsString: Bool = false
    /// Badge number; 0 clears.
    public var badge: Int?
    public var sound: PayloadSound?
    public var threadID: String?
    public var category: String?
    /// `content-available: 1`: a background update.
    public var contentAvailable: Bool = false
    /// `mutable-content: 1`: the device's service extension may rewrite it.
    public var mutableContent: Bool = false
    /// `content-changed: true`: a `widgets` or `controls` push asks the app's widgets or controls
    /// to reload.
    public var contentChanged: Bool = false
    public var targetContentID: String?
    public var interruptionLevel: InterruptionLevel?
    public var relevanceScore: Double?
    public var filterCriteria: String?
    // Live Activities
    public var timestamp: Int?
    public var event: LiveActivityEvent?
    public var contentState: [String: JSONValue]?
    public var staleDate: Int?
    public var dismissalDate: Int?
    public var attributesType: String?
    public var attributes: [String: JSONValue]?
    /// `input-push-token: 1` on a start: the new activity asks for its own push token.
    public var inputPushToken: Bool = false
    /// `input-push-channel` on a start: the new activity subscribes to this channel.
    public var inputPushChannel: String?

    /// Creates an empty `aps`.
    public init() {}

    /// Whether this `aps` asks for anything visible or audible (alert, sound or badge).
    public var hasUserVisibleContent: Bool { alert != nil || sound != nil || badge != nil }
}

/// A parsed and validated APNs payload. The original bytes are kept unchanged in `data`.
public struct Payload: Sendable, Hashable {
    /// The bytes exactly as received.
    public let data: Data
    /// Apple's keys, typed.
    public var aps: APS
    /// Whether the payload had an `aps` dictionary at all.
    public var hasAPS: Bool { apsObject != nil }
    /// The `aps` dictionary as sent, unknown keys included.
    public var apsObject: [String: JSONValue]?
    /// The provider's own keys (everything beside `aps`).
    public var custom: [String: JSONValue]

    /// The whole payload as JSON values: what an app receives as `userInfo`.
    public var dictionary: [String: JSONValue] {
        var all = custom
        if let apsObject { all["aps"] = .object(apsObject) }
        return all
    }

    /// Parses and type-checks a payload. Throws ``PayloadError`` naming the key and the rule.
    public init(data: Data) throws(PayloadError) {
        self.data = data
        if data.isEmpty || data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            throw PayloadError(key: "payload", rule: "must not be empty", reason: .payloadEmpty)
        }
        // One definition of a well-formed payload for the gateway and the device: RFC 8259, one
        // object (the gateway's scanner), before anything is decoded.
        do {
            _ = try data.withUnsafeBytes { raw throws(PayloadSummary.ScanError) in try PayloadSummary.scan(raw) }
        } catch {
            throw PayloadError(key: "payload", rule: "must be a JSON object (\(error))")
        }
        let root: JSONValue
        do {
            root = try JSONValue.parse(data)
        } catch {
            throw PayloadError(key: "payload", rule: "must be valid JSON")
        }
        guard case .object(var members) = root else {
            throw PayloadError(key: "payload", rule: "must be a JSON object, not \(root.typeName)")
        }
        if let apsValue = members.removeValue(forKey: "aps") {
            guard case .object(let apsMembers) = apsValue else {
                throw PayloadError(key: "aps", rule: "must be an object, not \(apsValue.typeName)")
            }
            self.aps = try Self.parseAPS(apsMembers)
            self.apsObject = apsMembers
        } else {
            self.aps = APS()
            self.apsObject = nil
        }
        self.custom = members
    }

    /// Parses a payload from a JSON string.
    public init(json: String) throws(PayloadError) {
        try self.init(data: Data(json.utf8))
    }

    /// The push type APNs infers when `apns-push-type` is absent: `alert` if the payload has an
    /// alert, sound or badge, otherwise `background`.
    public var inferredPushType: PushType { aps.hasUserVisibleContent ? .alert : .background }

    /// Checks the rules between push type, priority and content, and the size limit.
    /// - Parameters:
    ///   - pushType: the push type (inferred when `nil`).
    ///   - priority: the priority (10 when `nil`, 5 for background).
    ///   - sizeLimit: overrides the push type's limit (for the legacy binary interface).
    public func validate(
        pushType: PushType? = nil, priority: PushPriority? = nil, sizeLimit: Int? = nil
    ) throws(PayloadError) {
        let type = pushType ?? inferredPushType
        let limit = sizeLimit ?? type.maximumPayloadSize
        if data.count > limit {
            throw PayloadError(
                key: "payload", rule: "is \(data.count) bytes; the limit for \(type.rawValue) pushes is \(limit)",
                reason: .payloadTooLarge)
        }
        switch type {
        case .background:
            if let priority, priority == .immediate {
                throw PayloadError(
                    key: "apns-priority", rule: "background pushes must use priority 5, not 10", reason: .badPriority)
            }
            if !aps.contentAvailable {
                throw PayloadError(
                    key: "aps.content-available", rule: "background pushes must set content-available to 1")
            }
            if aps.alert != nil || aps.sound != nil || aps.badge != nil {
                let key = aps.alert != nil ? "aps.alert" : aps.sound != nil ? "aps.sound" : "aps.badge"
                throw PayloadError(
                    key: key, rule: "background pushes carry content-available only (no alert, sound or badge)")
            }
        case .liveactivity:
            if aps.timestamp == nil {
                throw PayloadError(key: "aps.timestamp", rule: "is required for liveactivity pushes")
            }
            if aps.event == nil {
                throw PayloadError(key: "aps.event", rule: "is required for liveactivity pushes")
            }
            if aps.event != .end && aps.contentState == nil {
                throw PayloadError(key: "aps.content-state", rule: "is required for liveactivity start and update")
            }
        default:
            break
        }
        if aps.sound?.critical == true, aps.interruptionLevel != nil, aps.interruptionLevel != .critical {
            throw PayloadError(
                key: "aps.interruption-level", rule: "a critical sound requires interruption-level critical")
        }
    }

    // MARK: - Parsing

    static func parseAPS(_ m: [String: JSONValue]) throws(PayloadError) -> APS {
        var aps = APS()
        if let value = m["alert"] {
            switch value {
            case .string(let body):
                aps.alert = PayloadAlert(body: body)
                aps.alertIsString = true
            case .object(let a):
                aps.alert = try parseAlert(a)
            default:
                throw PayloadError(key: "aps.alert", rule: "must be a string or an object, not \(value.typeName)")
            }
        }
        if let value = m["badge"] {
            guard let n = value.intValue, n >= 0 else {
                throw PayloadError(key: "aps.badge", rule: "must be a non-negative integer, not \(describe(value))")
            }
            aps.badge = n
        }
        if let value = m["sound"] {
            switch value {
            case .string(let name):
                guard !name.isEmpty else { throw PayloadError(key: "aps.sound", rule: "must not be an empty string") }
                aps.sound = PayloadSound(name: name)
            case .object(let s):
                let name = try string(s, "name", path: "aps.sound") ?? "default"
                var critical = false
                if let c = s["critical"] {
                    guard let n = c.intValue, n == 0 || n == 1 else {
                        throw PayloadError(key: "aps.sound.critical", rule: "must be 0 or 1, not \(describe(c))")
                    }
                    critical = n == 1
                }
                var volume: Double?
                if let v = s["volume"] {
                    guard let d = v.doubleValue, (0...1).contains(d) else {
                        throw PayloadError(
                            key: "aps.sound.volume", rule: "must be a number from 0 to 1, not \(describe(v))")
                    }
                    volume = d
                }
                aps.sound = PayloadSound(name: name, critical: critical, volume: volume)
            default:
                throw PayloadError(key: "aps.sound", rule: "must be a string or an object, not \(value.typeName)")
            }
        }
        aps.threadID = try string(m, "thread-id", path: "aps")
        aps.category = try string(m, "category", path: "aps")
        aps.contentAvailable = try flag(m, "content-available")
        aps.mutableContent = try flag(m, "mutable-content")
        if let value = m["content-changed"] {
            // Apple's samples send `true`; 1 and 0 are taken as well.
            switch value {
            case .bool(let b): aps.contentChanged = b
            default:
                guard let n = value.intValue, n == 0 || n == 1 else {
                    throw PayloadError(
                        key: "aps.content-changed", rule: "must be true or false, not \(describe(value))")
                }
                aps.contentChanged = n == 1
            }
        }
        aps.targetContentID = try string(m, "target-content-id", path: "aps")
        if let level = try string(m, "interruption-level", path: "aps") {
            guard let parsed = InterruptionLevel(rawValue: level) else {
                throw PayloadError(
                    key: "aps.interruption-level",
                    rule: "must be passive, active, time-sensitive or critical, not \(quoted(level))")
            }
            aps.interruptionLevel = parsed
        }
        if let value = m["relevance-score"] {
            // A notification's score is 0 to 1; a Live Activity's (an `aps` with `event`) any number.
            guard let d = value.doubleValue, m["event"] != nil || (0...1).contains(d) else {
                throw PayloadError(
                    key: "aps.relevance-score", rule: "must be a number from 0 to 1, not \(describe(value))")
            }
            aps.relevanceScore = d
        }
        aps.filterCriteria = try string(m, "filter-criteria", path: "aps")
        aps.timestamp = try integer(m, "timestamp")
        if let event = try string(m, "event", path: "aps") {
            guard let parsed = LiveActivityEvent(rawValue: event) else {
                throw PayloadError(key: "aps.event", rule: "must be start, update or end, not \(quoted(event))")
            }
            aps.event = parsed
        }
        aps.contentState = try object(m, "content-state")
        aps.staleDate = try integer(m, "stale-date")
        aps.dismissalDate = try integer(m, "dismissal-date")
        aps.attributesType = try string(m, "attributes-type", path: "aps")
        aps.attributes = try object(m, "attributes")
        if let value = m["input-push-token"] {
            guard let n = value.intValue, n == 0 || n == 1 else {
                throw PayloadError(key: "aps.input-push-token", rule: "must be 1 (or 0), not \(describe(value))")
            }
            aps.inputPushToken = n == 1
        }
        aps.inputPushChannel = try string(m, "input-push-channel", path: "aps")
        return aps
    }

    static func parseAlert(_ a: [String: JSONValue]) throws(PayloadError) -> PayloadAlert {
        let p = "aps.alert"
        var alert = PayloadAlert()
        alert.title = try string(a, "title", path: p)
        alert.subtitle = try string(a, "subtitle", path: p)
        alert.body = try string(a, "body", path: p)
        alert.launchImage = try string(a, "launch-image", path: p)
        alert.titleLocKey = try string(a, "title-loc-key", path: p)
        alert.titleLocArgs = try strings(a, "title-loc-args", path: p)
        alert.subtitleLocKey = try string(a, "subtitle-loc-key", path: p)
        alert.subtitleLocArgs = try strings(a, "subtitle-loc-args", path: p)
        alert.locKey = try string(a, "loc-key", path: p)
        alert.locArgs = try strings(a, "loc-args", path: p)
        if a["action-loc-key"] == .null {
            // Apple's legacy rule: null shows the alert with one OK button, which does not open the app.
            alert.noAction = true
        } else {
            alert.actionLocKey = try string(a, "action-loc-key", path: p)
        }
        alert.summaryArg = try string(a, "summary-arg", path: p)
        if let value = a["summary-arg-count"] {
            guard let n = value.intValue, n >= 0 else {
                throw PayloadError(
                    key: "\(p).summary-arg-count", rule: "must be a non-negative integer, not \(describe(value))")
            }
            alert.summaryArgCount = n
        }
        return alert
    }

    /// A value an error quotes, cut to 64 bytes: a payload may carry a megabyte where a number
    /// belongs, and the error goes into logs and answers.
    private static func describe(_ value: JSONValue) -> String {
        switch value {
        case .string(let s): quoted(s)
        case .int(let n): "\(n)"
        case .double(let d): "\(d)"
        case .bool(let b): "\(b)"
        default: value.typeName
        }
    }

    /// Text a payload sent, in quotes, as an error quotes it (``TextExcerpt/quoted(_:limit:)``, 64 bytes).
    static func quoted(_ text: String) -> String { TextExcerpt.quoted(text, limit: 64) }

    private static func string(_ m: [String: JSONValue], _ key: String, path: String) throws(PayloadError) -> String? {
        guard let value = m[key] else { return nil }
        guard case .string(let s) = value else {
            throw PayloadError(key: "\(path).\(key)", rule: "must be a string, not \(value.typeName)")
        }
        return s
    }

    private static func strings(_ m: [String: JSONValue], _ key: String, path: String) throws(PayloadError) -> [String]?
    {
        guard let value = m[key] else { return nil }
        guard case .array(let items) = value else {
            throw PayloadError(key: "\(path).\(key)", rule: "must be an array of strings, not \(value.typeName)")
        }
        var result: [String] = []
        for (index, item) in items.enumerated() {
            switch item {
            case .string(let s): result.append(s)
            // Providers often send numbers as loc-args; Apple formats them as text.
            case .int(let n): result.append(String(n))
            case .double(let d): result.append(String(d))
            default:
                throw PayloadError(key: "\(path).\(key)[\(index)]", rule: "must be a string, not \(item.typeName)")
            }
        }
        return result
    }

    private static func flag(_ m: [String: JSONValue], _ key: String) throws(PayloadError) -> Bool {
        guard let value = m[key] else { return false }
        guard let n = value.intValue else {
            throw PayloadError(key: "aps.\(key)", rule: "must be the number 1 (or 0), not \(describe(value))")
        }
        return n != 0
    }

    private static func integer(_ m: [String: JSONValue], _ key: String) throws(PayloadError) -> Int? {
        guard let value = m[key] else { return nil }
        guard let n = value.intValue else {
            throw PayloadError(key: "aps.\(key)", rule: "must be an integer, not \(describe(value))")
        }
        return n
    }

    private static func object(_ m: [String: JSONValue], _ key: String) throws(PayloadError) -> [String: JSONValue]? {
        guard let value = m[key] else { return nil }
        guard case .object(let o) = value else {
            throw PayloadError(key: "aps.\(key)", rule: "must be an object, not \(value.typeName)")
        }
        return o
    }
}
