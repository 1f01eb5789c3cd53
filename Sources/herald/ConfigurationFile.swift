import Foundation
import TOMLKit

/// A setting that is refused, with where it was given: `gateway.toml:7: threads: …` or
/// `HERALD_THREADS: …`.
struct ConfigurationError: Error, CustomStringConvertible {
    var description: String
}

/// Where a setting came from, as `--print-config` and error messages say it.
enum SettingSource: Sendable, Equatable, CustomStringConvertible {
    case commandLine
    case environment(String)
    case file(path: String, line: Int)
    case byDefault

    var description: String {
        switch self {
        case .commandLine: "command line"
        case .environment(let name): "environment \(name)"
        case .file(let path, let line): line > 0 ? "file \(path):\(line)" : "file \(path)"
        case .byDefault: "default"
        }
    }

    /// The prefix of an error about a setting from here (`gateway.toml:7: threads: `); empty for the
    /// command line, whose messages name the option already.
    func prefix(for name: String) -> String {
        switch self {
        case .commandLine, .byDefault: ""
        case .environment(let variable): "\(variable): "
        case .file(let path, let line): line > 0 ? "\(path):\(line): \(name): " : "\(path): \(name): "
        }
    }
}

/// A setting's values as command-line text (one for an option, several for a repeated one; a flag
/// is `true` or `false`), with where they came from.
struct Setting: Sendable {
    var values: [String]
    var source: SettingSource
}

/// The settings of a TOML file: top-level keys named as the command's long options
/// (`link-ticket-hours = 168`), each of the option's kind; a repeated option takes a list.
enum ConfigurationFile {
    /// Reads and checks `path` against `schema`. Throws ``ConfigurationError`` naming the file, the
    /// line and the key for a syntax error, an unknown key, a table or a value of the wrong kind.
    static func read(_ path: String, schema: OptionSchema) throws -> [String: Setting] {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigurationError(
                description:
                    "\(path): cannot read the configuration file: \(CLIFile.why(error, reading: path))")
        }
        return try parse(text, path: path, schema: schema)
    }

    /// ``read(_:schema:)`` on text already read.
    static func parse(_ text: String, path: String, schema: OptionSchema) throws -> [String: Setting] {
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            let at = error.source.begin
            throw ConfigurationError(description: "\(path):\(at.line):\(at.column): \(error.description)")
        }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        var settings: [String: Setting] = [:]
        for key in table.keys.sorted() {
            let line = Self.line(of: key, in: lines)
            let at = line > 0 ? "\(path):\(line): " : "\(path): "
            guard let value = table[key] else { continue }
            if value.type == .table {
                throw ConfigurationError(
                    description:
                        "\(at)\(key): tables are not used; every setting is a top-level key named as its option")
            }
            guard let option = schema.option(key) else {
                var message = "\(at)unknown key '\(key)': \(schema.command) has no --\(key)"
                if let near = Self.nearest(key, in: schema.options.map(\.name)) {
                    message += " (did you mean \(near)?)"
                }
                throw ConfigurationError(description: message)
            }
            let values: [String]
            if let list = value.array {
                guard option.repeating else {
                    throw ConfigurationError(
                        description: "\(at)\(key): takes one value, \(option.kind.described), not a list")
                }
                values = try list.map { try Self.text(of: $0, for: option, at: at) }
            } else {
                values = [try Self.text(of: value, for: option, at: at)]
            }
            settings[key] = Setting(values: values, source: .file(path: path, line: line))
        }
        return settings
    }

    /// A TOML value as the command-line text of `option`, if it is of the option's kind.
    private static func text(of value: any TOMLValueConvertible, for option: OptionSchema.Option, at: String) throws
        -> String
    {
        let wrong = ConfigurationError(
            description: "\(at)\(option.name): expected \(option.kind.described), found \(Self.described(value))")
        switch option.kind {
        case .flag:
            guard let flag = value.bool else { throw wrong }
            return flag ? "true" : "false"
        case .integer:
            guard let number = value.int else { throw wrong }
            return String(number)
        case .number:
            if let number = value.int { return String(number) }
            guard let number = value.double else { throw wrong }
            return String(number)
        case .string:
            guard let string = value.string else { throw wrong }
            return string
        }
    }

    private static func described(_ value: any TOMLValueConvertible) -> String {
        switch value.type {
        case .string: "a string (\"\(value.string ?? "")\")"
        case .int: "an integer (\(value.int.map(String.init) ?? ""))"
        case .double: "a number (\(value.double.map { String($0) } ?? ""))"
        case .bool: "\(value.bool == true ? "true" : "false")"
        case .array: "a list"
        case .table: "a table"
        default: "a \(value.type.rawValue)"
        }
    }

    /// The line (from 1) where `key` is set at the top level, or 0 when it cannot be found (a key
    /// written in an unusual form still gets the file's name).
    static func line(of key: String, in lines: [Substring]) -> Int {
        for (index, line) in lines.enumerated() {
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            for form in [key, "\"\(key)\"", "'\(key)'"] where trimmed.hasPrefix(form) {
                let rest = trimmed.dropFirst(form.count).drop { $0 == " " || $0 == "\t" }
                if rest.hasPrefix("=") || rest.hasPrefix(".") { return index + 1 }
            }
            if trimmed.hasPrefix("[\(key)]") || trimmed.hasPrefix("[\(key).") || trimmed.hasPrefix("[[\(key)]]") {
                return index + 1
            }
        }
        return 0
    }

    /// The name closest to `key` by edit distance, if it is close (a typo).
    static func nearest(_ key: String, in names: [String]) -> String? {
        func distance(_ a: [Character], _ b: [Character]) -> Int {
            var row = Array(0...b.count)
            for i in 1...max(a.count, 1) where !a.isEmpty {
                var previous = row[0]
                row[0] = i
                for j in stride(from: 1, through: b.count, by: 1) {
                    let current = row[j]
                    row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                    previous = current
                }
            }
            return a.isEmpty ? b.count : row[b.count]
        }
        let scored = names.map { ($0, distance(Array(key), Array($0))) }.min { $0.1 < $1.1 }
        guard let (name, score) = scored, score <= max(2, key.count / 4) else { return nil }
        return name
    }
}
