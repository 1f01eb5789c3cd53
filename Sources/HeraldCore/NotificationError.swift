/// An error an app can get from the notification center, with Apple's code (`UNError.Code`), or
/// Herald's clear rejection of invalid arguments that Apple's API treats as programmer errors.
public struct NotificationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Apple's error codes (docs/app-link.md), plus Herald's `invalidArgument`.
    public struct Code: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        public let rawValue: Int
        /// Creates a code.
        public init(rawValue: Int) { self.rawValue = rawValue }

        public static let notificationsNotAllowed = Code(rawValue: 1)
        public static let attachmentInvalidURL = Code(rawValue: 100)
        public static let attachmentUnrecognizedType = Code(rawValue: 101)
        public static let attachmentInvalidFileSize = Code(rawValue: 102)
        public static let attachmentNotInDataStore = Code(rawValue: 103)
        public static let attachmentMoveIntoDataStoreFailed = Code(rawValue: 104)
        public static let attachmentCorrupt = Code(rawValue: 105)
        public static let notificationInvalidNoDate = Code(rawValue: 1400)
        public static let notificationInvalidNoContent = Code(rawValue: 1401)
        public static let contentProvidingObjectNotAllowed = Code(rawValue: 1500)
        public static let contentProvidingInvalid = Code(rawValue: 1501)
        public static let badgeInputInvalid = Code(rawValue: 1600)
        /// Herald: an argument Apple's API would trap on (interval ≤ 0, repeating interval < 60 s, …).
        public static let invalidArgument = Code(rawValue: -1)
        /// Herald: the device is locked and the user's answer needs the passcode (an action that
        /// requires authentication, a foreground action, or opening the app).
        public static let passcodeRequired = Code(rawValue: -2)

        /// Apple's name of the code.
        public var description: String {
            switch self {
            case .notificationsNotAllowed: "notificationsNotAllowed"
            case .attachmentInvalidURL: "attachmentInvalidURL"
            case .attachmentUnrecognizedType: "attachmentUnrecognizedType"
            case .attachmentInvalidFileSize: "attachmentInvalidFileSize"
            case .attachmentNotInDataStore: "attachmentNotInDataStore"
            case .attachmentMoveIntoDataStoreFailed: "attachmentMoveIntoDataStoreFailed"
            case .attachmentCorrupt: "attachmentCorrupt"
            case .notificationInvalidNoDate: "notificationInvalidNoDate"
            case .notificationInvalidNoContent: "notificationInvalidNoContent"
            case .contentProvidingObjectNotAllowed: "contentProvidingObjectNotAllowed"
            case .contentProvidingInvalid: "contentProvidingInvalid"
            case .badgeInputInvalid: "badgeInputInvalid"
            case .invalidArgument: "invalidArgument"
            case .passcodeRequired: "passcodeRequired"
            default: "code \(rawValue)"
            }
        }
    }

    /// The code.
    public var code: Code
    /// A message that names the field or the rule.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `name (code): message`.
    public var description: String { "\(code) (\(code.rawValue)): \(message)" }

    /// An invalid argument, naming the field.
    public static func invalid(_ field: String, _ rule: String) -> NotificationError {
        NotificationError(.invalidArgument, "\(field): \(rule)")
    }
}
