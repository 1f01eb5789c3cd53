import Foundation
import HeraldCore

/// One thing that happened on the device, as the presentation log and the terminal show it.
public struct DeviceLogEntry: Sendable, Hashable, Codable {
    /// What kind of thing.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// A notification was shown (banner, alert, list, sound or badge).
        case presented
        /// The foreground app was asked how to present a notification.
        case willPresent
        /// A push reached an app without any UI.
        case silent
        /// An app's badge changed.
        case badge
        /// An app was started.
        case launched
        /// An app could not be started.
        case launchFailed
        /// An app was brought to the foreground.
        case broughtForward
        /// An app was told of the user's response.
        case response
        /// An app was woken in the background (`content-available` or a background action).
        case backgroundWake
        /// An app finished the work it was given time for.
        case finished
        /// An app did not finish within its time.
        case budgetExceeded
        /// Requests pushed out by the pending limit.
        case dropped
        /// Notifications taken off the screen.
        case removed
        /// An app's service extension was given a notification to rewrite.
        case serviceExtension
        /// A `widgets` or `controls` push: the app's widgets or controls were asked to reload.
        case contentChanged
        /// A `location` push went to the app's location query handler.
        case locationQuery
        /// A push the device took but could not use: its payload unreadable (the reason names the
        /// key), its app not installed, or refused by the notification center.
        case refused
        /// A Live Activity started, changed, ended or was dismissed (`activity` says how it is now),
        /// or an update of it was ignored or held.
        case activity
        /// A Live Activity's update came with an alert.
        case activityAlert
        /// A notification of an app in Scheduled Summary was held for the next summary.
        case held
        /// A notification with nothing to show, hear or count (no text, no sound, no badge).
        case notShown
        /// A Scheduled Summary was delivered (`summary` has it).
        case summary
        /// A Focus came on or went off (`focus` says which is on now).
        case focus
        /// The device locked or unlocked.
        case lock
        /// An app's time in the background ran out: it was told and suspended.
        case suspended
        /// Apps installed or removed, tokens issued, the link's state.
        case system
        /// An app started, stopped, or moved between the foreground and the background (the web
        /// device follows it; the terminal does not print it).
        case appState
    }

    public var date: Date
    public var app: String
    public var kind: Kind
    /// The notification's identifier, when there is one.
    public var identifier: String?
    /// One line for people.
    public var text: String
    /// For `presented`: what was shown.
    public var presentation: PresentationSummary?
    /// For `removed`: the notifications taken off the screen.
    public var identifiers: [String]?
    /// For `activity`: the activity as it is now.
    public var activity: LiveActivity?
    /// For `summary`: the summary and what it holds.
    public var summary: SummaryEntry?
    /// For `focus`: the Focus on now (`nil`: none).
    public var focus: ActiveFocus?
    /// For `lock`: whether the device is locked now.
    public var locked: Bool?

    /// Creates an entry.
    public init(
        date: Date, app: String, kind: Kind, identifier: String? = nil, text: String,
        presentation: PresentationSummary? = nil, identifiers: [String]? = nil, activity: LiveActivity? = nil,
        summary: SummaryEntry? = nil, focus: ActiveFocus? = nil, locked: Bool? = nil
    ) {
        self.summary = summary
        self.focus = focus
        self.locked = locked
        self.activity = activity
        self.date = date
        self.app = app
        self.kind = kind
        self.identifier = identifier
        self.text = text
        self.presentation = presentation
        self.identifiers = identifiers
    }
}

/// What a presentation showed, flattened for people and scripts.
public struct PresentationSummary: Sendable, Hashable, Codable {
    public var title: String
    public var subtitle: String
    public var body: String
    /// The sound that plays: `default`, a file name, or `critical:<name>`; `nil` is silent.
    public var sound: String?
    /// The file that plays, when it is the app's own.
    public var soundFile: String?
    /// Why a named sound plays as the default (missing, not a usable format, 30 s or longer).
    public var soundFallback: String?
    public var badge: Int?
    /// Action identifiers in the default context.
    public var actions: [String]
    /// `banner`, `alert` or `none`.
    public var alertStyle: String
    public var inList: Bool
    public var remote: Bool
    public var late: Bool
    /// The foreground app asked for it (`willPresent`).
    public var requestedByForegroundApp: Bool
    /// Action identifiers in the minimal context (lock screen, banner: up to two).
    public var minimalActions: [String]?
    /// Each action's button title, by identifier.
    public var actionTitles: [String: String]?
    /// `passive`, `active`, `time-sensitive` or `critical`.
    public var interruptionLevel: String?
    /// The app's icon: `AppIcon.png` in its bundle directory, when there is one.
    public var icon: String?
    /// In the lock screen's list.
    public var onLockScreen: Bool?
    /// The Focus that silenced it.
    public var silencedBy: String?
    /// Whether it lights the screen.
    public var wakesScreen: Bool?
    /// Whether it has text; without, it is only a badge or a sound.
    public var hasText: Bool?
    /// Delivered quietly (provisional): Keep and Turn Off are on it.
    public var quiet: Bool?
    /// The legacy alert button's label (`alertAction`), when the app set one.
    public var alertAction: String?
    /// Legacy `hasAction = NO`: one OK button, never opens the app.
    public var noAction: Bool?

