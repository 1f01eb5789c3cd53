import HeraldCore
import Testing

/// The legacy binary interface's codec (docs/binary-provider.md), byte for byte.
@Suite struct LegacyBinaryTests {
    let token: [UInt8] = (0..<32).map { UInt8($0 * 7 & 0xFF) }
    let payload: [UInt8] = Array(#"{"aps":{"alert":"hi"}}"#.utf8)

    /// `u16` big-endian.
    func be16(_ v: Int) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
    func be32(_ v: UInt32) -> [UInt8] {
        [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
    }

    @Test func simpleNotificationBytes() {
        let n = LegacyBinary.Notification(command: 0, token: token, payload: payload)
        let expected: [UInt8] = [0] + be16(32) + token + be16(payload.count) + payload
        #expect(n.encoded() == expected)
        #expect(LegacyBinary.parse(expected) == .notification(n, consumed: expected.count))
    }

    @Test func enhancedNotificationBytes() {
        let n = LegacyBinary.Notification(
            command: 1, identifier: 0x0102_0304, expiration: 0xA0B0_C0D0, token: token, payload: payload)
        let expected: [UInt8] =
            [1, 0x01, 0x02, 0x03, 0x04, 0xA0, 0xB0, 0xC0, 0xD0] + be16(32) + token + be16(payload.count) + payload
        #expect(n.encoded() == expected)
        #expect(LegacyBinary.parse(expected) == .notification(n, consumed: expected.count))
    }

    @Test func frameNotificationBytesWithEveryItem() {
        let n = LegacyBinary.Notification(
            command: 2, identifier: 77, expiration: 1_800_000_000, token: token, payload: payload, priority: 5)
        var items: [UInt8] = [1] + be16(32) + token
        items += [2] + be16(payload.count) + payload
        items += [3] + be16(4) + be32(77)
        items += [4] + be16(4) + be32(1_800_000_000)
        items += [5] + be16(1) + [5]
        let expected: [UInt8] = [2] + be32(UInt32(items.count)) + items
        #expect(n.encoded() == expected)
        #expect(LegacyBinary.parse(expected) == .notification(n, consumed: expected.count))
    }

    @Test func frameItemsMayComeInAnyOrderAndTheOptionalOnesMayBeMissing() {
        let items: [UInt8] = [3] + be16(4) + be32(9) + [2] + be16(payload.count) + payload + [1] + be16(32) + token
        let bytes: [UInt8] = [2] + be32(UInt32(items.count)) + items
        let expected = LegacyBinary.Notification(command: 2, identifier: 9, token: token, payload: payload)
        #expect(LegacyBinary.parse(bytes) == .notification(expected, consumed: bytes.count))
    }

    /// Every status the parser itself gives, each from a crafted input, with the identifier it names.
    @Test func eachParseErrorFromACraftedInput() {
        func frame(_ items: [UInt8]) -> [UInt8] { [2] + be32(UInt32(items.count)) + items }
        let id: [UInt8] = [3] + be16(4) + be32(42)
        let tokenItem: [UInt8] = [1] + be16(32) + token
        let payloadItem: [UInt8] = [2] + be16(payload.count) + payload
        let cases: [([UInt8], LegacyBinary.Status, UInt32)] = [
            // 2: missing device token (zero length, or no item 1)
            ([1] + be32(5) + be32(0) + be16(0) + be16(payload.count) + payload, .missingDeviceToken, 5),
            (frame(id + payloadItem), .missingDeviceToken, 42),
            // 4: missing payload
            ([1] + be32(6) + be32(0) + be16(32) + token + be16(0), .missingPayload, 6),
            (frame(id + tokenItem), .missingPayload, 42),
            // 5: invalid token size
            ([0] + be16(31) + Array(token.prefix(31)) + be16(payload.count) + payload, .invalidTokenSize, 0),
            (frame(id + [1] + be16(33) + token + [0] + payloadItem), .invalidTokenSize, 42),
            // 7: invalid payload size: 257 bytes in commands 0 and 1, 2049 in a frame
            (
                [1] + be32(7) + be32(0) + be16(32) + token + be16(257) + [UInt8](repeating: 0x20, count: 257),
                .invalidPayloadSize, 7
            ),
            (frame(id + tokenItem + [2] + be16(2049) + [UInt8](repeating: 0x20, count: 2049)), .invalidPayloadSize, 42),
            // 128: protocol errors
            ([9, 1, 2, 3], .protocolError, 0),  // unknown command
            (frame(id + tokenItem + payloadItem + [6] + be16(1) + [0]), .protocolError, 42),  // unknown item
            (frame(id + tokenItem + payloadItem + [5] + be16(1) + [7]), .protocolError, 42),  // priority 7
            (frame(id + tokenItem + payloadItem + [4] + be16(2) + [0, 0]), .protocolError, 42),  // short expiration
            (frame(id + tokenItem + payloadItem + id), .protocolError, 42),  // an item twice
            (frame(id + tokenItem + [2] + be16(500) + payload), .protocolError, 42),  // item past the frame
            ([2] + be32(UInt32(LegacyBinary.maximumFrameLength + 1)), .protocolError, 0),  // frame too long
        ]
        for (bytes, status, identifier) in cases {
            #expect(LegacyBinary.parse(bytes) == .failure(status, identifier: identifier), "\(bytes.prefix(12))")
        }
        // The limits themselves are accepted.
        let at256 = LegacyBinary.Notification(
            command: 1, identifier: 1, expiration: 0, token: token, payload: [UInt8](repeating: 0x20, count: 256))
        #expect(LegacyBinary.parse(at256.encoded()) == .notification(at256, consumed: at256.encoded().count))
        let at2048 = LegacyBinary.Notification(
            command: 2, identifier: 1, token: token, payload: [UInt8](repeating: 0x20, count: 2048))
        #expect(LegacyBinary.parse(at2048.encoded()) == .notification(at2048, consumed: at2048.encoded().count))
    }

    /// A stream split anywhere gives the same notifications, and several in one read all come out.
    @Test func splitAndCoalescedReads() {
        let notifications = [
            LegacyBinary.Notification(command: 0, token: token, payload: payload),
            LegacyBinary.Notification(command: 1, identifier: 2, expiration: 0, token: token, payload: payload),
            LegacyBinary.Notification(
                command: 2, identifier: 3, expiration: 5, token: token, payload: payload, priority: 10),
        ]
        let stream = notifications.flatMap { $0.encoded() }
        // Coalesced: all three in one read.
        #expect(drain(stream) == notifications)
        // Split at every point into two reads, and byte by byte.
        for cut in 1..<stream.count {
            var parser = StreamParser()
            let parsed = parser.feed(Array(stream[..<cut])) + parser.feed(Array(stream[cut...]))
            #expect(parsed == notifications, "cut at \(cut)")
            #expect(parser.buffer.isEmpty)
        }
        var parser = StreamParser()
        #expect(stream.flatMap { parser.feed([$0]) } == notifications)
    }

    func drain(_ bytes: [UInt8]) -> [LegacyBinary.Notification] {
        var parser = StreamParser()
        return parser.feed(bytes)
    }

    /// What the gateway does with reads: keep what is not yet a whole notification.
    struct StreamParser {
        var buffer: [UInt8] = []
        mutating func feed(_ bytes: [UInt8]) -> [LegacyBinary.Notification] {
            buffer += bytes
            var out: [LegacyBinary.Notification] = []
            while case .notification(let n, let consumed) = LegacyBinary.parse(buffer) {
                out.append(n)
                buffer.removeFirst(consumed)
            }
            return out
        }
    }

    @Test func errorPacketAndFeedbackTupleBytes() throws {
        #expect(LegacyBinary.errorPacket(.invalidToken, identifier: 0x0A0B_0C0D) == [8, 8, 0x0A, 0x0B, 0x0C, 0x0D])
        #expect(LegacyBinary.errorPacket(.shutdown, identifier: 3) == [8, 10, 0, 0, 0, 3])
        let parsed = try #require(LegacyBinary.parseErrorPacket([8, 128, 0, 0, 1, 0]))
        #expect(parsed.status == .protocolError && parsed.identifier == 256)
        #expect(LegacyBinary.parseErrorPacket([7, 1, 0, 0, 0, 0]) == nil)

        let tuple = LegacyBinary.FeedbackTuple(time: 0x6000_0001, token: token)
        #expect(tuple.encoded() == [0x60, 0, 0, 1, 0, 32] + token)
        let second = LegacyBinary.FeedbackTuple(time: 5, token: [1, 2])
        #expect(try LegacyBinary.parseFeedback(tuple.encoded() + second.encoded()) == [tuple, second])
        #expect(try LegacyBinary.parseFeedback([]) == [])
        #expect(throws: LegacyBinary.FeedbackFormatError.self) {
            try LegacyBinary.parseFeedback(Array(tuple.encoded().dropLast()))
        }
    }

    /// The status a binary provider gets where the HTTP/2 API would answer with a reason.
    @Test func reasonsMapToStatuses() {
        let table: [(APNsReason, LegacyBinary.Status)] = [
            (.missingDeviceToken, .missingDeviceToken), (.missingTopic, .missingTopic),
            (.payloadEmpty, .missingPayload),
            (.badTopic, .invalidTopicSize), (.payloadTooLarge, .invalidPayloadSize), (.badDeviceToken, .invalidToken),
            (.deviceTokenNotForTopic, .invalidToken), (.shutdown, .shutdown), (.internalServerError, .processingError),
            (.serviceUnavailable, .processingError), (.tooManyRequests, .processingError), (.forbidden, .unknown),
            (.badPriority, .unknown),
        ]
        for (reason, status) in table { #expect(LegacyBinary.Status(reason: reason) == status, "\(reason)") }
    }
}
