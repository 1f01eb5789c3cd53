import Foundation
import Testing

@testable import HeraldCore

/// The hand-written JSON of the hot paths, checked against Foundation.
@Suite struct JSONBytesTests {
    /// SplitMix64, for reproducible random inputs.
    struct Random {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(bound))
        }
    }

    static let awkward: [String] = [
        "", "plain", "quote \" and backslash \\", "line\nfeed\rreturn\ttab", "\u{0}\u{1}\u{1F}\u{7F}", "é ü ß",
        "emoji 🎉 and 中文", "slash / stays",
    ]

    @Test func stringsRoundTripThroughFoundation() throws {
        for text in Self.awkward {
            var w = JSONWriter()
            w.raw("[")
            w.string(text)
            w.raw("]")
            let decoded = try JSONSerialization.jsonObject(with: Data(w.bytes)) as? [String]
            #expect(decoded == [text], "\(text.debugDescription)")
        }
    }

    @Test func integersAndHexAreWhatFoundationReads() throws {
        for value: Int64 in [0, 1, -1, 9, 10, 1_800_000_000, .max, .min] {
            var w = JSONWriter()
            w.raw("[")
            w.integer(value)
            w.raw("]")
            #expect(String(decoding: w.bytes, as: UTF8.self) == "[\(value)]")
        }
        var w = JSONWriter()
        w.hex([0x00, 0x0F, 0xA0, 0xFF])
        #expect(String(decoding: w.bytes, as: UTF8.self) == #""000fa0ff""#)
    }

    @Test func base64IsFoundations() {
        var random = Random(state: 11)
        for length in 0..<70 {
            let data = Data((0..<length).map { _ in UInt8(random.next(256)) })
            var w = JSONWriter()
            w.base64(data)
            #expect(String(decoding: w.bytes, as: UTF8.self) == "\"" + data.base64EncodedString() + "\"")
        }
    }

    @Test func theFlatReaderReadsWhatItShould() {
        let text = #" { "a" : "x\"y\\z\/\u00e9\ud83c\udf89" , "n":-42, "z":0, "list":[ "p" ,"q"], "e":[] } "#
        let parsed = Data(text.utf8).withUnsafeBytes { FlatJSONObject.parse($0) }
        #expect(
            parsed == [
                "a": .string("x\"y\\z/é🎉"), "n": .integer(-42), "z": .integer(0), "list": .strings(["p", "q"]),
                "e": .strings([]),
            ])
        #expect(Data("{}".utf8).withUnsafeBytes { FlatJSONObject.parse($0) } == [:])
    }

    @Test func theFlatReaderDeclinesWhatItDoesNotHandle() {
        let declined = [
            #"{"a":{"b":1}}"#, #"{"a":true}"#, #"{"a":null}"#, #"{"a":1.5}"#, #"{"a":1e3}"#, #"{"a":01}"#,
            #"{"a":1,"a":2}"#, #"{"a":[1]}"#, #"{"a":"x"} x"#, #"{"a":"\ud83c"}"#, #"{"a":"\q"}"#, "{\"a\":\"\n\"}",
            #"{"a":99999999999999999999}"#, #"["a"]"#, #"{"a" "b"}"#, #"{"a":"b",}"#, "", #"{"a":"b""#,
        ]
        for text in declined {
            #expect(Data(text.utf8).withUnsafeBytes { FlatJSONObject.parse($0) } == nil, "\(text)")
        }
        let invalidUTF8 = Data([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xC3, 0x28, 0x22, 0x7D])
        #expect(invalidUTF8.withUnsafeBytes { FlatJSONObject.parse($0) } == nil)
    }

    /// Long strings are scanned eight bytes at a time: a quote, an escape, a control character or
    /// non-ASCII text at any position within them is still seen.
    @Test func longStringsAreReadWhereverTheirSpecialBytesFall() throws {
        let specials: [(json: String, value: String?)] = [
            (#"\""#, "\""), (#"\\"#, "\\"), (#"\n"#, "\n"), (#"\u0041"#, "A"), ("é", "é"), ("\u{1}", nil), ("\n", nil),
        ]
        for length in [7, 8, 9, 16, 23, 40] {
            for position in 0...length {
                for (json, value) in specials {
                    let before = String(repeating: "x", count: position)
                    let after = String(repeating: "y", count: length - position)
                    let text = #"{"k":""# + before + json + after + #"","n":1}"#
                    let parsed = Data(text.utf8).withUnsafeBytes { FlatJSONObject.parse($0) }
                    if let value {
                        #expect(parsed == ["k": .string(before + value + after), "n": .integer(1)], "\(text)")
                    } else {
                        #expect(parsed == nil, "\(text.debugDescription)")
                    }
                }
                let plain = #"{"k":""# + String(repeating: "z", count: length) + #""}"#
                #expect(
                    Data(plain.utf8).withUnsafeBytes { FlatJSONObject.parse($0) }
                        == ["k": .string(String(repeating: "z", count: length))])
            }
        }
    }

    /// Whatever the flat reader accepts, Foundation reads the same way; and it accepts every flat
    /// object Foundation writes.
    @Test func theFlatReaderAgreesWithFoundationOnSeededRandomInputs() throws {
        var random = Random(state: 2026)
        let alphabet = Array(#"ab"\/é🎉 {}[],:0-1"#.unicodeScalars) + [Unicode.Scalar(0x0A)!, Unicode.Scalar(0x01)!]
        func randomString() -> String {
            var s = String.UnicodeScalarView()
            for _ in 0..<random.next(6) { s.append(alphabet[random.next(alphabet.count)]) }
            return String(s)
        }
        var accepted = 0
        for _ in 0..<3000 {
            var object: [String: Any] = [:]
            for _ in 0..<random.next(5) {
                switch random.next(3) {
                case 0: object[randomString()] = randomString()
                case 1: object[randomString()] = random.next(2_000_000) - 1_000_000
                default: object[randomString()] = (0..<random.next(3)).map { _ in randomString() }
                }
            }
            var bytes = [UInt8](try JSONSerialization.data(withJSONObject: object))
            let clean = bytes.withUnsafeBytes { FlatJSONObject.parse($0) }
            #expect(clean != nil, "\(String(decoding: bytes, as: UTF8.self))")
            // Then damage it a little and compare again.
            if !bytes.isEmpty, random.next(2) == 0 {
                let punctuation = Array(#"{}[]":,\ 0-e."#.utf8)
                bytes[random.next(bytes.count)] = punctuation[random.next(punctuation.count)]
            }
            guard let parsed = bytes.withUnsafeBytes({ FlatJSONObject.parse($0) }) else { continue }
            accepted += 1
            let reference = try #require(
                try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
                "accepted what Foundation refuses: \(String(decoding: bytes, as: UTF8.self))")
            #expect(Set(reference.keys) == Set(parsed.keys))
            for (key, value) in parsed {
                switch value {
                case .string(let s): #expect(reference[key] as? String == s)
                case .integer(let n): #expect((reference[key] as? NSNumber)?.int64Value == n)
                case .strings(let list): #expect(reference[key] as? [String] == list)
                }
            }
        }
        #expect(accepted > 1000)
    }

    /// The base64 reader takes exactly the canonical form, and reads it as Foundation does; what it
    /// declines is left to Foundation by its callers.
    @Test func base64ReadsTheCanonicalFormAsFoundationDoes() {
        var random = Random(state: 7)
        for length in 0..<70 {
            let data = Data((0..<length).map { _ in UInt8(random.next(256)) })
            let text = Array(data.base64EncodedString().utf8)
            #expect(text.withUnsafeBytes { Base64.decodeCanonical($0) } == data, "\(length) bytes")
        }
        let declined = [
            "QQ", "QQ=", "QR==", "QUF=", "QUI", "Q===", "=QQQ", "QQ==QQ==", "QU I=", "QUI\n", "QUI-", "QUI_",
            "QUJD\u{E9}",
        ]
        for text in declined {
            #expect(Array(text.utf8).withUnsafeBytes { Base64.decodeCanonical($0) } == nil, "\(text)")
        }
        #expect(Array("".utf8).withUnsafeBytes { Base64.decodeCanonical($0) } == Data())
    }

    @Test func randomUUIDsAreVersion4AndDistinct() {
        var seen = Set<String>()
        for _ in 0..<5000 {
            let text = RandomUUID.lowercaseString()
            #expect(text == text.lowercased())
            let uuid = UUID(uuidString: text)
            #expect(uuid != nil, "\(text)")
            if let bytes = uuid?.uuid {
                #expect(bytes.6 >> 4 == 4)
                #expect(bytes.8 >> 6 == 0b10)
            }
            seen.insert(text)
        }
        #expect(seen.count == 5000)
    }

    /// Random bytes from the UUIDs' pool: the length asked for, never the same twice, also across the
    /// pool's refills (4 KiB: 300 draws of 32 bytes go through it more than twice) and mixed with UUIDs.
    @Test func randomBytesHaveTheirLengthAndDoNotRepeat() {
        var seen = Set<Data>()
        for i in 0..<300 {
            let bytes = RandomUUID.bytes(32)
            #expect(bytes.count == 32)
            seen.insert(bytes)
            if i % 7 == 0 { _ = RandomUUID.lowercaseString() }
        }
        #expect(seen.count == 300)
        #expect(RandomUUID.bytes(0).isEmpty)
        #expect(RandomUUID.bytes(4096).count == 4096)
    }

    @Test func timeOrderedUUIDsAreVersion7AndCarryTheirTime() throws {
        let time = Date(timeIntervalSince1970: 1_795_000_000.5)
        let text = RandomUUID.timeOrderedLowercaseString(at: time)
        let bytes = try #require(UUID(uuidString: text)?.uuid)
        #expect(bytes.6 >> 4 == 7)
        #expect(bytes.8 >> 6 == 0b10)
        let milliseconds = [bytes.0, bytes.1, bytes.2, bytes.3, bytes.4, bytes.5].reduce(UInt64(0)) {
            $0 << 8 | UInt64($1)
        }
        #expect(milliseconds == 1_795_000_000_500)
        // Later identifiers sort later.
        let later = RandomUUID.timeOrderedLowercaseString(at: time.addingTimeInterval(0.002))
        #expect(text < later)
        #expect(text == text.lowercased())
    }

    @Test func deviceTokensParseHexInEitherCase() {
        #expect(DeviceToken(hex: "00ff0A")?.bytes == [0x00, 0xFF, 0x0A])
        #expect(DeviceToken(hex: "ABcd"[...])?.bytes == [0xAB, 0xCD])
        for bad in ["", "0", "0g", "abc", "zz", "0 "] { #expect(DeviceToken(hex: bad) == nil, "\(bad)") }
    }

    /// The check a bulk send makes without parsing agrees with the parse, character by character.
    @Test func theHexCheckAcceptsExactlyWhatTheParseAccepts() {
        var cases = ["", "0", "00", "0g", "abc", "zz", "0 ", "ABcd", "00ff0A", "é0", String(repeating: "a", count: 64)]
        // Every ASCII character in both places of a two-character token.
        for c in 0..<128 {
            let char = String(UnicodeScalar(UInt8(c)))
            cases += ["0" + char, char + "F"]
        }
        for text in cases {
            #expect(DeviceToken.isHex(text) == (DeviceToken(hex: text) != nil), "\(text.debugDescription)")
            #expect(DeviceToken.isHex(text[...]) == (DeviceToken(hex: text) != nil), "\(text.debugDescription)")
        }
        #expect(DeviceToken.isHex(String(repeating: "aF", count: 32)))
        #expect(!DeviceToken.isHex(String(repeating: "a", count: 63)))
    }
}
