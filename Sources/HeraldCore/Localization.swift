import Foundation

/// A strings table for one language: key → format.
public struct StringsTable: Sendable, Hashable, Codable {
    /// The entries.
    public var entries: [String: String]

    /// Creates a table from entries.
    public init(_ entries: [String: String] = [:]) { self.entries = entries }

    /// Parses a table in Apple's `.strings` format (`"key" = "value";`, with `/* */` and `//` comments and
    /// the escapes `\"`, `\\`, `\n`, `\t`, `\r`, `\Uxxxx`) or a JSON object of strings.
    public init(parsing text: String) throws(LocalizationError) {
        let trimmed = text.drop { $0.isWhitespace || $0 == "\u{FEFF}" }
        if trimmed.first == "{" {
            guard let object = try? JSONDecoder().decode([String: String].self, from: Data(trimmed.utf8)) else {
                throw LocalizationError(message: "JSON strings table must be an object of strings")
            }
            entries = object
            return
        }
        var parser = StringsParser(Array(text.unicodeScalars))
        entries = try parser.parse()
    }

    /// Parses a table from file bytes (UTF-8 or UTF-16 with a byte-order mark, as `.strings` files may be).
    public init(data: Data) throws(LocalizationError) {
        let text: String?
        if data.starts(with: [0xFF, 0xFE]) || data.starts(with: [0xFE, 0xFF]) {
            text = String(data: data, encoding: .utf16)
        } else {
            text = String(data: data, encoding: .utf8)
        }
        guard let text else { throw LocalizationError(message: "strings table is neither UTF-8 nor UTF-16") }
        try self.init(parsing: text)
    }
}

/// A strings table that could not be read.
public struct LocalizationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong, with the line where it applies.
    public var message: String
    /// The message.
    public var description: String { message }
}

private struct StringsParser {
    let s: [Unicode.Scalar]
    var i = 0
    var line = 1
    init(_ s: [Unicode.Scalar]) { self.s = s }

    mutating func parse() throws(LocalizationError) -> [String: String] {
        var result: [String: String] = [:]
        while true {
            try skipSpaceAndComments()
            if i >= s.count { return result }
            let key = try token()
            try skipSpaceAndComments()
            if i < s.count, s[i] == ";" {  // "key"; means key = key
                result[key] = key
                i += 1
                continue
            }
            guard i < s.count, s[i] == "=" else { throw fail("expected '=' after key \"\(key)\"") }
            i += 1
            try skipSpaceAndComments()
            let value = try token()
            try skipSpaceAndComments()
            guard i < s.count, s[i] == ";" else { throw fail("expected ';' after value of \"\(key)\"") }
            i += 1
            result[key] = value
        }
    }

    func fail(_ message: String) -> LocalizationError { LocalizationError(message: "line \(line): \(message)") }

    mutating func skipSpaceAndComments() throws(LocalizationError) {
        while i < s.count {
            let c = s[i]
            if c == "\n" {
                line += 1; i += 1
            } else if c.properties.isWhitespace || c == "\u{FEFF}" {
                i += 1
            } else if c == "/", i + 1 < s.count, s[i + 1] == "*" {
                i += 2
                while i + 1 < s.count, !(s[i] == "*" && s[i + 1] == "/") {
                    if s[i] == "\n" { line += 1 }
                    i += 1
                }
                guard i + 1 < s.count else { throw fail("unterminated comment") }
                i += 2
            } else if c == "/", i + 1 < s.count, s[i + 1] == "/" {
                while i < s.count, s[i] != "\n" { i += 1 }
            } else {
                return
            }
        }
    }

    mutating func token() throws(LocalizationError) -> String {
        guard i < s.count else { throw fail("unexpected end of file") }
        if s[i] != "\"" {  // unquoted identifier
            var out = String.UnicodeScalarView()
            while i < s.count,
                s[i].properties.isAlphabetic || s[i].properties.numericType != nil || s[i] == "_"
                    || s[i] == "." || s[i] == "-"
            {
                out.append(s[i])
                i += 1
            }
            if out.isEmpty { throw fail("expected a quoted string") }
            return String(out)
        }
        i += 1
        var out = String.UnicodeScalarView()
        while i < s.count {
            let c = s[i]
            if c == "\"" {
                i += 1
                return String(out)
            }
            if c == "\n" { line += 1 }
            if c == "\\", i + 1 < s.count {
                let e = s[i + 1]
                i += 2
                switch e {
                case "n": out.append("\n")
                case "t": out.append("\t")
                case "r": out.append("\r")
                case "0": out.append("\0")
                case "U", "u":
                    var hex = ""
                    while hex.count < 4, i < s.count, s[i].properties.isASCIIHexDigit {
                        hex.unicodeScalars.append(s[i])
                        i += 1
                    }
                    guard let v = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(v) else {
                        throw fail("bad \\U escape")
                    }
                    out.append(scalar)
                default: out.append(e)
                }
                continue
            }
            out.append(c)
            i += 1
        }
        throw fail("unterminated string")
    }
}