    /// Summarises a presentation; `playing` is the sound as resolved on the device
    /// (``DeviceEngine/resolvedSound(for:)``), and without it a named sound is given by its name.
    public init(_ p: Presentation, playing: (sound: ResolvedSound, fallback: String?)? = nil) {
        let content = p.notification.request.content
        title = content.title
        subtitle = content.subtitle
        body = content.body
        switch p.sound {
        case nil: sound = nil
        case .default?: sound = "default"
        case .named(let name)?: sound = name
        case .critical(let name, _)?: sound = "critical:\(name ?? "default")"
        }
        if let playing, let requested = p.sound {
            let critical: String
            if case .critical = requested { critical = "critical:" } else { critical = "" }
            switch playing.sound {
            case .default:
                sound = critical + "default"
            case .file(let path, _):
                sound = critical + (path as NSString).lastPathComponent
                soundFile = path
            }
            soundFallback = playing.fallback
        }
        badge = p.badge
        actions = p.actions.map(\.identifier)
        alertStyle = p.alertStyle.rawValue
        inList = p.inList
        remote = p.notification.isRemote
        late = p.notification.late
        requestedByForegroundApp = p.requestedByForegroundApp
        minimalActions = p.minimalActions.map(\.identifier)
        actionTitles = Dictionary((p.actions + p.minimalActions).map { ($0.identifier, $0.title) }) { first, _ in first
        }
        interruptionLevel = p.level.rawValue
        onLockScreen = p.onLockScreen
        silencedBy = p.silencedBy
        wakesScreen = p.wakesScreen
        hasText = p.hasText
        quiet = p.notification.placement?.quiet == true ? true : nil
        alertAction = content.actionLocKey
        noAction = content.opensApp ? nil : true
    }

    /// `Title — Body (sound default, badge 3, actions: accept | decline)`; for a notification without
    /// text only what happened: `badge 5, sound default`.
    public var line: String {
        var text = [title, subtitle].filter { !$0.isEmpty }.joined(separator: " / ")
        if !body.isEmpty { text += text.isEmpty ? body : " — \(body)" }
        let soundText = sound.map { "sound \($0)" + (soundFallback.map { " (\($0))" } ?? "") }
        if hasText == false || text.isEmpty {
            return [badge.map { "badge \($0)" }, soundText].compactMap { $0 }.joined(separator: ", ")
        }
        var details: [String] = []
        switch interruptionLevel {
        case "passive": details.append("passive")
        case "time-sensitive": details.append("time sensitive")
        case "critical": details.append("critical")
        default: break
        }
        if let silencedBy { details.append("silenced by \(silencedBy)") }
        if quiet == true { details.append("delivered quietly") }
        if alertStyle == "none" && silencedBy == nil && quiet != true && interruptionLevel != "passive" {
            details.append(inList ? "list only" : "not shown")
        }
        details.append(soundText ?? "sound none")
        if let badge { details.append("badge \(badge)") }
        if !actions.isEmpty { details.append("actions: " + actions.joined(separator: " | ")) }
        if noAction == true { details.append("no action") }
        if late { details.append("late") }
        return "\(text) (\(details.joined(separator: ", ")))"
    }
}

/// A delivered Scheduled Summary, as the log, the terminal and the screens show it.
public struct SummaryEntry: Sendable, Hashable, Codable {
    /// The summary's id.
    public var id: String
    /// `Your Morning Summary` and the like.
    public var title: String
    /// Its notifications, most relevant first.
    public var items: [Item]

    /// One notification of the summary.
    public struct Item: Sendable, Hashable, Codable {
        /// The app's bundle id.
        public var app: String
        /// The notification's identifier.
        public var identifier: String
        /// Title and subtitle, localized.
        public var title: String
        /// The body, localized.
        public var body: String
        /// What ordered it in the summary.
        public var relevanceScore: Double
    }

    /// `Your Morning Summary: 3 notifications from Demo and News`.
    public var line: String {
        var names: [String] = []
        for item in items where !names.contains(InstalledApp.displayName(of: item.app)) {
            names.append(InstalledApp.displayName(of: item.app))
        }
        let from =
            names.count <= 1 ? names.first ?? "" : names.dropLast().joined(separator: ", ") + " and " + names.last!
        return "\(title): \(items.count) notification\(items.count == 1 ? "" : "s") from \(from)"
    }
}
