import Foundation
import HeraldCore
import Testing

@testable import HeraldGateway

/// The delivery log's compact record of a delivered push (``DeliveredRecord``): what it reads back
/// as, how small it is, and that a damaged one is refused rather than misread.
@Suite struct DeliveredRecordTests {
    func record(_ push: DeliveredPush) -> [UInt8] {
        var w = JSONWriter()
        DeliveredRecord.write(push, to: &w)
        return w.bytes
    }

    func events(_ bytes: [UInt8], of push: DeliveredPush) throws -> [DeliveryEvent] {
        try StoreRecords().events(apnsID: push.apnsID, uniqueID: push.uniqueID, record: Data(bytes))
    }

    static let pushes = [
        // The benchmark's push: a warning, the device acknowledging 3 ms after the write.
        DeliveredPush(
            apnsID: "0193a2b4-6c1d-7e2f-8a3b-4c5d6e7f8091", uniqueID: "0193a2b4-6c1d-7e2f-9a3b-4c5d6e7f8092",
            deviceID: "bench-device", topic: "com.example.bench",
            acceptedAt: Date(timeIntervalSince1970: 1_795_928_182.120),
            deliveredAt: Date(timeIntervalSince1970: 1_795_928_182.120),
            acknowledgedAt: Date(timeIntervalSince1970: 1_795_928_182.123), warnings: PushWarnings([.alertTruncated])),
        // Text that JSON would escape, a binary interface identifier at its largest, two warnings.
        DeliveredPush(
            apnsID: "id-2", uniqueID: nil, deviceID: #"dev "1"\x\#n"#, topic: "com.example.é.voip",
            binaryIdentifier: .max, acceptedAt: Date(timeIntervalSince1970: 11),
            deliveredAt: Date(timeIntervalSince1970: 12.5), acknowledgedAt: Date(timeIntervalSince1970: 13.25),
            warnings: PushWarnings([.badgeNotANumber, .alertTruncated]), pushType: .voip),
        // A clock stepped back between the write and the acknowledgement, and a date before 1970.
        DeliveredPush(
            apnsID: "id-3", uniqueID: "u-3", deviceID: "d", topic: "t",
            acceptedAt: Date(timeIntervalSince1970: -86_400.5), deliveredAt: Date(timeIntervalSince1970: 5),
            acknowledgedAt: Date(timeIntervalSince1970: 4.999)),
    ]

    @Test(arguments: pushes) func readsBackAsTheEventsOfThePush(push: DeliveredPush) throws {
        let bytes = record(push)
        #expect(bytes.first == DeliveredRecord.marker)
        #expect(try events(bytes, of: push) == push.events)
    }

    /// The benchmark's push: its JSON run was 243 bytes.
    @Test func aTypicalRecordTakesUnderSixtyBytes() {
        let bytes = record(Self.pushes[0])
        #expect(bytes.count < 60, "\(bytes.count) bytes")
        // The device and the topic are most of it.
        #expect(bytes.count - "bench-device".utf8.count - "com.example.bench".utf8.count < 30)
    }

    /// Every record cut short, and one with a byte too many, is refused with a reason.
    @Test(arguments: pushes) func aDamagedRecordIsRefused(push: DeliveredPush) throws {
        let bytes = record(push)
        for length in 1..<bytes.count {
            #expect(throws: CorruptLogRecord.self, "cut to \(length) bytes") {
                try events(Array(bytes.prefix(length)), of: push)
            }
        }
        #expect(throws: CorruptLogRecord.self) { try events(bytes + [0], of: push) }
    }

    @Test func numbersBeyondTheirRangeAreRefused() throws {
        // A varint of eleven bytes, and a binary interface identifier over 32 bits.
        let tooLong: [UInt8] = [DeliveredRecord.marker] + Array(repeating: 0xFF, count: 10) + [0x01]
        let push = Self.pushes[2]
        #expect(throws: CorruptLogRecord.self) { try events(tooLong, of: push) }
        let wideIdentifier: [UInt8] = [
            DeliveredRecord.marker, 0, 0, 0, 1, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 1, 0x64, 1, 0x74,
        ]
        #expect(throws: CorruptLogRecord.self) { try events(wideIdentifier, of: push) }
        // The same record with an identifier that fits reads.
        let fits: [UInt8] = [DeliveredRecord.marker, 0, 0, 0, 1, 0x80, 0x80, 0x80, 0x80, 0x0F, 0, 1, 0x64, 1, 0x74]
        #expect(try events(fits, of: push).first?.detail == "device d, topic t, binary interface identifier 4026531840")
    }

    /// Rows written by earlier versions, a delivered push's JSON run among them, still read back
    /// beside the compact records.
    @Test(arguments: StoreKind.allCases) func jsonRunsAndCompactRecordsReadTogether(kind: StoreKind) async throws {
        let store = try await kind.store()
        let push = Self.pushes[1]
        var json = JSONWriter()
        DeliveryEvent.writeRun(push.events[...], to: &json)
        #expect(json.bytes.first == UInt8(ascii: "["))
        #expect(try events(json.bytes, of: push) == push.events)
        // The same push delivered again later (a provider may reuse an apns-id), now in the
        // compact form: the log has both runs, oldest first.
        var again = push
        again.acceptedAt = Date(timeIntervalSince1970: 100)
        again.deliveredAt = Date(timeIntervalSince1970: 101)
        again.acknowledgedAt = Date(timeIntervalSince1970: 102)
        var batch = StoreBatch()
        batch.delivered = [again]
        batch.events = push.events
        _ = try await store.commit(batch, policy: OfflinePolicy(), durable: false)
        #expect(try await store.deliveryLog(id: push.apnsID) == push.events + again.events)
    }
}
