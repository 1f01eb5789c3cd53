/// Options of an action (`UNNotificationActionOptions`).
public struct ActionOptions: OptionSet, Sendable, Hashable, Codable {
    public let rawValue: Int
    /// Creates options from raw bits.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// The user must unlock the device.
    public static let authenticationRequired = ActionOptions(rawValue: 1 << 0)
    /// Shown in red.
    public static let destructive = ActionOptions(rawValue: 1 << 1)
    /// Brings the app to the foreground (legacy activation mode foreground).
    public static let foreground = ActionOptions(rawValue: 1 << 2)
}

/// A text-input action's extra fields (`UNTextInputNotificationAction`).
public struct TextInput: Sendable, Hashable, Codable {
    /// The title of the send button.
    public var buttonTitle: String
    /// The placeholder shown in the empty field.
    public var placeholder: String

    /// Creates text-input fields.
    public init(buttonTitle: String, placeholder: String = "") {
        self.buttonTitle = buttonTitle
        self.placeholder = placeholder
    }
}

/// A button on a notification (`UNNotificationAction`).
public struct NotificationAction: Sendable, Hashable, Codable {
    public var identifier: String
    public var title: String
    public var options: ActionOptions
    /// Set for a text-input action; its response carries the typed text.
    public var textInput: TextInput?

    /// Creates an action. Throws when the identifier or title is empty.
    public init(identifier: String, title: String, options: ActionOptions = [], textInput: TextInput? = nil)
        throws(NotificationError)
    {
        guard !identifier.isEmpty else { throw .invalid("action.identifier", "must not be empty") }
        guard !identifier.hasPrefix("com.apple.UNNotification") else {
            throw .invalid("action.identifier", "\(identifier) is reserved for the system's standard actions")
        }
        self.identifier = identifier
        self.title = title
        self.options = options
        self.textInput = textInput
    }

    /// The options as the system applies them: a foreground action always requires authentication (seed 000).
    public var effectiveOptions: ActionOptions {
        options.contains(.foreground) ? options.union(.authenticationRequired) : options
    }
}

/// Options of a category (`UNNotificationCategoryOptions`).
public struct CategoryOptions: OptionSet, Sendable, Hashable, Codable {
    public let rawValue: Int
    /// Creates options from raw bits.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// Send the dismiss action to the app.
    public static let customDismissAction = CategoryOptions(rawValue: 1 << 0)
    public static let allowInCarPlay = CategoryOptions(rawValue: 1 << 1)
    public static let hiddenPreviewsShowTitle = CategoryOptions(rawValue: 1 << 2)
    public static let hiddenPreviewsShowSubtitle = CategoryOptions(rawValue: 1 << 3)
}

/// Where a notification's actions are shown: the full alert, or a place with room for two (lock screen, banner).
public enum ActionContext: String, Sendable, Codable, CaseIterable {
    case `default`, minimal
}

/// A group of actions a notification can name (`UNNotificationCategory`).
public struct NotificationCategory: Sendable, Hashable, Codable {
    /// The most actions shown in the default context (seed 000).
    public static let maximumDefaultActions = 4
    /// The most actions shown in the minimal context (seed 000).
    public static let maximumMinimalActions = 2

    public var identifier: String
    /// The actions in the default context, in order.
    public var actions: [NotificationAction]
    /// The actions for the minimal context; `nil` shows the first two of `actions`.
    public var minimalActions: [NotificationAction]?
    public var options: CategoryOptions
    /// Replaces the body when previews are hidden.
    public var hiddenPreviewsBodyPlaceholder: String?

    /// Creates a category. Throws when the identifier is empty or an action identifier repeats.
    public init(
        identifier: String, actions: [NotificationAction], minimalActions: [NotificationAction]? = nil,
        options: CategoryOptions = [], hiddenPreviewsBodyPlaceholder: String? = nil
    ) throws(NotificationError) {
        guard !identifier.isEmpty else { throw .invalid("category.identifier", "must not be empty") }
        var seen = Set<String>()
        for action in actions where !seen.insert(action.identifier).inserted {
            throw .invalid("category \(identifier).actions", "action identifier \(action.identifier) appears twice")
        }
        self.identifier = identifier
        self.actions = actions
        self.minimalActions = minimalActions
        self.options = options
        self.hiddenPreviewsBodyPlaceholder = hiddenPreviewsBodyPlaceholder
    }

    /// The actions shown in a context: up to four in the default context; in the minimal context the explicit
    /// minimal list or, without one, the first two of the default list.
    public func actions(for context: ActionContext) -> [NotificationAction] {
        switch context {
        case .default: Array(actions.prefix(Self.maximumDefaultActions))
        case .minimal: Array((minimalActions ?? actions).prefix(Self.maximumMinimalActions))
        }
    }

    /// Finds an action by identifier in either context.
    public func action(withIdentifier identifier: String) -> NotificationAction? {
        actions.first { $0.identifier == identifier } ?? minimalActions?.first { $0.identifier == identifier }
    }
}

/// The system's standard action identifiers.
public enum StandardAction {
    /// The user opened the app from the notification.
    public static let defaultIdentifier = "com.apple.UNNotificationDefaultActionIdentifier"
    /// The user explicitly dismissed the notification.
    public static let dismissIdentifier = "com.apple.UNNotificationDismissActionIdentifier"
}
