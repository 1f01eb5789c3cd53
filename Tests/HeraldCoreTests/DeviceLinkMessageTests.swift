import Foundation
import Testing

@testable import HeraldCore

@Suite struct DeviceLinkMessageTests {
    static let token = DeviceToken(bytes: Array(0..<32))

    static let messages: [LinkMessage] = [
        LinkMessage.challenge(nonce: Data([1, 2, 3])),
        .welcome(
            device: "d-1", generation: 2,
            registrations: [LinkRegistration(topic: "com.example.a", environment: .production, token: token)]),
        .token(request: 4, LinkRegistration(topic: "com.example.a", environment: .development, token: token)),
        .unregistered(request: 5, topic: "com.example.a", environment: .development),
        .reset(request: nil, generation: 3),
        .goAway(reconnectWithin: 10_000),
        .goAway(reconnectWithin: 0),
        .error(request: 6, code: "NotFound", message: "app com.example.a on device d-1 in development not found"),
        .hello(device: nil, publicKey: Data([4, 5]), signature: Data([6])),
        .hello(device: "d-1", publicKey: nil, signature: Data([6])),
        .welcome(
            device: "d-2", generation: 1, registrations: [],
            ticket: LinkTicket(ticket: Data([1, 2, 3]), secret: Data(repeating: 9, count: 32), expires: 1_800_000_000)),
        .resume(device: "d-2", ticket: Data([1, 2, 3]), proof: Data([4, 5])),
        .register(request: 1, topic: "com.example.a", environment: .production),
        .register(request: 9, topic: "com.example.a", environment: .development, installation: 2),
        .unregister(request: nil, topic: "com.example.a", environment: .development),
        .registerScope(request: 2, topic: "com.example.a", environment: .development, scope: .activity("A-1")),
        .unregisterScope(request: nil, topic: "com.example.a", environment: .production, scope: .pushToStart("Trip")),
        .token(
            request: 3,
            LinkRegistration(
                topic: "com.example.a", environment: .development, token: token, scope: .pushToStart("Trip"))),
        .resetDevice(request: 9),
        .ack(["a", "b"]),
        .refused(apnsID: "6e1f2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b", reason: "aps.badge: must be a non-negative integer"),
        .push(
            LinkPush(
                apnsID: "id \"quoted\"\n", uniqueID: "u", topic: "com.example.a", token: token,
                environment: .development, pushType: .background, priority: .normal, expiration: 0,
                collapseID: "c\\d", payload: Data(#"{ "aps" : {"content-available":1} }"#.utf8))),
        .push(
            LinkPush(
                apnsID: "x", topic: "t", token: token, environment: .production, pushType: .alert,
                priority: .immediate, expiration: nil, collapseID: nil, payload: Data([0x7B, 0x7D]))),
        .subscribe(request: 7, topic: "com.example.a", environment: .development, channels: ["3q2+7w==", "AAAA"]),
        .unsubscribe(request: nil, topic: "com.example.a", environment: .production, channels: []),
        .subscribed(request: 7, topic: "com.example.a", environment: .development, channels: ["AAAA"]),
        .broadcast(
            LinkBroadcast(
                uniqueID: "u-1", channelID: "3q2+7w==", topic: "com.example.a.push-type.liveactivity",
                environment: .production, priority: .normal, expiration: 0,
                payload: Data(#"{"aps":{"event":"end","timestamp":1}}"#.utf8))),
        .broadcast(
            LinkBroadcast(
                uniqueID: "u-2", channelID: "AAAA", topic: "t", environment: .development, priority: .immediate,
                expiration: nil, payload: Data([0x7B, 0x7D]))),
    ]

    /// A resumption's fields are named as docs/device-link.md says, and an idle device's welcome
    /// with its ticket is read without `JSONDecoder`.
    @Test func resumptionNamesItsFieldsAndItsProofIsTheDocumentedHMAC() throws {
        let welcome = LinkMessage.welcome(
            device: "d-2", generation: 1, registrations: [],
            ticket: LinkTicket(ticket: Data([1, 2, 3]), secret: Data(repeating: 9, count: 32), expires: 1_800_000_000))
        let text = String(decoding: welcome.encoded(), as: UTF8.self)
        #expect(
            text
                == #"{"device":"d-2","generation":1,"registrations":[],"ticket":"AQID","ticketExpires":1800000000,"ticketSecret":"CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk=","type":"welcome"}"#
        )
        #expect(Data(text.utf8).withUnsafeBytes { LinkMessage.Envelope(flatJSON: $0) } != nil)
        #expect(
            String(
                decoding: LinkMessage.resume(device: "d-2", ticket: Data([1]), proof: Data([2])).encoded(),
                as: UTF8.self)
                == #"{"device":"d-2","proof":"Ag==","ticket":"AQ==","type":"resume"}"#)
        // HMAC-SHA256 under the secret over "herald-device-link-resume-v1\n" and the nonce (computed
        // apart from this code, with Python's hmac module).
        #expect(
            DeviceLink.resumeProof(secret: Data(repeating: 9, count: 32), nonce: Data(repeating: 7, count: 32))
                .base64EncodedString() == "sdhOtIxwm+yjxC7fP9c0Z0BIyH4R4ml+1GHumdH+mJE=")
        // A welcome with a ticket but not its secret is refused, naming the field.
        #expect(throws: LinkMessageError(#"welcome needs "ticketSecret""#)) {
            try LinkMessage(
                json: Data(#"{"type":"welcome","device":"d","generation":1,"ticket":"AQID","ticketExpires":1}"#.utf8))
        }
    }

    /// Every field of a subscription and a broadcast is named on the wire as docs/device-link.md says.
    @Test func subscriptionsAndBroadcastsNameTheirFields() throws {
        let text = String(decoding: Self.messages[Self.messages.count - 5].encoded(), as: UTF8.self)
        #expect(
            text
                == #"{"channels":["3q2+7w==","AAAA"],"environment":"development","request":7,"topic":"com.example.a","type":"subscribe"}"#
        )
        #expect(TokenScope(rawValue: "activity:") == nil && TokenScope(rawValue: "other:x") == nil)
        #expect(TokenScope(rawValue: "push-to-start:Trip") == .pushToStart("Trip"))
        #expect(TokenScope(rawValue: "activity:" + String(repeating: "a", count: 300)) == nil)
        let badScope = #"{"type":"registerScope","topic":"t","environment":"development","scope":"nope"}"#
        #expect(throws: LinkMessageError.self) { try LinkMessage(json: Data(badScope.utf8)) }
        let missing = #"{"type":"subscribe","topic":"com.example.a","environment":"development"}"#
        #expect(throws: LinkMessageError("subscribe needs \"channels\"")) {
            try LinkMessage(json: Data(missing.utf8))
        }
    }

    @Test(arguments: messages)
    func roundTrips(_ message: LinkMessage) throws {
        #expect(try LinkMessage(json: message.encoded()) == message)
    }

    /// Every message but `push` and `ack` (written by hand on their own) is written without
    /// JSONEncoder when it lists no registrations: byte for byte what JSONEncoder writes with
    /// sorted keys, unless a string holds a `/` (JSONEncoder escapes it; both read the same).
    @Test(arguments: messages)
    func theHandWrittenEnvelopeIsWhatJSONEncoderWrites(_ message: LinkMessage) throws {
        switch message {
        case .push, .ack: return
        default: break
        }
        let envelope = message.envelope
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let reference = String(decoding: try encoder.encode(envelope), as: UTF8.self)
        guard let flat = envelope.flatJSON() else {
            #expect(envelope.registrations?.isEmpty == false, "only registrations need JSONEncoder")
            return
        }
        let text = String(decoding: flat, as: UTF8.self)
        if reference.contains(#"\/"#) {
            #expect(text == reference.replacingOccurrences(of: #"\/"#, with: "/"))
        } else {
            #expect(text == reference)
        }
    }

    /// Error codes are strings on the wire: a known one reads as its static member, one this side
    /// does not know is kept as it came.
    @Test func errorCodesAreTheirStringsOnTheWire() throws {
        let deleted = LinkMessage.error(request: nil, code: .deviceDeleted, message: "gone")
        #expect(String(decoding: deleted.encoded(), as: UTF8.self).contains(#""code":"DeviceDeleted""#))
        let read = try LinkMessage(json: Data(#"{"type":"error","code":"DeviceDeleted","message":"gone"}"#.utf8))
        #expect(read == deleted)
        let newer = try LinkMessage(json: Data(#"{"type":"error","request":2,"code":"SomethingNew"}"#.utf8))
        #expect(newer == .error(request: 2, code: LinkErrorCode(rawValue: "SomethingNew"), message: ""))
    }

    /// `push` and `ack` are read without JSONDecoder; whatever that reader takes, it reads as
    /// JSONDecoder does.
    @Test(arguments: messages)
    func theFastReaderAgreesWithJSONDecoder(_ message: LinkMessage) throws {
        let json = message.encoded()
        let slow = try LinkMessage(envelope: LinkMessage.decodeEnvelope(json))
        #expect(slow == message)
        let flat = json.withUnsafeBytes { LinkMessage.Envelope(flatJSON: $0) }
        switch message {
        case .push, .ack:
            let fast = try #require(flat)
            #expect(try LinkMessage(envelope: fast) == slow)
        default:
            if let flat { #expect(try LinkMessage(envelope: flat) == slow) }
        }
        // Reordered keys and spacing read the same.
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        let pretty = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted])
        #expect(try LinkMessage(json: pretty) == message)
    }

    @Test func theHandWrittenPushIsJSONThatFoundationReads() throws {
        let push = LinkPush(
            apnsID: "a\u{1}b", topic: "com.example.a", token: Self.token, environment: .development, pushType: .alert,
            priority: .low, expiration: 1_800_000_000, collapseID: "é", payload: Data("{}".utf8))
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(push.encodedMessage())) as? [String: Any])
        #expect(object["type"] as? String == "push")
        #expect(object["apnsID"] as? String == "a\u{1}b")
        #expect(object["collapseID"] as? String == "é")
        #expect(object["priority"] as? Int == 1)
        #expect(object["expiration"] as? Int == 1_800_000_000)
        #expect(object["payload"] as? String == Data("{}".utf8).base64EncodedString())
    }

    /// The reader leaves to JSONDecoder what it might read differently: a known field twice, a
    /// value of another type, text after the object; unknown fields are skipped.
    @Test func theDirectReaderDeclinesWhatTheFlatReaderDeclines() throws {
        func direct(_ text: String) -> LinkMessage.Envelope? {
            Data(text.utf8).withUnsafeBytes { LinkMessage.Envelope(flatJSON: $0) }
        }
        #expect(direct(#"{"type":"ack","ids":["a"],"ids":["b"]}"#) == nil)
        #expect(direct(#"{"type":"ack","type":"ack","ids":[]}"#) == nil)
        #expect(direct(#"{"ids":["a"]}"#) == nil)
        #expect(direct(#"{"type":"push","priority":"10"}"#) == nil)
        #expect(direct(#"{"type":"ack","ids":["a"]} x"#) == nil)
        let skipped = try #require(direct(#"{"later":"x","type":"ack","ids":["a"],"later2":7}"#))
        #expect(try LinkMessage(envelope: skipped) == .ack(["a"]))
    }

    /// Keys written with escapes, and base64 in a form other than the canonical one, still read as
    /// JSONDecoder reads them: the reader converts from the bytes only what it is sure of.
    @Test func escapedKeysAndUnusualBase64ReadAsJSONDecoderReadsThem() throws {
        let token = String(repeating: "ab", count: 32)
        let texts = [
            #"{"t\u0079pe":"push","apnsID":"a","topic":"t","token":"\#(token)","environment":"production","pushType":"alert","priority":10,"payload":"e30="}"#,
            #"{"type":"push","apnsID":"a","topic":"t","token":"\#(token.uppercased())","environment":"production","pushType":"alert","priority":5,"payload":"e30="}"#,
            #"{"type":"push","apnsID":"a","topic":"t","token":"\#(token)","environment":"production","pushType":"alert","priority":10,"payload":"e31="}"#,
            #"{"type":"push","apnsID":"a","topic":"t","token":"\#(token)","environment":"production","pushType":"alert","priority":10,"payload":"e3\/="}"#,
            #"{"type":"hello","signature":"AQ","device":"d\u00e9"}"#,
        ]
        for text in texts {
            let json = Data(text.utf8)
            let slow = Result { () throws(LinkMessageError) in
                try LinkMessage(envelope: LinkMessage.decodeEnvelope(json))
            }
            let fast = Result { () throws(LinkMessageError) in try LinkMessage(json: json) }
            #expect(fast == slow, "\(text)")
        }
        // The first one is read without JSONDecoder, its escaped key and all.
        let flat = try #require(Data(texts[0].utf8).withUnsafeBytes { LinkMessage.Envelope(flatJSON: $0) })
        #expect(flat.type == "push")
        #expect(flat.payload == Data("{}".utf8))
        #expect(flat.token == DeviceToken(hex: token))
    }

    @Test func errorsNameTheField() {
        #expect(throws: LinkMessageError("register needs \"topic\"")) {
            try LinkMessage(json: Data(#"{"type":"register","environment":"development"}"#.utf8))
        }
        #expect(throws: LinkMessageError("unknown message type \"nope\"")) {
            try LinkMessage(json: Data(#"{"type":"nope"}"#.utf8))
        }
        // A name a megabyte long is quoted only in part.
        let long = String(repeating: "x", count: 1_000_000)
        #expect(throws: LinkMessageError("unknown message type \"\(long.prefix(64))…\" (1000000 bytes in all)")) {
            try LinkMessage(json: Data(#"{"type":"\#(long)"}"#.utf8))
        }
        #expect(throws: LinkMessageError("missing field \"type\"")) {
            try LinkMessage(json: Data(#"{"ids":[]}"#.utf8))
        }
        #expect(throws: LinkMessageError("not a JSON object")) { try LinkMessage(json: Data("[1".utf8)) }
        #expect(throws: LinkMessageError("field \"environment\" is malformed")) {
            try LinkMessage(json: Data(#"{"type":"register","topic":"a","environment":"staging"}"#.utf8))
        }
    }

    /// `goaway` needs its window, and not a negative one.
    @Test func aGoAwayWithoutAWindowIsRefused() throws {
        #expect(throws: LinkMessageError("goaway needs \"reconnectWithin\"")) {
            try LinkMessage(json: Data(#"{"type":"goaway"}"#.utf8))
        }
        #expect(throws: LinkMessageError("goaway needs \"reconnectWithin\" of 0 or more")) {
            try LinkMessage(json: Data(#"{"type":"goaway","reconnectWithin":-5}"#.utf8))
        }
        #expect(
            try LinkMessage(json: Data(#"{"reconnectWithin":2500,"type":"goaway"}"#.utf8))
                == .goAway(reconnectWithin: 2500))
    }
}
