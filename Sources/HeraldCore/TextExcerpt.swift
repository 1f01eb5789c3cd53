/// Text from outside, cut to a length fit for a log line, a stored record or an error that quotes
/// it: a peer may send a megabyte where a name belongs.
public enum TextExcerpt {
    /// `text` itself when it has at most `limit` bytes of UTF-8; otherwise its first `limit`
    /// characters or fewer (whole characters, at most `limit` bytes) and `… (N bytes in all)`.
    public static func of(_ text: some StringProtocol, limit: Int) -> String {
        let size = text.utf8.count
        guard size > limit else { return String(text) }
        return String(prefix(text, bytes: limit)) + "… (\(size) bytes in all)"
    }

    /// `text` in double quotes, as an error quotes a value: whole when it has at most `limit` bytes of
    /// UTF-8; otherwise its start (``prefix(_:bytes:)``) in the quotes and the size after them,
    /// `"abc…" (N bytes in all)`, so that the size is not read as part of the value.
    public static func quoted(_ text: some StringProtocol, limit: Int) -> String {
        let size = text.utf8.count
        guard size > limit else { return "\"\(text)\"" }
        return "\"\(prefix(text, bytes: limit))…\" (\(size) bytes in all)"
    }

    /// The longest start of `text` made of whole characters that has at most `bytes` bytes of UTF-8.
    public static func prefix<S: StringProtocol>(_ text: S, bytes: Int) -> S.SubSequence {
        var end = text.startIndex
        var size = 0
        for index in text.indices {
            let next = text[index].utf8.count
            guard size + next <= bytes else { break }
            size += next
            end = text.index(after: index)
        }
        return text[..<end]
    }
}
