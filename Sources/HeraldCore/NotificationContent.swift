import Foundation

/// A notification's sound (`UNNotificationSound`).
public enum NotificationSound: Sendable, Hashable, Codable {
    /// The system's default sound.
    case `default`
    /// A file in the app's `Library/Sounds` or its bundle; falls back to the default when unusable.
    case named(String)
    /// A critical alert sound, optionally named, at a volume 0…1.
    case critical(name: String?, volume: Double)

    /// The payload form: `"default"` means the default sound.
    public init(payload: PayloadSound) {
        if payload.critical {
            self = .critical(name: payload.name == "default" ? nil : payload.name, volume: payload.volume ?? 1)
        } else {
            self = payload.name == "default" ? .default : .named(payload.name)
        }
    }
}

/// A file attached to a notification (`UNNotificationAttachment`).
public struct NotificationAttachment: Sendable, Hashable, Codable {
    /// Apple's size limits per kind (UNVERIFIED, from Apple's reference): audio 5 MB, image 10 MB, movie 50 MB.
    public enum Kind: String, Sendable, Codable, CaseIterable {
        case audio, image, movie

        /// The largest file, in bytes.
        public var maximumSize: Int {
            switch self {
            case .audio: 5_000_000
            case .image: 10_000_000
            case .movie: 50_000_000
            }
        }

        /// The kind for a file extension, if it is a type the system recognises.
        public init?(fileExtension: String) {
            switch fileExtension.lowercased() {
            case "aif", "aiff", "aifc", "wav", "caf", "mp3", "m4a", "mp4a": self = .audio
            case "jpg", "jpeg", "png", "gif", "heic": self = .image
            case "mpg", "mpeg", "mp4", "m4v", "mov", "avi": self = .movie
            default: return nil
            }
        }
    }

    public var identifier: String
    /// A file URL.
    public var url: URL
    public var kind: Kind

    /// Creates an attachment; throws Apple's codes for an invalid URL or unrecognised type.
    public init(identifier: String, url: URL) throws(NotificationError) {
        guard url.isFileURL else {
            throw NotificationError(.attachmentInvalidURL, "attachment \(identifier): \(url) is not a file URL")
        }
        guard let kind = Kind(fileExtension: url.pathExtension) else {
            throw NotificationError(
                .attachmentUnrecognizedType,
                "attachment \(identifier): .\(url.pathExtension) is not audio, image or movie")
        }
        self.identifier = identifier
        self.url = url
        self.kind = kind
    }

    /// Checks the file's size against the kind's limit.
    public func validate(fileSize: Int) throws(NotificationError) {
        guard fileSize > 0, fileSize <= kind.maximumSize else {
            throw NotificationError(
                .attachmentInvalidFileSize,
                "attachment \(identifier): \(fileSize) bytes; \(kind.rawValue) files must be 1…\(kind.maximumSize)")
        }
    }
}

/// What a notification shows and carries (`UNNotificationContent`), including the localization keys that
/// the device resolves at presentation time.
public struct NotificationContent: Sendable, Hashable, Codable {
    public var title: String = ""
    public var subtitle: String = ""
    public var body: String = ""
    /// `nil` leaves the app's badge unchanged; 0 clears it.
    public var badge: Int?
    /// `nil` is silent.
    public var sound: NotificationSound?
    public var launchImageName: String = ""
    /// Custom data (`userInfo`); for a remote notification, the whole payload.
    public var userInfo: [String: JSONValue] = [:]
    public var attachments: [NotificationAttachment] = []
    public var categoryIdentifier: String = ""
    public var threadIdentifier: String = ""
    public var targetContentIdentifier: String?
    public var interruptionLevel: InterruptionLevel = .active
    public var relevanceScore: Double = 0
    public var titleLocKey: String?
    public var titleLocArgs: [String] = []
    public var subtitleLocKey: String?
    public var subtitleLocArgs: [String] = []
    public var bodyLocKey: String?
    public var bodyLocArgs: [String] = []
    /// Legacy: the label of the action button (`alertAction`), or its key.
    public var actionLocKey: String?
    /// Legacy `hasAction = NO` (or a push's `"action-loc-key": null`): the alert has one OK button
    /// and never launches the app. `nil` means it has its action, as by default.
    public var hasAction: Bool?
    /// Whom the notification is from, for its stack's line in Notification Center ("and 3 more from
    /// Anna"): `summaryArgument`, a push's `summary-arg`.
    public var summaryArgument: String?
    /// How many items the notification stands for in its stack's line (`summaryArgumentCount`, a
    /// push's `summary-arg-count`); `nil` counts as 1.
    public var summaryArgumentCount: Int?
    /// Set on remote notifications: `content-available`.
    public var contentAvailable: Bool = false
    /// Set on remote notifications: `mutable-content`.
    public var mutableContent: Bool = false

    /// Creates empty content.
    public init() {}

