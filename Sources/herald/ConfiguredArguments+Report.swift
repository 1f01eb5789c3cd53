import Foundation
import HeraldGateway

extension ConfiguredArguments {
    /// What `--print-config` prints: every option with its effective value and where it came from,
    /// secrets redacted, as a TOML file (a value not set is a comment), so the output can be kept as
    /// a configuration file.
    func report() -> String {
        guard let schema else { return "" }
        var text = """
            # \(schema.command): the effective configuration. Each value comes from, first found: the command
            # line, the environment (HERALD_…), the configuration file, the default.
            # configuration file: \(file ?? "none (--config FILE or HERALD_CONFIG)")

            """
        for option in schema.options {
            let setting = settings[option.name]
            let values: [String]
            let source: SettingSource
            if let setting {
                (values, source) = (setting.values, setting.source)
            } else if option.kind == .flag {
                (values, source) = (["false"], .byDefault)
            } else if let value = option.defaultValue {
                (values, source) = (option.repeating ? [] : [value], .byDefault)
            } else {
                text += "# \(option.name): not set\n"
                continue
            }
            let shown = option.secret ? values.map { Self.redacted($0, option: option.name) } : values
            let assignment = "\(option.name) = \(Self.toml(shown, option: option))"
            let padding = String(repeating: " ", count: max(1, 44 - assignment.count))
            text += assignment + padding + "# \(source)\(option.secret ? " (secret hidden)" : "")\n"
        }
        return text
    }

    /// A secret as `--print-config` shows it: a database URL without its password, anything else
    /// as asterisks.
    static func redacted(_ value: String, option: String) -> String {
        option == "database" ? PostgresURL.redacted(value) : String(repeating: "*", count: min(value.count, 8))
    }

    /// Values as a TOML value of the option's kind.
    static func toml(_ values: [String], option: OptionSchema.Option) -> String {
        func one(_ value: String) -> String {
            switch option.kind {
            case .integer, .number: value
            case .flag: value == "true" ? "true" : "false"
            case .string: quoted(value)
            }
        }
        if option.repeating { return "[" + values.map(one).joined(separator: ", ") + "]" }
        return values.last.map(one) ?? "\"\""
    }

    /// A TOML basic string.
    static func quoted(_ value: String) -> String {
        var text = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\t": text += "\\t"
            case "\r": text += "\\r"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    text += String(format: "\\u%04X", scalar.value)
                } else {
                    text.unicodeScalars.append(scalar)
                }
            }
        }
        return text + "\""
    }
}
