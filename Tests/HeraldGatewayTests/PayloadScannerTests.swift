import Foundation
import HeraldCore
import NIOCore
import Testing

@testable import HeraldGateway

/// The provider payload's scanner (``PayloadSummary``), against the device's validator and Foundation.
@Suite struct PayloadScannerTests {
    @Test func payloadScanner() throws {
        let ok = try PayloadSummary.scan(
            Array(
                #" {"aps":{"alert":{"title":"x"},"badge":0,"content-available":1},"k":[1,-2.5e3,true,null,"\u00e9\n"]} "#
                    .utf8))
        #expect(ok.hasAlert && ok.hasBadge && !ok.hasSound && ok.contentAvailable)
        let background = try PayloadSummary.scan(Array(#"{"aps":{"content-available":0},"alert":"not aps"}"#.utf8))
        #expect(!background.hasUserVisibleContent && !background.contentAvailable)
        let nested = try PayloadSummary.scan(Array(#"{"x":{"aps":{"alert":"no"}}}"#.utf8))
        #expect(!nested.hasAlert)
        for bad in [
            "", "[]", "{", #"{"a":}"#, #"{"a":1,}"#, #"{"a":01}"#, #"{"a":"\x"}"#, "{} {}", #"{"a":tru}"#,
            "{\"a\":\"\u{1}\"}",
        ] {
            #expect(throws: PayloadSummary.ScanError.self, "\(bad)") { try PayloadSummary.scan(Array(bad.utf8)) }
        }
        #expect(throws: PayloadSummary.ScanError.self) {
            try PayloadSummary.scan([0x7B, 0x22, 0xC3, 0x28, 0x22, 0x3A, 0x31, 0x7D])
        }
    }

    /// Also from fuzzing: a key written with escapes is the key it decodes to, and two `aps` keys
    /// (on which decoders disagree) are refused.
    @Test func escapedKeysAreTheirDecodedNamesAndTwoApsKeysAreRefused() throws {
        let escaped = #"{"ap\u0073":{"\u0061lert":"x","b\u0061dge":1,"content\u002davailable":1}}"#
        let summary = try PayloadSummary.scan(Array(escaped.utf8))
        #expect(summary.hasAlert && summary.hasBadge && summary.contentAvailable)
        let payload = try Payload(json: escaped)
        #expect(payload.aps.alert != nil && payload.aps.badge == 1 && payload.aps.contentAvailable)
        let twice = #"{"aps":{},"x":1,"aps":{"alert":"x"}}"#
        #expect(throws: PayloadSummary.ScanError.self) { try PayloadSummary.scan(Array(twice.utf8)) }
        #expect(throws: PayloadError.self) { try Payload(json: twice) }
    }

    /// What fuzzing against HeraldCore's validator found: the scanner now refuses what no decoder
    /// reads (an unpaired surrogate escape, a number beyond a double), and reads content-available
    /// as the device does (any number but zero).
    @Test func payloadScannerAgreesWithTheDevicesValidator() throws {
        for bad in [
            #"{"a":"\ude00"}"#, #"{"a":"\ud83d"}"#, #"{"a":"\ud83dx"}"#, #"{"a":"\ud83d\u0041"}"#, #"{"a":1e400}"#,
            #"{"a":-3e2555555555555555}"#,
        ] {
            #expect(throws: PayloadSummary.ScanError.self, "\(bad)") { try PayloadSummary.scan(Array(bad.utf8)) }
            #expect(throws: PayloadError.self, "\(bad)") { try Payload(json: bad) }
        }
        let pair = #"{"a":"\ud83d\ude00","b":1e300,"c":1e-400}"#
        #expect(throws: Never.self) { try PayloadSummary.scan(Array(pair.utf8)) }
        #expect(throws: Never.self) { try Payload(json: pair) }
        for (flag, set) in [("1", true), ("2", true), ("0", false), ("0.0", false), ("-0", false), ("1e0", true)] {
            let json = #"{"aps":{"content-available":\#(flag)}}"#
            #expect(try PayloadSummary.scan(Array(json.utf8)).contentAvailable == set, "\(flag)")
            #expect(try Payload(json: json).aps.contentAvailable == set, "\(flag)")
        }
    }

    @Test func scannerAgreesWithFoundationOnRandomInputs() {
        var rng = SeededRandom(seed: 42)
        let pieces = [
            "{", "}", "[", "]", ",", ":", "\"a\"", "\"aps\"", "1", "-0.5", "true", "null", " ", "\"\\n\"", "\"alert\"",
        ]
        var agreed = 0
        for _ in 0..<3000 {
            var text = "{"
            for _ in 0..<Int(rng.next() % 12) { text += pieces[Int(rng.next() % UInt64(pieces.count))] }
            if rng.next() % 2 == 0 { text += "}" }
            let ours = (try? PayloadSummary.scan(Array(text.utf8))) != nil
            var foundation = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) is [String: Any]
            // Foundation accepts a trailing comma; RFC 8259 (and Herald) do not.
            let compact = text.replacingOccurrences(of: " ", with: "")
            if compact.contains(",}") || compact.contains(",]") { foundation = false }
            #expect(ours == foundation, "\(text)")
            if ours == foundation { agreed += 1 }
        }
        #expect(agreed == 3000)
    }
}

/// SplitMix64, for reproducible random inputs.
struct SeededRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