/// An app's localized strings: one table per language (`en`, `fr`, `pt-BR`, `Base`), as found in its
/// bundle's `<lang>.lproj/Localizable.strings` (or `.json`).
public struct LocalizationBundle: Sendable, Hashable, Codable {
    /// Tables by language identifier.
    public var tables: [String: StringsTable]
    /// The language used when none of the user's languages has the key (the development language).
    public var baseLanguage: String

    /// Creates a bundle.
    public init(tables: [String: StringsTable] = [:], baseLanguage: String = "en") {
        self.tables = tables
        self.baseLanguage = baseLanguage
    }

    /// Looks `key` up in the user's preferred languages in order (each also without its region:
    /// `pt-BR` then `pt`), then in `Base` and the base language; returns the key itself when no table has it.
    public func format(forKey key: String, preferredLanguages: [String]) -> String {
        for language in Self.searchOrder(preferredLanguages, base: baseLanguage) {
            if let value = tables[language]?.entries[key] { return value }
        }
        return key
    }

    /// Resolves a key and fills in its arguments.
    public func localizedString(forKey key: String, arguments: [String], preferredLanguages: [String]) -> String {
        Self.format(format(forKey: key, preferredLanguages: preferredLanguages), arguments: arguments)
    }

    static func searchOrder(_ preferred: [String], base: String) -> [String] {
        var order: [String] = []
        func add(_ language: String) { if !order.contains(language) { order.append(language) } }
        for language in preferred {
            let normalized = language.replacingOccurrences(of: "_", with: "-")
            add(normalized)
            var parts = normalized.split(separator: "-").map(String.init)
            while parts.count > 1 {
                parts.removeLast()
                add(parts.joined(separator: "-"))
            }
        }
        add("Base")
        add(base)
        return order
    }

    /// The most a filled-in format may hold, in bytes of UTF-8 (``format(_:arguments:)``).
    public static let longestText = 16_384

    /// Fills a format's `%@` (next argument), `%n$@` (argument n, from 1) and `%%` (a percent sign).
    /// Numeric specifiers (`%d`, `%i`, `%u`, `%ld`, `%lld`, `%f`, `%s`, with or without `n$`) take the argument
    /// as text, because `loc-args` arrive as strings. Missing arguments become empty text. The text
    /// ends with `…` after ``longestText`` bytes: a key no table has is its own format, and 500
    /// `%1$@` with a 2,000-character argument, within a 4 KB payload, would be a megabyte.
    public static func format(_ format: String, arguments: [String]) -> String {
        var out = ""
        var next = 0
        var chars = format[...]
        while let percent = chars.firstIndex(of: "%") {
            if out.utf8.count > longestText { break }
            out += chars[..<percent]
            chars = chars[chars.index(after: percent)...]
            if chars.first == "%" {
                out += "%"
                chars = chars.dropFirst()
                continue
            }
            // optional positional index n$
            var position: Int?
            let digits = chars.prefix { $0.isASCII && $0.isNumber }
            if !digits.isEmpty, chars.dropFirst(digits.count).first == "$" {
                position = Int(digits)
                chars = chars.dropFirst(digits.count + 1)
            }
            // length modifiers
            var spec = chars.first
            while let c = spec, c == "l" || c == "h" || c == "q" {
                chars = chars.dropFirst()
                spec = chars.first
            }
            guard let c = spec, "@dDiuUxXfFeEgGsSc".contains(c) else {
                out += "%"  // not a specifier we know: keep the text as written
                if let position { out += "\(position)$" }
                continue
            }
            chars = chars.dropFirst()
            let index: Int
            if let position {
                index = position - 1
            } else {
                index = next
                next += 1
            }
            if index >= 0, index < arguments.count { out += arguments[index] }
        }
        out += chars
        guard out.utf8.count > longestText else { return out }
        return String(TextExcerpt.prefix(out, bytes: longestText)) + "…"
    }
}
