import Foundation
import HeraldCore
import Testing

/// Pushes Apple accepts and then handles quietly, named by a real `herald gateway` to curl: on the
/// answer (`herald-warnings`), in the delivery log and history, and in `/metrics`; refused with
/// `--strict`. Pushes the provider API refuses are in the log too, with why.
@Suite(.serialized, .ownThread) struct WarningsEndToEndTests {
    /// One push per warning: its payload, headers and the header the answer should carry.
    static let cases: [(body: String, headers: [String], warned: String)] = [
        (
            #"{"aps":{"alert":"hi","content-available":1}}"#, ["apns-push-type: background", "apns-priority: 5"],
            "BackgroundWithAlert"
        ),
        (
            #"{"aps":{},"sync":true}"#, ["apns-push-type: background", "apns-priority: 5"],
            "BackgroundWithoutContentAvailable"
        ),
        (#"{"aps":{"alert":""}}"#, ["apns-push-type: alert"], "AlertWithNothingToShow"),
        (#"{"aps":{"content-available":1}}"#, ["apns-push-type: alert"], "PushTypeMismatch"),
        (#"{"aps":{"sound":"default","mutable-content":1}}"#, [], "MutableContentWithoutAlert"),
        (
            #"{"aps":{"event":"update","content-state":{"score":1}}}"#,
            ["apns-push-type: liveactivity", "apns-topic: com.example.demo.push-type.liveactivity"],
            "LiveActivityWithoutTimestamp"
        ),
        (
            #"{"aps":{"timestamp":1,"event":"start","content-state":{},"alert":{"title":"t","body":"b"}}}"#,
            ["apns-push-type: liveactivity", "apns-topic: com.example.demo.push-type.liveactivity"],
            "PushToStartWithoutAttributesType"
        ),
        (#"{"aps":{"alert":"hi","badge":"seven"}}"#, [], "BadgeNotANumber"),
        (#"{"aps":{"alert":"\#(String(repeating: "long ", count: 30))"}}"#, [], "AlertTruncated"),
    ]

    @Test func eachWarningIsNamedOnItsAnswerInTheLogAndInMetrics() throws {
        #expect(Self.cases.map(\.warned) == PushWarning.allCases.map(\.rawValue), "one case per warning")
        let p = try Provisioned()
        var ids: [String: String] = [:]
        for (body, headers, warned) in Self.cases {
            let topic = headers.contains { $0.hasPrefix("apns-topic:") } ? nil : Provisioned.topic
            let answer = try p.push(topic: topic, body: body, headers: headers)
            #expect(answer.status == 200, "\(warned): \(answer.status) \(answer.body)")
            #expect(answer.headers["herald-warnings"] == warned, "\(warned): \(answer.headers)")
            ids[warned] = answer.headers["apns-id"]
        }
        // A push Apple shows as meant has no such header.
        let clean = try p.push(body: #"{"aps":{"alert":{"title":"Hello","body":"world"},"badge":1}}"#)
        #expect(clean.status == 200 && clean.headers["herald-warnings"] == nil, "\(clean.headers)")

        // The delivery log: a warning line beside accepted, naming it and what Apple does.
        let badge = try #require(ids["BadgeNotANumber"])
        var lines: [[String: Any]] = []
        try eventually("the warned push's log lines") {
            lines =
                (try? JSONSerialization.jsonObject(
                    with: Data(p.gateway.adminCall("GET", "/deliveries/\(badge)").body.utf8)))
                as? [[String: Any]] ?? []
            return lines.contains { $0["kind"] as? String == "stored" }
        }
        // (Later pushes to the device, offline, replace it in the store: one per topic is kept.)
        #expect(lines.compactMap { $0["kind"] as? String }.prefix(3) == ["accepted", "warning", "stored"], "\(lines)")
        #expect(
            (lines[1]["detail"] as? String)
                == "BadgeNotANumber: aps.badge is not a whole number: the badge is left as it was", "\(lines)")
        // The history lists them with the push; a warning is not a step, so the push is "stored".
        let history = try p.gateway.adminCall("GET", "/deliveries?app=\(Provisioned.topic)&limit=50")
        let entries = (try? JSONSerialization.jsonObject(with: Data(history.body.utf8))) as? [[String: Any]] ?? []
        let entry = try #require(entries.first { $0["apnsID"] as? String == badge }, "\(history.body)")
        #expect(entry["warnings"] as? [String] == ["BadgeNotANumber"] && entry["status"] as? String == "stored")

        // /metrics counts them by kind.
        let metrics = try p.gateway.adminCall("GET", "/metrics").body
        for warning in PushWarning.allCases {
            #expect(metrics.contains(#"herald_push_warnings_total{kind="\#(warning.rawValue)"} 1"#), "\(warning)")
        }
        #expect(p.gateway.stop() == 0)
    }

    @Test func refusedPushesAreLoggedWithWhyAndStrictRefusesWarnings() throws {
        let p = try Provisioned(arguments: ["--strict"])
        // --strict: 400 with the first warning as the reason, every warning in the header.
        let strict = try p.push(
            body: #"{"aps":{"badge":"seven","mutable-content":1}}"#, headers: ["apns-push-type: alert"])
        #expect(
            strict.status == 400 && strict.reason == "MutableContentWithoutAlert", "\(strict.status) \(strict.body)")
        #expect(strict.headers["herald-warnings"] == "MutableContentWithoutAlert, BadgeNotANumber")
        #expect(try p.push().status == 200, "a push without warnings goes through")

        // Malformed JSON answers PayloadEmpty, as Apple does; the log says where the JSON broke.
        let broken = try p.push(body: #"{"aps":{"alert":"unfinished""#)
        #expect(broken.status == 400 && broken.reason == "PayloadEmpty")
        let unknown = try p.push(token: String(repeating: "ab", count: 32))
        #expect(unknown.status == 400 && unknown.reason == "BadDeviceToken")

        func log(_ id: String?) throws -> [[String: Any]] {
            var lines: [[String: Any]] = []
            try eventually("the log of \(id ?? "?")") {
                let answer = try p.gateway.adminCall("GET", "/deliveries/\(id ?? "")")
                lines = (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [[String: Any]] ?? []
                return !lines.isEmpty
            }
            return lines
        }
        let strictLine = try #require(try log(strict.headers["apns-id"]).first)
        #expect(strictLine["kind"] as? String == "rejected")
        let strictDetail = strictLine["detail"] as? String ?? ""
        #expect(
            strictDetail.hasPrefix(
                "400 MutableContentWithoutAlert; device dev1, topic \(Provisioned.topic), token \(p.token); ")
                && strictDetail.contains("aps.badge is not a whole number"), "\(strictDetail)")
        let brokenDetail = try log(broken.headers["apns-id"]).first?["detail"] as? String ?? ""
        #expect(
            brokenDetail.hasPrefix("400 PayloadEmpty; device dev1")
                && brokenDetail.hasSuffix("the body is not a JSON object: unexpected end of the payload at byte 28"),
            "\(brokenDetail)")
        let unknownDetail = try log(unknown.headers["apns-id"]).first?["detail"] as? String ?? ""
        #expect(
            unknownDetail.hasPrefix("400 BadDeviceToken; topic \(Provisioned.topic), token abab"), "\(unknownDetail)")

        // The history has them, filtered by status, with their app and device where known.
        let history = try p.gateway.adminCall("GET", "/deliveries?status=rejected")
        let entries = (try? JSONSerialization.jsonObject(with: Data(history.body.utf8))) as? [[String: Any]] ?? []
        #expect(entries.count == 3, "\(history.body)")
        let brokenEntry = entries.first { $0["apnsID"] as? String == broken.headers["apns-id"] }
        #expect(brokenEntry?["device"] as? String == "dev1" && brokenEntry?["topic"] as? String == Provisioned.topic)
        #expect((brokenEntry?["reason"] as? String)?.contains("unexpected end of the payload") == true)

        let metrics = try p.gateway.adminCall("GET", "/metrics").body
        #expect(
            metrics.contains(#"herald_provider_requests_total{status="400",reason="MutableContentWithoutAlert"} 1"#))
        #expect(metrics.contains(#"herald_push_warnings_total{kind="MutableContentWithoutAlert"} 1"#))
        #expect(metrics.contains(#"herald_push_warnings_total{kind="BadgeNotANumber"} 1"#))
        #expect(p.gateway.stop() == 0)
    }
}
