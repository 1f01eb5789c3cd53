import ArgumentParser
import Foundation
import HeraldGateway

/// The command line a run of `herald gateway`, `herald device` or `herald up` is parsed from: the
/// configuration file's settings and the environment's (`HERALD_…`) written as options ahead of the
/// user's own. swift-argument-parser then checks every value as it checks the command line, and the
/// order gives the precedence: the command line over the environment over the file over the
/// defaults. Any other command's arguments pass through unchanged. Documented in
/// docs/configuration.md.
struct ConfiguredArguments {
    /// What swift-argument-parser parses.
    var arguments: [String]
    /// The configured command's options, if the command is configurable.
    var schema: OptionSchema?
    /// Every setting that is not a default, by option name.
    var settings: [String: Setting] = [:]
    /// `--print-config` was given.
    var printConfig = false
    /// The configuration file read, if any.
    var file: String?

    /// The commands that read a configuration: their path in the arguments, and their schema.
    static func schema(for path: [String]) -> OptionSchema? {
        switch path {
        case ["gateway"]:
            .of(
                GatewayCommand.self, command: "herald gateway", groups: [GatewayPorts.self, ServiceOptions.self],
                secrets: ["database"])
        case ["up"]:
            .of(
                UpCommand.self, command: "herald up", groups: [GatewayPorts.self, ServiceOptions.self],
                secrets: ["database"])
        case ["device"], ["device", "run"]:
            .of(DeviceRun.self, command: "herald device", groups: [ServiceOptions.self], secrets: ["passcode"])
        default: nil
        }
    }

    /// Resolves `arguments` (without the program's name) with `environment`.
    init(_ arguments: [String], environment: [String: String]) throws {
        self.arguments = arguments
        // `herald device` runs the daemon unless another subcommand is named.
        var path = Array(arguments.prefix(1))
        if path == ["device"], arguments.count > 1 {
            if arguments[1] == "run" { path.append("run") } else if !arguments[1].hasPrefix("-") { return }
        }
        // `herald gateway faults …` talks to a running gateway: it is not configured.
        if path == ["gateway"], arguments.count > 1, !arguments[1].hasPrefix("-") { return }
        guard let schema = Self.schema(for: path) else { return }
        self.schema = schema
        let rest = Array(arguments.dropFirst(path.count))
        let given = scan(rest, schema: schema)
        file = file ?? environment["HERALD_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
        let fromFile = try file.map { try ConfigurationFile.read($0, schema: schema) } ?? [:]
        let fromEnvironment = try Self.environmentSettings(environment, schema: schema)
        var synthesized: [String] = []
        for option in schema.options {
            if let values = given[option.name] {
                settings[option.name] = Setting(values: values, source: .commandLine)
                continue
            }
            guard let setting = fromEnvironment[option.name] ?? fromFile[option.name] else { continue }
            settings[option.name] = setting
            if option.kind == .flag {
                if setting.values == ["true"] { synthesized.append("--\(option.name)") }
            } else {
                // `--name=value`: a value that starts with a dash stays a value.
                synthesized += setting.values.map { "--\(option.name)=\($0)" }
            }
        }
        self.arguments = path + synthesized + rest
    }

    /// The options the user's own arguments set (a flag as `true`), and `--config` and `--print-config`.
    private mutating func scan(_ rest: [String], schema: OptionSchema) -> [String: [String]] {
        var given: [String: [String]] = [:]
        var index = 0
        while index < rest.count {
            let token = rest[index]
            index += 1
            if token == "--" { break }
            guard token.hasPrefix("--") else { continue }
            var name = String(token.dropFirst(2))
            var inline: String?
            if let equals = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if name == "print-config" {
                printConfig = true
                continue
            }
            let takesValue = name == "config" || (schema.option(name).map { $0.kind != .flag } ?? false)
            var value = inline
            if takesValue, value == nil, index < rest.count {
                value = rest[index]
                index += 1
            }
            if name == "config" {
                file = value
            } else if let option = schema.option(name) {
                given[name, default: []].append(option.kind == .flag ? "true" : value ?? "")
            }
        }
        return given
    }

    /// The settings `HERALD_<OPTION>` variables give: text as it is, numbers and flags checked, a
    /// repeated option's values separated by commas. An empty variable is not a setting.
    static func environmentSettings(_ environment: [String: String], schema: OptionSchema) throws -> [String: Setting] {
        var settings: [String: Setting] = [:]
        for option in schema.options {
            let variable = option.environmentName
            guard let text = environment[variable], !text.isEmpty else { continue }
            let pieces =
                option.repeating
                ? text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                : [text]
            let values = try pieces.map { piece -> String in
                switch option.kind {
                case .string: return piece
                case .integer:
                    guard Int(piece) != nil else {
                        throw ConfigurationError(description: "\(variable): expected an integer, not '\(piece)'")
                    }
                    return piece
                case .number:
                    guard let number = Double(piece), number.isFinite else {
                        throw ConfigurationError(description: "\(variable): expected a number, not '\(piece)'")
                    }
                    return piece
                case .flag:
                    switch piece.lowercased() {
                    case "true", "1", "yes", "on": return "true"
                    case "false", "0", "no", "off": return "false"
                    default:
                        throw ConfigurationError(description: "\(variable): expected true or false, not '\(piece)'")
                    }
                }
            }
            settings[option.name] = Setting(values: values, source: .environment(variable))
        }
        return settings
    }

    /// `error`'s message with where the setting it names came from, when that was the file or the
    /// environment (`gateway.toml:7: threads: --threads must be at least 1`); `nil` otherwise.
    func attributed(_ message: String) -> String? {
        guard schema != nil else { return nil }
        for match in message.matches(of: /--([a-z0-9][a-z0-9-]*)/) {
            let name = String(match.output.1)
            guard let source = settings[name]?.source, source != .commandLine else { continue }
            return source.prefix(for: name) + message
        }
        return nil
    }
}
