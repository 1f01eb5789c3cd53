import Testing

/// Swift source reduced to its code, for the architecture test: comments removed and every string
/// literal (`"…"`, `"""…"""`, raw `#"…"#`) emptied to `""`, its interpolations kept as code (what a
/// string interpolates is a real use).
enum SwiftCode {
    static func code(_ text: String) -> String {
        var scanner = Scanner(bytes: Array(text.utf8))
        return String(decoding: scanner.scan(interpolation: false), as: UTF8.self)
    }

    struct Scanner {
        let bytes: [UInt8]
        var i = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        func starts(_ s: String, at j: Int) -> Bool {
            let marker = Array(s.utf8)
            return j + marker.count <= bytes.count && Array(bytes[j..<j + marker.count]) == marker
        }

        /// Code up to the end, or (in an interpolation) up to its closing parenthesis.
        mutating func scan(interpolation: Bool) -> [UInt8] {
            var out: [UInt8] = []
            var depth = 0
            while i < bytes.count {
                let c = bytes[i]
                if interpolation && c == UInt8(ascii: "(") { depth += 1 }
                if interpolation && c == UInt8(ascii: ")") {
                    if depth == 0 {
                        i += 1
                        return out
                    }
                    depth -= 1
                }
                if starts("//", at: i) {
                    while i < bytes.count && bytes[i] != UInt8(ascii: "\n") { i += 1 }
                } else if starts("/*", at: i) {
                    skipBlockComment()
                } else if let hashes = stringStart() {
                    out += skipString(hashes: hashes)
                } else {
                    out.append(c)
                    i += 1
                }
            }
            return out
        }

        /// Block comments nest in Swift.
        mutating func skipBlockComment() {
            var depth = 0
            while i < bytes.count {
                if starts("/*", at: i) {
                    depth += 1
                    i += 2
                } else if starts("*/", at: i) {
                    depth -= 1
                    i += 2
                    if depth == 0 { return }
                } else {
                    i += 1
                }
            }
        }

        /// The number of `#`s when a string literal starts at `i`.
        func stringStart() -> Int? {
            var j = i
            while j < bytes.count && bytes[j] == UInt8(ascii: "#") { j += 1 }
            return j < bytes.count && bytes[j] == UInt8(ascii: "\"") ? j - i : nil
        }

        /// Skips a string literal; returns `""` and the code of its interpolations.
        mutating func skipString(hashes: Int) -> [UInt8] {
            let pounds = String(repeating: "#", count: hashes)
            i += hashes
            let quote = starts("\"\"\"", at: i) ? "\"\"\"" : "\""
            i += quote.count
            let close = quote + pounds
            let escape = "\\" + pounds
            var out: [UInt8] = []
            while i < bytes.count {
                if starts(escape + "(", at: i) {
                    i += escape.utf8.count + 1
                    out += Array(" ".utf8) + scan(interpolation: true) + Array(" ".utf8)
                } else if starts(escape, at: i) {
                    i += escape.utf8.count + 1
                } else if starts(close, at: i) {
                    i += close.utf8.count
                    break
                } else {
                    i += 1
                }
            }
            return out + Array("\"\"".utf8)
        }
    }
}

@Suite struct SwiftCodeTests {
    @Test func commentsAndStringsAreRemovedAndInterpolationsKept() {
        let source = """
            let a = "x \\(Foo.bar("q")) y \\"Esc\\"" + #"raw "Herald" "# // Baz
            /* Qux /* nested */ Still */ Zed \"""
            Multi Line
            \""" End
            """
        #expect(SwiftCode.code(source) == "let a =  Foo.bar(\"\") \"\" + \"\" \n Zed \"\" End")
    }
}
