import Foundation
import HeraldCore

/// How every ``GatewayStore`` lays out what it keeps: directory records and stored pushes as
/// JSON (dates in milliseconds), delivery-log rows as runs of one push's events (JSON) or, for a
/// push delivered at once, as a ``DeliveredRecord``. The SQLite and PostgreSQL stores share it, so
/// a record reads the same from either.
struct StoreRecords: Sendable {
    let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = .sortedKeys
        e.dateEncodingStrategy = .millisecondsSince1970
        return e
    }()
    let decoder: JSONDecoder = {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .millisecondsSince1970
        return d
    }()

    /// A stored push's record: everything but the payload, which has a column of its own.
    func metadata(of push: StoredPush) throws -> Data {
        var meta = push
        meta.payload = Data()
        return try encoder.encode(meta)
    }

    /// A stored push from its record and payload columns.
    func storedPush(record: Data, payload: Data) throws -> StoredPush {
        var push = try decoder.decode(StoredPush.self, from: record)
        push.payload = payload
        return push
    }

    /// The directory records of a snapshot's tables.
    func snapshot(
        teams: [Data], keys: [Data], apps: [Data], devices: [Data], registrations: [Data]
    ) throws -> DirectorySnapshot {
        var snapshot = DirectorySnapshot()
        snapshot.teams = try teams.map { try decoder.decode(Team.self, from: $0) }
        snapshot.keys = try keys.map { try decoder.decode(ProviderKey.self, from: $0) }
        snapshot.apps = try apps.map { try decoder.decode(TeamApp.self, from: $0) }
        snapshot.devices = try devices.map { try decoder.decode(DeviceRecord.self, from: $0) }
        snapshot.registrations = try registrations.map { try decoder.decode(Registration.self, from: $0) }
        return snapshot
    }

    /// The events of one delivery-log row: a delivered push's compact record (``DeliveredRecord``),
    /// or JSON: runs are arrays without the identifiers; older records are one event with them.
    func events(apnsID: String, uniqueID: String?, record: Data) throws -> [DeliveryEvent] {
        if record.first == DeliveredRecord.marker {
            return try DeliveredRecord.events(record, apnsID: apnsID, uniqueID: uniqueID)
        }
        let stored =
            record.first == UInt8(ascii: "[")
            ? try decoder.decode([StoredDeliveryEvent].self, from: record)
            : [try decoder.decode(StoredDeliveryEvent.self, from: record)]
        return stored.map { $0.event(apnsID: apnsID, uniqueID: uniqueID) }
    }

    /// The events of the newest rows of the delivery log, given newest first: oldest first, without
    /// the rows that cannot be read (counted instead), so that one damaged row, or one written by a
    /// newer release, does not take the whole history with it.
    func recent(rowsNewestFirst rows: [(apnsID: String, uniqueID: String?, record: Data)]) -> DeliveryLogRead {
        var log = DeliveryLogRead()
        for row in rows.reversed() {
            if let events = try? events(apnsID: row.apnsID, uniqueID: row.uniqueID, record: row.record) {
                log.events += events
            } else {
                log.unreadableRows += 1
            }
        }
        return log
    }

    /// One push's delivery log from its rows in the order they were written. A group commit writes
    /// delivered pushes after its other log lines, so the rows of one id (a provider may reuse an
    /// apns-id) are not always in time order: the runs are ordered by when each began (the sort is
    /// stable), each keeping its own order.
    /// A row that cannot be read is left out and counted.
    func deliveryLog(rows: [(apnsID: String, uniqueID: String?, record: Data)]) -> DeliveryLogRead {
        var unreadable = 0
        var runs = rows.compactMap { row -> [DeliveryEvent]? in
            guard let run = try? events(apnsID: row.apnsID, uniqueID: row.uniqueID, record: row.record) else {
                unreadable += 1
                return nil
            }
            return run
        }
        runs.sort { ($0.first?.at ?? .distantPast) < ($1.first?.at ?? .distantPast) }
        return DeliveryLogRead(events: runs.flatMap { $0 }, unreadableRows: unreadable)
    }
}

/// A delivery-log row: a run of events of one push, or a push delivered and acknowledged at once.
enum LogRow: Sendable {
    case run(ArraySlice<DeliveryEvent>)
    case delivered(DeliveredPush)

    var apnsID: String {
        switch self {
        case .run(let events): events.first!.apnsID
        case .delivered(let push): push.apnsID
        }
    }

    var uniqueID: String? {
        switch self {
        case .run(let events): events.first!.uniqueID
        case .delivered(let push): push.uniqueID
        }
    }

    func writeRecord(to w: inout JSONWriter) {
        switch self {
        case .run(let events): DeliveryEvent.writeRun(events, to: &w)
        case .delivered(let push): DeliveredRecord.write(push, to: &w)
        }
    }

    /// A batch's log rows: one per run of events of the same push (accepted, delivered,
    /// acknowledged go together: a third of the rows and index entries of one row per event, and
    /// the identifiers once), then one per delivered push.
    static func rows(of batch: StoreBatch) -> [LogRow] {
        var rows: [LogRow] = []
        rows.reserveCapacity(batch.delivered.count + batch.events.count)
        var i = batch.events.startIndex
        while i < batch.events.endIndex {
            let first = batch.events[i]
            var j = i + 1
            while j < batch.events.endIndex, batch.events[j].apnsID == first.apnsID,
                batch.events[j].uniqueID == first.uniqueID
            {
                j += 1
            }
            rows.append(.run(batch.events[i..<j]))
            i = j
        }
        for push in batch.delivered { rows.append(.delivered(push)) }
        return rows
    }

    /// The rows that log what an offline policy pushed out: one per replacement.
    static func rows(of replaced: [OfflinePolicy.Replacement]) -> [LogRow] {
        let events = replaced.map(\.event)
        return events.indices.map { .run(events[$0...$0]) }
    }
}
