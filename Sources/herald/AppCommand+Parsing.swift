import ArgumentParser
import HeraldKit

/// What `herald app` reads from its options: categories and presentation options.
extension AppCommand {
    /// `INVITE=accept+foreground,decline+destructive,reply+text`; `CHAT+customDismiss=reply+text`.
    static func category(_ spec: String) throws -> NotificationCategory {
        let parts = spec.split(separator: "=", maxSplits: 1)
        guard parts.count == 2, !parts[0].isEmpty else {
            throw ValidationError("--category: '\(spec)' is not ID=action,action (e.g. INVITE=accept,decline)")
        }
        let head = parts[0].split(separator: "+").map(String.init)
        var categoryOptions: CategoryOptions = []
        for flag in head.dropFirst() {
            guard flag == "customDismiss" else {
                throw ValidationError("--category: unknown category option '+\(flag)' in '\(parts[0])'")
            }
            categoryOptions.insert(.customDismissAction)
        }
        var actions: [NotificationAction] = []
        for item in parts[1].split(separator: ",") {
            let words = item.split(separator: "+").map(String.init)
            var options: ActionOptions = []
            var text: TextInput?
            for flag in words.dropFirst() {
                switch flag {
                case "foreground": options.insert(.foreground)
                case "destructive": options.insert(.destructive)
                case "auth": options.insert(.authenticationRequired)
                case "text": text = TextInput(buttonTitle: "Send")
                default: throw ValidationError("--category: unknown action option '+\(flag)' in '\(item)'")
                }
            }
            do {
                actions.append(
                    try NotificationAction(
                        identifier: words[0], title: words[0].capitalized, options: options, textInput: text))
            } catch {
                throw ValidationError("--category: \(error.message)")
            }
        }
        do {
            return try NotificationCategory(identifier: head[0], actions: actions, options: categoryOptions)
        } catch {
            throw ValidationError("--category: \(error.message)")
        }
    }

    static func presentationOptions(_ text: String) throws -> PresentationOptions {
        if text == "none" || text.isEmpty { return [] }
        var options: PresentationOptions = []
        for name in text.split(separator: ",") {
            guard let match = PresentationOptions.names.first(where: { $0.0 == name }) else {
                throw ValidationError("--present: unknown option '\(name)' (banner, list, sound, badge, none)")
            }
            options.insert(match.1)
        }
        return options
    }
}
