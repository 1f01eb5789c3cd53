import Foundation
import Testing

@testable import HeraldCore

@Suite struct PayloadTests {
    @Test func parsesEveryApsKeyAndKeepsBytes() throws {
        let json = """
            {"aps":{"alert":{"title":"T","subtitle":"S","body":"B","launch-image":"L","title-loc-key":"TK",
            "title-loc-args":["a"],"subtitle-loc-key":"SK","subtitle-loc-args":["b"],"loc-key":"K","loc-args":["c",2],
            "action-loc-key":"A","summary-arg":"x","summary-arg-count":2},"badge":3,
            "sound":{"critical":1,"name":"alarm.caf","volume":0.5},"thread-id":"th","category":"INVITE",
            "mutable-content":1,"target-content-id":"t","interruption-level":"time-sensitive","relevance-score":0.7,
            "filter-criteria":"f","unknown-key":{"x":1}},"acme":{"id":7}}
            """
        let payload = try Payload(json: json)
        #expect(payload.data == Data(json.utf8))
        let a = try #require(payload.aps.alert)
        #expect(a.title == "T" && a.subtitle == "S" && a.body == "B" && a.launchImage == "L")
        #expect(a.titleLocKey == "TK" && a.titleLocArgs == ["a"] && a.subtitleLocArgs == ["b"])
        #expect(a.locKey == "K" && a.locArgs == ["c", "2"] && a.actionLocKey == "A" && a.summaryArgCount == 2)
        #expect(payload.aps.badge == 3)
        #expect(payload.aps.sound == PayloadSound(name: "alarm.caf", critical: true, volume: 0.5))
        #expect(payload.aps.threadID == "th" && payload.aps.category == "INVITE")
        #expect(payload.aps.mutableContent && !payload.aps.contentAvailable)
        #expect(payload.aps.interruptionLevel == .timeSensitive && payload.aps.relevanceScore == 0.7)
        #expect(payload.custom["acme"] == .object(["id": .int(7)]))
        #expect(payload.inferredPushType == .alert)
    }

