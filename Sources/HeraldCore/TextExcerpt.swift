/// Text from outside, cut to a length fit for a log line, a stored record or an error that quotes
/// it: a peer may send a megabyte where a name belongs.
public enum TextExcerpt {
    /// `text` itself when it has at most `limit` bytes of UTF-8; otherwise its first `limit`
    /// characters or fewer (whole characters, at most `limit` bytes) and `… (N bytes in all)`.
    public static func of(_ text: some StringProtocol, limit: Int) -> String {
        let size = text.utf8.count
        guard size > limit else { return String(text) }
        var end = text.startIndex
        var bytes = 0
        for index in text.indices {
            let next = text[index].utf8.count
            guard bytes + next <= limit else { break }
            bytes += next
            end = text.index(after: index)
        }
        return String(text[..<end]) + "… (\(size) bytes in all)"
    }
}
