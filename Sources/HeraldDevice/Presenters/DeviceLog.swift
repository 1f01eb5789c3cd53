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

    /// Creates an entry.
    public init(
        date: Date, app: String, kind: Kind, identifier: String? = nil, text: String,
        presentation: PresentationSummary? = nil, identifiers: [String]? = nil, activity: LiveActivity? = nil
    ) {
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
        interruptionLevel = content.interruptionLevel.rawValue
    }

    /// `Title — Body (sound default, badge 3, actions: accept | decline)`.
    public var line: String {
        var text = [title, subtitle].filter { !$0.isEmpty }.joined(separator: " / ")
        if !body.isEmpty { text += text.isEmpty ? body : " — \(body)" }
        if text.isEmpty { text = "(no text)" }
        var details: [String] = []
        if alertStyle == "none" { details.append(inList ? "list only" : "not shown") }
        details.append("sound \(sound ?? "none")" + (soundFallback.map { " (\($0))" } ?? ""))
        if let badge { details.append("badge \(badge)") }
        if !actions.isEmpty { details.append("actions: " + actions.joined(separator: " | ")) }
        if late { details.append("late") }
        return "\(text) (\(details.joined(separator: ", ")))"
    }
}
