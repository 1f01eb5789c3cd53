import Foundation
import Testing

@testable import HeraldCore

/// `LinkPush(gatewayForm:)`: the one-pass reader of a `push` as the gateway writes it. Whatever it
/// reads, it reads as JSONDecoder does; whatever is not exactly that form, it leaves to the general
/// readers.
@Suite struct LinkPushReaderTests {
    static let token = DeviceToken(bytes: (0..<32).map { UInt8($0 * 7 & 0xFF) })

    static func push(
        apnsID: String = "6e1f2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b", uniqueID: String? = nil,
        topic: String = "com.example.a",
        expiration: Int64? = nil, collapseID: String? = nil, payload: Data = Data(#"{"aps":{"alert":"Hi"}}"#.utf8)
    ) -> LinkPush {
        LinkPush(
            apnsID: apnsID, uniqueID: uniqueID, topic: topic, token: token, environment: .development,
            pushType: .alert, priority: .immediate, expiration: expiration, collapseID: collapseID, payload: payload)
    }

    static func gatewayForm(_ text: String) -> LinkPush? {
        Data(text.utf8).withUnsafeBytes { LinkPush(gatewayForm: $0) }
    }

    static func decoderReading(_ json: Data) -> Result<LinkMessage, LinkMessageError> {
        Result { () throws(LinkMessageError) in try LinkMessage(envelope: LinkMessage.decodeEnvelope(json)) }
    }

    /// Every optional field present or not, and the values at their edges.
    @Test func readsWhatTheGatewayWrites() throws {
        let pushes = [
            Self.push(),
            Self.push(uniqueID: "0c6a3bd0-5f0e-4c55-9b52-0d1e6f2b8a41", expiration: 0, collapseID: "score"),
            Self.push(expiration: 1_800_000_000),
            Self.push(expiration: -5),
            Self.push(collapseID: ""),
            Self.push(apnsID: "any text at all: {}[],:", topic: "t", payload: Data()),
            Self.push(payload: Data((0..<256).map { UInt8($0) })),
        ]
        for push in pushes {
            let json = Data(push.encodedMessage())
            let read = try #require(json.withUnsafeBytes { LinkPush(gatewayForm: $0) }, "\(push)")
            #expect(read == push)
            #expect(Self.decoderReading(json) == .success(.push(push)))
            #expect(try LinkMessage(json: json) == .push(push))
        }
    }

    /// Random pushes, strings with quotes, backslashes, controls and non-ASCII among them: every
    /// one reads back as it was written, by one reader or another, and when the one-pass reader
    /// takes it, it reads what JSONDecoder reads.
    @Test func randomPushesReadAsJSONDecoderReadsThem() throws {
        var random = JSONBytesTests.Random(state: 35)
        let alphabet = Array("abcXYZ019-_.:/ {}[]\"\\\n\u{1}é🎉")
        func text() -> String { String((0..<random.next(12)).map { _ in alphabet[random.next(alphabet.count)] }) }
        var takenByTheOnePassReader = 0
        for _ in 0..<500 {
            let push = LinkPush(
                apnsID: text(), uniqueID: random.next(2) == 0 ? nil : text(), topic: text(), token: Self.token,
                environment: random.next(2) == 0 ? .development : .production,
                pushType: PushType.allCases[random.next(PushType.allCases.count)],
                priority: PushPriority.allCases[random.next(PushPriority.allCases.count)],
                expiration: random.next(3) == 0 ? nil : Int64(random.next(4_000_000_000)) - 1_000_000_000,
                collapseID: random.next(2) == 0 ? nil : text(),
                payload: Data((0..<random.next(40)).map { _ in UInt8(random.next(256)) }))
            let json = Data(push.encodedMessage())
            #expect(try LinkMessage(json: json) == .push(push))
            if let read = json.withUnsafeBytes({ LinkPush(gatewayForm: $0) }) {
                takenByTheOnePassReader += 1
                #expect(read == push)
                #expect(Self.decoderReading(json) == .success(.push(push)))
            }
        }
        // Both kinds came up: the test exercised the reader and its refusals.
        #expect(takenByTheOnePassReader > 10)
        #expect(takenByTheOnePassReader < 490)
    }

    /// Valid messages in another form, and invalid ones, are not read here; what the general
    /// readers make of them stands (read the same, or refused with the same error).
    @Test func anyOtherFormIsLeftToTheGeneralReaders() throws {
        let hex = Self.token.hex
        let base =
            #"{"type":"push","apnsID":"a","topic":"t","token":"\#(hex)","environment":"production","pushType":"alert","priority":10,"payload":"e30="}"#
        #expect(
            Self.gatewayForm(base)
                == LinkPush(
                    apnsID: "a", topic: "t", token: Self.token, environment: .production, pushType: .alert,
                    priority: .immediate, expiration: nil, collapseID: nil, payload: Data("{}".utf8)))
        func with(_ old: String, _ new: String) -> String { base.replacingOccurrences(of: old, with: new) }
        let others: [String] = [
            with(#""apnsID":"a","topic":"t""#, #""topic":"t","apnsID":"a""#),
            with(#","topic""#, #", "topic""#),
            with(#""priority":10"#, #""priority":010"#),
            with(#""priority":10"#, #""priority":10.0"#),
            with(#""priority":10"#, #""priority":"10""#),
            with(#""priority":10"#, #""priority":7"#),
            with(#""payload""#, #""expiration":-0,"payload""#),
            with(#""payload""#, #""expiration":1234567890123456789,"payload""#),
            with(#""payload""#, #""expiration":99999999999999999999999,"payload""#),
            with(#""priority":10"#, #""priority":-99999999999999999999999"#),
            with(#""payload""#, #""later":1,"payload""#),
            with(#""e30=""#, #""e31=""#),
            with(#""e30=""#, #""e30""#),
            with(#""a""#, #""\u0061""#),
            with(#""a""#, "\"é\""),
            with(#""t""#, "\"t\u{1}\""),
            with(hex, String(hex.dropLast())),
            with(#""production""#, #""staging""#),
            with(#""alert""#, #""banner""#),
            base + " ",
            base + "x",
            String(base.dropLast()),
        ]
        for text in others {
            #expect(Self.gatewayForm(text) == nil, "\(text)")
            let json = Data(text.utf8)
            let general = Result { () throws(LinkMessageError) in try LinkMessage(json: json) }
            #expect(general == Self.decoderReading(json), "\(text)")
        }
    }
}
