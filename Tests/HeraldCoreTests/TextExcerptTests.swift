import HeraldCore
import Testing

/// Text from outside, cut to a length before it is logged, stored or quoted back.
@Suite struct TextExcerptTests {
    @Test func shortTextIsKeptAndLongTextCutAtWholeCharacters() {
        #expect(TextExcerpt.of("com.example.app", limit: 255) == "com.example.app")
        #expect(TextExcerpt.of(String(repeating: "a", count: 255), limit: 255) == String(repeating: "a", count: 255))
        #expect(
            TextExcerpt.of(String(repeating: "a", count: 256), limit: 255)
                == String(repeating: "a", count: 255) + "… (256 bytes in all)")
        // Two-byte characters: never half of one; the limit is in bytes.
        #expect(TextExcerpt.of("ééé", limit: 5) == "éé… (6 bytes in all)")
        // A character of several scalars stays whole or goes whole.
        let family = "👨‍👩‍👧"
        #expect(TextExcerpt.of("a" + family, limit: 4) == "a… (\(1 + family.utf8.count) bytes in all)")
        #expect(TextExcerpt.of(Substring("abcdef"), limit: 3) == "abc… (6 bytes in all)")
        #expect(TextExcerpt.of("abc", limit: 0) == "… (3 bytes in all)")
    }

    /// Quoted, a cut value keeps its size outside the quotes, where it cannot be read as the value's.
    @Test func aQuotedExcerptHasItsSizeAfterTheQuotes() {
        #expect(TextExcerpt.quoted("pause", limit: 64) == #""pause""#)
        #expect(TextExcerpt.quoted("ééé", limit: 5) == #""éé…" (6 bytes in all)"#)
    }
}
