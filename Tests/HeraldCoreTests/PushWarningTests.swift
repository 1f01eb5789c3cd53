import Foundation
import HeraldCore
import Testing

/// What Apple accepts and handles quietly (``PushWarning``), judged from the payload scanner's summary.
@Suite struct PushWarningTests {
    func warnings(_ json: String, _ type: PushType? = nil) throws -> [PushWarning] {
        let summary = try PayloadSummary.scan(Array(json.utf8))
        let inferred = type ?? (summary.hasUserVisibleContent ? .alert : .background)
        return Array(PushWarnings(summary: summary, pushType: inferred))
    }

    @Test func eachCaseIsNamed() throws {
        let long = String(repeating: "é", count: PushWarning.bodyLimit + 1)
        let cases: [(String, PushType?, [PushWarning])] = [
            (#"{"aps":{"alert":"hi","content-available":1}}"#, .background, [.backgroundWithAlert]),
            (#"{"aps":{"badge":1,"content-available":1}}"#, .background, [.backgroundWithAlert]),
            (#"{"aps":{},"data":1}"#, .background, [.backgroundWithoutContentAvailable]),
            (#"{"aps":{"alert":""}}"#, .alert, [.alertWithNothingToShow]),
            (#"{"aps":{"alert":{}}}"#, .alert, [.alertWithNothingToShow]),
            (#"{"aps":{"alert":{"title":""}}}"#, .alert, [.alertWithNothingToShow]),
            (#"{"aps":{"content-available":1}}"#, .alert, [.pushTypeMismatch]),
            (#"{"aps":{"timestamp":1,"content-state":{}}}"#, .liveactivity, [.pushTypeMismatch]),
            (#"{"aps":{"alert":"x","event":"update","content-state":{}}}"#, .alert, [.pushTypeMismatch]),
            (#"{"aps":{}}"#, .widgets, [.pushTypeMismatch]),
            (#"{"aps":{"content-available":1,"mutable-content":1}}"#, .background, [.mutableContentWithoutAlert]),
            (#"{"aps":{"sound":"default","mutable-content":1}}"#, .alert, [.mutableContentWithoutAlert]),
            (
                #"{"aps":{"event":"update","content-state":{"n":1}}}"#, .liveactivity,
                [.liveActivityWithoutTimestamp]
            ),
            (
                #"{"aps":{"timestamp":1,"event":"start","content-state":{},"attributes":{}}}"#, .liveactivity,
                [.pushToStartWithoutAttributesType]
            ),
            (#"{"aps":{"alert":"hi","badge":"seven"}}"#, nil, [.badgeNotANumber]),
            (#"{"aps":{"alert":"hi","badge":-1}}"#, nil, [.badgeNotANumber]),
            (#"{"aps":{"alert":"hi","badge":1.5}}"#, nil, [.badgeNotANumber]),
            (#"{"aps":{"alert":"\#(long)"}}"#, nil, [.alertTruncated]),
            (
                #"{"aps":{"alert":{"title":"\#(String(repeating: "T", count: 41))","body":"x"}}}"#, nil,
                [.alertTruncated]
            ),
            // Several at once, in allCases order.
            (
                #"{"aps":{"badge":"1","mutable-content":1}}"#, .background,
                [
                    .backgroundWithAlert, .backgroundWithoutContentAvailable, .mutableContentWithoutAlert,
                    .badgeNotANumber,
                ]
            ),
        ]
        for (json, type, expected) in cases {
            #expect(try warnings(json, type) == expected, "\(json) as \(type?.rawValue ?? "inferred")")
        }
    }

    @Test func whatApplesDocumentationAsksForHasNone() throws {
        let fine: [(String, PushType?)] = [
            (#"{"aps":{"alert":{"title":"Hello","body":"world"},"sound":"default","badge":3}}"#, nil),
            (#"{"aps":{"alert":"Hello"}}"#, .alert),
            (#"{"aps":{"badge":0}}"#, .alert),
            (#"{"aps":{"sound":"default"}}"#, nil),
            (#"{"aps":{"alert":{"loc-key":"GREETING"},"mutable-content":1}}"#, nil),
            (#"{"aps":{"content-available":1}}"#, nil),
            (#"{"aps":{"content-available":1},"k":"v"}"#, .background),
            (#"{"aps":{"timestamp":1,"event":"update","content-state":{"n":1}}}"#, .liveactivity),
            (
                #"{"aps":{"timestamp":1,"event":"start","content-state":{},"attributes-type":"A","attributes":{},"alert":{"title":"t","body":"b"}}}"#,
                .liveactivity
            ),
            (#"{"aps":{"content-changed":true}}"#, .widgets),
            (#"{"aps":{"alert":"x"}}"#, .voip),
            // Exactly at the limits: shown whole.
            (#"{"aps":{"alert":"\#(String(repeating: "b", count: PushWarning.bodyLimit))"}}"#, nil),
            // Escapes count as what they stand for: 110 characters written as 660 bytes.
            (#"{"aps":{"alert":"\#(String(repeating: #"\u00e9"#, count: PushWarning.bodyLimit))"}}"#, nil),
            // Keys with those names outside aps (or inside the alert's own objects) mean nothing.
            (#"{"badge":"seven","aps":{"alert":"x"},"x":{"mutable-content":1}}"#, nil),
        ]
        for (json, type) in fine {
            #expect(try warnings(json, type) == [], "\(json)")
        }
    }

    @Test func theHeaderReadsBackAndTheFirstIsTheStrictReason() throws {
        let set = PushWarnings([.alertTruncated, .backgroundWithAlert])
        #expect(set.headerValue == "BackgroundWithAlert, AlertTruncated")
        #expect(PushWarnings(headerValue: set.headerValue) == set)
        // One warning alone is its name; none is empty.
        for warning in PushWarning.allCases {
            #expect(PushWarnings([warning]).headerValue == warning.rawValue)
        }
        #expect(PushWarnings().headerValue == "")
        #expect(PushWarnings(headerValue: "Nonsense, AlertTruncated") == PushWarnings([.alertTruncated]))
        #expect(set.first == .backgroundWithAlert && PushWarnings().first == nil)
        // Each names what happens and where Apple says so.
        for warning in PushWarning.allCases {
            #expect(!warning.explanation.isEmpty && !warning.source.isEmpty)
            #expect(warning.detail.hasPrefix(warning.rawValue + ": "))
        }
    }
}