    /// Creates content with the usual fields.
    public init(
        title: String = "", subtitle: String = "", body: String = "", badge: Int? = nil,
        sound: NotificationSound? = nil, categoryIdentifier: String = "", threadIdentifier: String = "",
        userInfo: [String: JSONValue] = [:]
    ) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.badge = badge
        self.sound = sound
        self.categoryIdentifier = categoryIdentifier
        self.threadIdentifier = threadIdentifier
        self.userInfo = userInfo
    }

    /// The content a remote notification shows: alert fields and loc keys, badge, sound, category, thread,
    /// and the whole payload as `userInfo`.
    public init(payload: Payload) {
        let aps = payload.aps
        if let alert = aps.alert {
            title = alert.title ?? ""
            subtitle = alert.subtitle ?? ""
            body = alert.body ?? ""
            launchImageName = alert.launchImage ?? ""
            titleLocKey = alert.titleLocKey
            titleLocArgs = alert.titleLocArgs ?? []
            subtitleLocKey = alert.subtitleLocKey
            subtitleLocArgs = alert.subtitleLocArgs ?? []
            bodyLocKey = alert.locKey
            bodyLocArgs = alert.locArgs ?? []
            actionLocKey = alert.actionLocKey
            if alert.noAction { hasAction = false }
            summaryArgument = alert.summaryArg
            summaryArgumentCount = alert.summaryArgCount
        }
        badge = aps.badge
        sound = aps.sound.map(NotificationSound.init(payload:))
        categoryIdentifier = aps.category ?? ""
        threadIdentifier = aps.threadID ?? ""
        targetContentIdentifier = aps.targetContentID
        interruptionLevel = aps.interruptionLevel ?? (aps.sound?.critical == true ? .critical : .active)
        relevanceScore = aps.relevanceScore ?? 0
        contentAvailable = aps.contentAvailable
        mutableContent = aps.mutableContent
        userInfo = payload.dictionary
    }

    /// Whether there is anything to show or play: a title, subtitle, body (or their keys), a badge or a sound.
    public var hasUserVisibleContent: Bool {
        !title.isEmpty || !subtitle.isEmpty || !body.isEmpty || titleLocKey != nil || subtitleLocKey != nil
            || bodyLocKey != nil || badge != nil || sound != nil
    }

    /// Whether the content has text to show: a title, subtitle or body. Apply it to the localized
    /// content (``localized(with:preferredLanguages:)``): a notification without text is not presented,
    /// only its badge and sound apply (docs/device-engine.md).
    public var hasText: Bool { !title.isEmpty || !subtitle.isEmpty || !body.isEmpty }

    /// Whether the notification has its action (legacy `hasAction`, true unless set to `false`).
    public var opensApp: Bool { hasAction ?? true }

    /// Checks the content's own rules (Apple's codes): badge ≥ 0, relevance 0…1, something to show.
    public func validate() throws(NotificationError) {
        if let badge, badge < 0 {
            throw NotificationError(.badgeInputInvalid, "content.badge: must be 0 or more, not \(badge)")
        }
        if let count = summaryArgumentCount, count < 0 {
            throw .invalid("content.summaryArgumentCount", "must be 0 or more, not \(count)")
        }
        guard (0...1).contains(relevanceScore) else {
            throw .invalid("content.relevanceScore", "must be from 0 to 1, not \(relevanceScore)")
        }
        if case .critical(_, let volume) = sound, !(0...1).contains(volume) {
            throw .invalid("content.sound.volume", "must be from 0 to 1, not \(volume)")
        }
        guard hasUserVisibleContent || !attachments.isEmpty else {
            throw NotificationError(
                .notificationInvalidNoContent, "content: a local notification needs a title, body, badge or sound")
        }
    }

    /// The content with its keys resolved in the user's languages (presentation time, not scheduling time).
    public func localized(with bundle: LocalizationBundle?, preferredLanguages: [String]) -> NotificationContent {
        guard let bundle else { return self }
        var copy = self
        if let key = titleLocKey {
            copy.title = bundle.localizedString(
                forKey: key, arguments: titleLocArgs, preferredLanguages: preferredLanguages)
        }
        if let key = subtitleLocKey {
            copy.subtitle = bundle.localizedString(
                forKey: key, arguments: subtitleLocArgs, preferredLanguages: preferredLanguages)
        }
        if let key = bodyLocKey {
            copy.body = bundle.localizedString(
                forKey: key, arguments: bodyLocArgs, preferredLanguages: preferredLanguages)
        }
        if let key = actionLocKey {
            copy.actionLocKey = bundle.format(forKey: key, preferredLanguages: preferredLanguages)
        }
        return copy
    }
}

/// A request to show a notification: identifier, content and trigger (`nil` = deliver now).
public struct NotificationRequest: Sendable, Hashable, Codable {
    public var identifier: String
    public var content: NotificationContent
    public var trigger: NotificationTrigger?

    /// Creates a request.
    public init(identifier: String, content: NotificationContent, trigger: NotificationTrigger? = nil) {
        self.identifier = identifier
        self.content = content
        self.trigger = trigger
    }

    /// Checks identifier, content and trigger.
    public func validate() throws(NotificationError) {
        guard !identifier.isEmpty else { throw .invalid("request.identifier", "must not be empty") }
        try content.validate()
        try trigger?.validate()
    }
}