    @Test func alertStringIsBody() throws {
        let payload = try Payload(json: #"{"aps":{"alert":"You’re invited!","category":"INVITE_CATEGORY"}}"#)
        #expect(payload.aps.alert?.body == "You’re invited!")
        #expect(payload.aps.alertIsString)
    }

    @Test(arguments: [
        (#"{"aps":{"badge":"3"}}"#, "aps.badge"),
        (#"{"aps":{"badge":-1}}"#, "aps.badge"),
        (#"{"aps":{"alert":5}}"#, "aps.alert"),
        (#"{"aps":{"alert":{"title":1}}}"#, "aps.alert.title"),
        (#"{"aps":{"alert":{"loc-args":[{}]}}}"#, "aps.alert.loc-args[0]"),
        (#"{"aps":{"sound":{"volume":2}}}"#, "aps.sound.volume"),
        (#"{"aps":{"sound":{"critical":"yes"}}}"#, "aps.sound.critical"),
        (#"{"aps":{"content-available":"1"}}"#, "aps.content-available"),
        (#"{"aps":{"interruption-level":"loud"}}"#, "aps.interruption-level"),
        (#"{"aps":{"relevance-score":1.5}}"#, "aps.relevance-score"),
        (#"{"aps":{"event":"pause"}}"#, "aps.event"),
        (#"{"aps":{"event":"start","timestamp":1,"input-push-token":2}}"#, "aps.input-push-token"),
        (#"{"aps":{"event":"start","timestamp":1,"input-push-channel":5}}"#, "aps.input-push-channel"),
        (#"{"aps":[]}"#, "aps"),
        (#"[1,2]"#, "payload"),
        (#"{"aps":"#, "payload"),
    ])
    func errorsNameTheKey(json: String, key: String) {
        #expect(throws: PayloadError.self) { try Payload(json: json) }
        do { _ = try Payload(json: json) } catch { #expect(error.key == key, "\(error)") }
    }

    /// An error quotes what the payload sent in part: a megabyte where a number or a name belongs
    /// is cut to its first 64 bytes, with its size.
    @Test(arguments: ["badge", "event", "interruption-level"])
    func errorsQuoteAWrongValueInPart(key: String) {
        let long = String(repeating: "é", count: 5_000)
        do {
            _ = try Payload(json: #"{"aps":{"\#(key)":"\#(long)"}}"#)
            Issue.record("accepted a \(key) of 10,000 bytes")
        } catch {
            #expect(error.key == "aps." + key)
            let excerpt = String(repeating: "é", count: 32)
            #expect(error.rule.hasSuffix(#"not "\#(excerpt)…" (10000 bytes in all)"#), "\(error.rule)")
            #expect(error.rule.utf8.count < 200)
        }
    }

    @Test func emptyBodyIsPayloadEmpty() {
        for body in ["", "   \n"] {
            do {
                _ = try Payload(json: body)
                Issue.record("accepted an empty body")
            } catch { #expect(error.reason == .payloadEmpty) }
        }
    }

    @Test func sizeLimitsPerPushType() throws {
        let filler = String(repeating: "x", count: 4100)
        let payload = try Payload(json: #"{"aps":{"alert":"hi"},"pad":"\#(filler)"}"#)
        #expect(
            throws: PayloadError(
                key: "payload", rule: "is \(payload.data.count) bytes; the limit for alert pushes is 4096",
                reason: .payloadTooLarge)
        ) {
            try payload.validate(pushType: .alert)
        }
        try payload.validate(pushType: .voip)  // 5120 for VoIP
        let small = try Payload(json: #"{"aps":{"alert":"\#(String(repeating: "y", count: 250))"}}"#)
        #expect(throws: PayloadError.self) {
            try small.validate(pushType: .alert, sizeLimit: PayloadSizeLimit.legacyBinary.rawValue)
        }
        try small.validate(pushType: .alert, sizeLimit: PayloadSizeLimit.binaryFrame.rawValue)
    }

    @Test func backgroundRules() throws {
        let background = try Payload(json: #"{"aps":{"content-available":1},"sync":true}"#)
        #expect(background.inferredPushType == .background)
        try background.validate(pushType: .background, priority: .normal)
        do {
            try background.validate(pushType: .background, priority: .immediate)
            Issue.record("priority 10 accepted")
        } catch { #expect(error.reason == .badPriority && error.key == "apns-priority") }
        let withAlert = try Payload(json: #"{"aps":{"content-available":1,"alert":"x"}}"#)
        #expect(
            throws: PayloadError(
                key: "aps.alert", rule: "background pushes carry content-available only (no alert, sound or badge)")
        ) {
            try withAlert.validate(pushType: .background, priority: .normal)
        }
        let none = try Payload(json: #"{"aps":{}}"#)
        #expect(throws: PayloadError.self) { try none.validate(pushType: .background, priority: .normal) }
    }

    @Test func liveActivityNeedsItsKeys() throws {
        let missing = try Payload(json: #"{"aps":{"timestamp":1,"event":"update"}}"#)
        #expect(throws: PayloadError(key: "aps.content-state", rule: "is required for liveactivity start and update")) {
            try missing.validate(pushType: .liveactivity)
        }
        try Payload(json: #"{"aps":{"timestamp":1,"event":"end"}}"#).validate(pushType: .liveactivity)
    }

    /// A Live Activity's relevance score is any number (a notification's is 0 to 1), and a start may
    /// ask for the activity's token or a channel (docs/broadcast.md).
    @Test func liveActivityKeysOfAStart() throws {
        let start = try Payload(
            json:
                #"{"aps":{"event":"start","timestamp":1,"relevance-score":75,"input-push-token":1,"input-push-channel":"AQ=="}}"#
        )
        #expect(start.aps.relevanceScore == 75 && start.aps.inputPushToken && start.aps.inputPushChannel == "AQ==")
        #expect(try Payload(json: #"{"aps":{"event":"update","timestamp":1}}"#).aps.inputPushToken == false)
    }

    @Test func reasonsAreThirtyTwoWithTheirStatus() {
        #expect(APNsReason.allCases.count == 32)
        #expect(APNsReason.unregistered.status == 410 && APNsReason.payloadTooLarge.status == 413)
        #expect(APNsReason.tooManyProviderTokenUpdates.status == 429 && APNsReason.shutdown.status == 503)
        #expect(PushType.voip.topicSuffix == ".voip" && PushType.liveactivity.topicSuffix == ".push-type.liveactivity")
    }

    @Test func remoteContentFromPayload() throws {
        let payload = try Payload(
            json:
                #"{"aps":{"alert":{"loc-key":"GAME_INVITE","loc-args":["Jenna"]},"badge":1,"sound":"default","category":"INVITE","thread-id":"t1"},"gameID":"12"}"#
        )
        let content = NotificationContent(payload: payload)
        #expect(content.bodyLocKey == "GAME_INVITE" && content.bodyLocArgs == ["Jenna"])
        #expect(content.badge == 1 && content.sound == .default && content.categoryIdentifier == "INVITE")
        #expect(content.threadIdentifier == "t1" && content.userInfo["gameID"] == .string("12"))
        #expect(content.userInfo["aps"]?.objectValue?["category"] == .string("INVITE"))
        #expect(try Payload(json: #"{"acme":1}"#).dictionary == ["acme": .int(1)])
    }
}

@Suite struct LocalizationTests {
    let strings = """
        /* Game invitations */
        "GAME_INVITE" = "%@ has invited you to play";
        "GAME_SCORE" = "%2$@ scored %1$@ points, 100%% sure"; // positional
        "ESCAPES" = "line\\nnext \\"quoted\\" \\U00e9";
        """

    @Test func parsesStringsFileWithCommentsAndEscapes() throws {
        let table = try StringsTable(parsing: strings)
        #expect(table.entries["GAME_INVITE"] == "%@ has invited you to play")
        #expect(table.entries["ESCAPES"] == "line\nnext \"quoted\" é")
        #expect(throws: LocalizationError.self) { try StringsTable(parsing: #""A" = "B""#) }
    }

    @Test func formatsPositionalAndPercent() {
        #expect(LocalizationBundle.format("%@ has invited you", arguments: ["Jenna"]) == "Jenna has invited you")
        #expect(
            LocalizationBundle.format("%2$@ scored %1$@ points, 100%% sure", arguments: ["7", "Ana"])
                == "Ana scored 7 points, 100% sure")
        #expect(LocalizationBundle.format("%@ and %@", arguments: ["a"]) == "a and ")
        #expect(LocalizationBundle.format("%d items", arguments: ["3"]) == "3 items")
    }

    /// A key no table has is its own format: one that repeats a long argument (500 `%1$@` and
    /// 2,000 characters fit in a 4 KB payload) is cut at 16 KiB, not filled to a megabyte.
    @Test func aFormatThatRepeatsAnArgumentIsCut() {
        let filled = LocalizationBundle.format(
            String(repeating: "%1$@", count: 500), arguments: [String(repeating: "é", count: 2_000)])
        #expect(filled == String(repeating: "é", count: 8_192) + "…")
        // Text just at the limit is whole.
        let whole = String(repeating: "a", count: LocalizationBundle.longestText)
        #expect(LocalizationBundle.format("%@", arguments: [whole]) == whole)
    }

    @Test func languageFallback() throws {
        let bundle = LocalizationBundle(
            tables: [
                "fr": try StringsTable(parsing: #"{"HELLO": "Bonjour %@"}"#),
                "pt-BR": StringsTable(["HELLO": "Olá %@"]),
                "Base": StringsTable(["HELLO": "Hello %@", "ONLY_BASE": "base"]),
            ], baseLanguage: "en")
        #expect(
            bundle.localizedString(forKey: "HELLO", arguments: ["Ana"], preferredLanguages: ["fr-CA"]) == "Bonjour Ana")
        #expect(bundle.localizedString(forKey: "HELLO", arguments: ["Ana"], preferredLanguages: ["pt-BR"]) == "Olá Ana")
        #expect(bundle.localizedString(forKey: "HELLO", arguments: ["Ana"], preferredLanguages: ["de"]) == "Hello Ana")
        #expect(bundle.localizedString(forKey: "ONLY_BASE", arguments: [], preferredLanguages: ["fr"]) == "base")
        #expect(bundle.localizedString(forKey: "MISSING", arguments: [], preferredLanguages: ["fr"]) == "MISSING")
    }

    @Test func contentResolvesKeysAtPresentation() throws {
        var content = NotificationContent()
        content.bodyLocKey = "GAME_INVITE"
        content.bodyLocArgs = ["Jenna"]
        content.actionLocKey = "PLAY"
        let bundle = LocalizationBundle(tables: ["en": StringsTable(["GAME_INVITE": "%@ invited you", "PLAY": "Play"])])
        let shown = content.localized(with: bundle, preferredLanguages: ["en"])
        #expect(shown.body == "Jenna invited you" && shown.actionLocKey == "Play")
    }

    @Test func contentChangedIsABoolean() throws {
        #expect(try Payload(json: #"{"aps":{"content-changed":true}}"#).aps.contentChanged)
        #expect(try Payload(json: #"{"aps":{"content-changed":1}}"#).aps.contentChanged)
        #expect(try !Payload(json: #"{"aps":{"content-changed":false}}"#).aps.contentChanged)
        #expect(try !Payload(json: #"{"aps":{}}"#).aps.contentChanged)
        let error = #expect(throws: PayloadError.self) { _ = try Payload(json: #"{"aps":{"content-changed":"yes"}}"#) }
        #expect(error?.key == "aps.content-changed")
    }
}
