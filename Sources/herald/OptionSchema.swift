import ArgumentParser
import Foundation

/// What the configuration file and the environment may set for one command: its long options, read
/// from the command itself (swift-argument-parser's own description of its arguments, and the Swift
/// type of each property), so that a new option is configurable the day it is added.
struct OptionSchema: Sendable {
    /// The kind of value an option takes, as a TOML value.
    enum Kind: Sendable, Equatable {
        /// Text (also names from a fixed list: ArgumentParser checks those).
        case string
        /// A whole number.
        case integer
        /// A number (a whole number is accepted too).
        case number
        /// A flag: `true` or `false`.
        case flag

        /// For messages: "an integer", ….
        var described: String {
            switch self {
            case .string: "a string"
            case .integer: "an integer"
            case .number: "a number"
            case .flag: "true or false"
            }
        }
    }

    /// One option.
    struct Option: Sendable {
        /// The long name without its dashes: `link-ticket-hours`.
        var name: String
        var kind: Kind
        /// Given more than once (`--gateway A --gateway B`); a list in the file.
        var repeating: Bool
        /// The default as the help shows it, if any.
        var defaultValue: String?
        /// Shown redacted by `--print-config`.
        var secret: Bool

        /// `HERALD_LINK_TICKET_HOURS`.
        var environmentName: String {
            "HERALD_" + name.uppercased().replacingOccurrences(of: "-", with: "_")
        }
    }

    /// `herald gateway`, as messages name it.
    var command: String
    /// The options in the order the help lists them.
    var options: [Option]

    /// The option named `name`.
    func option(_ name: String) -> Option? { options.first { $0.name == name } }

    /// The options that are not settings: they are read from the command line only.
    static let commandLineOnly: Set = ["help", "config", "print-config"]

    /// The schema of `type`, whose option groups are `groups` (swift-argument-parser does not show
    /// their types); `secrets` are the names `--print-config` hides.
    static func of(
        _ type: any ParsableArguments.Type, command: String, groups: [any ParsableArguments.Type] = [],
        secrets: Set<String> = []
    ) -> OptionSchema {
        var kinds: [String: (Kind, Bool)] = [:]
        for instance in [type.init()] + groups.map({ $0.init() }) as [any ParsableArguments] {
            for child in Mirror(reflecting: instance).children {
                guard let label = child.label, label.hasPrefix("_") else { continue }
                if let kind = Self.kind(of: String(describing: Swift.type(of: child.value))) {
                    kinds[kebabCase(String(label.dropFirst()))] = kind
                }
            }
        }
        var options: [Option] = []
        for argument in Self.arguments(type) {
            guard let name = argument.names?.first(where: { $0.kind != "short" })?.name,
                !commandLineOnly.contains(name)
            else { continue }
            let (kind, repeating) = kinds[name] ?? (argument.kind == "flag" ? .flag : .string, argument.isRepeating)
            options.append(
                Option(
                    name: name, kind: kind, repeating: repeating || argument.isRepeating,
                    defaultValue: argument.defaultValue, secret: secrets.contains(name)))
        }
        return OptionSchema(command: command, options: options)
    }

    /// The options swift-argument-parser describes for `type` (`--experimental-dump-help`'s JSON).
    private static func arguments(_ type: any ParsableArguments.Type) -> [DumpedArgument] {
        struct Dump: Decodable {
            struct Command: Decodable { var arguments: [DumpedArgument]? }
            var command: Command
        }
        let dump = try? JSONDecoder().decode(Dump.self, from: Data(type._dumpHelp().utf8))
        return dump?.command.arguments ?? []
    }

    private struct DumpedArgument: Decodable {
        struct Name: Decodable {
            var kind: String
            var name: String
        }
        var kind: String
        var names: [Name]?
        var isRepeating: Bool
        var defaultValue: String?
    }

    /// The kind of a property wrapper's type as Mirror names it: `Option<Int>`, `Flag<Bool>`,
    /// `Option<Optional<Double>>`, `Option<Array<String>>`; `nil` for what is not an option.
    static func kind(of wrapper: String) -> (Kind, Bool)? {
        if wrapper.hasPrefix("Flag<") { return (.flag, false) }
        guard wrapper.hasPrefix("Option<"), wrapper.hasSuffix(">") else { return nil }
        var inner = String(wrapper.dropFirst("Option<".count).dropLast())
        var repeating = false
        if inner.hasPrefix("Array<"), inner.hasSuffix(">") {
            inner = String(inner.dropFirst("Array<".count).dropLast())
            repeating = true
        }
        if inner.hasPrefix("Optional<"), inner.hasSuffix(">") {
            inner = String(inner.dropFirst("Optional<".count).dropLast())
        }
        switch inner {
        case "Int", "Swift.Int": return (.integer, repeating)
        case "Double", "Swift.Double": return (.number, repeating)
        default: return (.string, repeating)
        }
    }

    /// A property's name as swift-argument-parser makes its long option: `linkTicketHours` →
    /// `link-ticket-hours`, `gatewayCA` → `gateway-ca`.
    static func kebabCase(_ name: String) -> String {
        let characters = Array(name)
        var result = ""
        for (index, character) in characters.enumerated() {
            if character.isUppercase, index > 0 {
                let previous = characters[index - 1]
                let nextIsLower = index + 1 < characters.count && characters[index + 1].isLowercase
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && nextIsLower) {
                    result.append("-")
                }
            }
            result.append(contentsOf: character.lowercased())
        }
        return result
    }
}
