import Foundation
import GRDB
import HeraldCore

/// Broadcast channels and the messages broadcast on them (docs/broadcast.md).
extension SQLiteGatewayStore: ChannelStore {
    public func createChannel(_ channel: BroadcastChannel, limit: Int) async throws -> Bool {
        try await writer.write { db in
            let count =
                try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM channel WHERE bundleID = ? AND environment = ?",
                    arguments: [channel.bundleID, channel.environment.rawValue]) ?? 0
            guard count < limit else { return false }
            try db.execute(
                sql: """
                    INSERT INTO channel (bundleID, environment, id, storagePolicy, createdAt) VALUES (?, ?, ?, ?, ?)
                    """,
                arguments: [
                    channel.bundleID, channel.environment.rawValue, channel.id, channel.storagePolicy.rawValue,
                    channel.createdAt.timeIntervalSince1970,
                ])
            return true
        }
    }

    public func channel(bundleID: String, environment: APNsEnvironment, id: String) async throws -> BroadcastChannel? {
        try await writer.read { db in
            try Row.fetchOne(
                db,
                sql: "SELECT storagePolicy, createdAt FROM channel WHERE bundleID = ? AND environment = ? AND id = ?",
                arguments: [bundleID, environment.rawValue, id]
            ).flatMap { row in
                ChannelStoragePolicy(rawValue: row["storagePolicy"]).map {
                    BroadcastChannel(
                        id: id, bundleID: bundleID, environment: environment, storagePolicy: $0,
                        createdAt: Date(timeIntervalSince1970: row["createdAt"]))
                }
            }
        }
    }

    public func deleteChannel(bundleID: String, environment: APNsEnvironment, id: String) async throws -> Bool {
        try await writer.write { db in
            try db.execute(
                sql: "DELETE FROM channel WHERE bundleID = ? AND environment = ? AND id = ?",
                arguments: [bundleID, environment.rawValue, id])
            let existed = db.changesCount > 0
            try db.execute(
                sql: "DELETE FROM broadcast WHERE channelID = ? AND environment = ? AND bundleID = ?",
                arguments: [id, environment.rawValue, bundleID])
            return existed
        }
    }

    public func saveBroadcast(_ m: BroadcastMessage) async throws {
        try await writer.write { db in
            try db.execute(
                sql: "DELETE FROM broadcast WHERE channelID = ? AND environment = ? AND sentAt < ?",
                arguments: [m.channelID, m.environment.rawValue, m.sentAt.timeIntervalSince1970 - 60])
            try db.execute(
                sql: """
                    INSERT INTO broadcast (uniqueID, channelID, bundleID, environment, storagePolicy, requestID,
                        priority, expiration, payload, sentAt)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    m.uniqueID, m.channelID, m.bundleID, m.environment.rawValue, m.storagePolicy.rawValue, m.requestID,
                    m.priority.rawValue, m.expiration, m.payload, m.sentAt.timeIntervalSince1970,
                ])
        }
    }

    public func broadcast(uniqueID: String) async throws -> BroadcastMessage? {
        try await writer.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM broadcast WHERE uniqueID = ?", arguments: [uniqueID])
                .flatMap(Self.broadcast(row:))
        }
    }

    public func latestBroadcast(channelID: String, environment: APNsEnvironment) async throws -> BroadcastMessage? {
        try await writer.read { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT * FROM broadcast WHERE channelID = ? AND environment = ?
                    ORDER BY sentAt DESC, uniqueID DESC LIMIT 1
                    """,
                arguments: [channelID, environment.rawValue]
            ).flatMap(Self.broadcast(row:))
        }
    }

    static func broadcast(row: Row) -> BroadcastMessage? {
        guard let environment = APNsEnvironment(rawValue: row["environment"]),
            let policy = ChannelStoragePolicy(rawValue: row["storagePolicy"]),
            let priority = PushPriority(rawValue: row["priority"])
        else { return nil }
        return BroadcastMessage(
            uniqueID: row["uniqueID"], requestID: row["requestID"], channelID: row["channelID"],
            bundleID: row["bundleID"], environment: environment, storagePolicy: policy, priority: priority,
            expiration: row["expiration"], payload: row["payload"],
            sentAt: Date(timeIntervalSince1970: row["sentAt"]))
    }

    public func channelIDs(bundleID: String, environment: APNsEnvironment) async throws -> [String] {
        try await writer.read { db in
            try String.fetchAll(
                db, sql: "SELECT id FROM channel WHERE bundleID = ? AND environment = ? ORDER BY createdAt, id",
                arguments: [bundleID, environment.rawValue])
        }
    }
}
