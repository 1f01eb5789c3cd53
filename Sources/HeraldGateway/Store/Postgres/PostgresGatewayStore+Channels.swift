import Foundation
import HeraldCore
import NIOCore
import PostgresNIO

/// Broadcast channels and the messages broadcast on them (docs/broadcast.md).
extension PostgresGatewayStore: ChannelStore {
    public func createChannel(_ channel: BroadcastChannel, limit: Int) async throws -> Bool {
        try await transaction { connection in
            // One creation at a time per app and environment, across nodes: the count holds.
            try await self.drain(
                """
                SELECT pg_advisory_xact_lock(hashtext(\(channel.bundleID) || chr(9) || \(channel.environment.rawValue)))
                """, on: connection)
            let count =
                try await self.rows(
                    """
                    SELECT count(*) FROM channel WHERE bundle_id = \(channel.bundleID)
                    AND environment = \(channel.environment.rawValue)
                    """, as: Int.self, on: connection
                ).first ?? 0
            guard count < limit else { return false }
            try await self.drain(
                """
                INSERT INTO channel (bundle_id, environment, id, storage_policy, created_at)
                VALUES (\(channel.bundleID), \(channel.environment.rawValue), \(channel.id),
                        \(channel.storagePolicy.rawValue), \(channel.createdAt.timeIntervalSince1970))
                """, on: connection)
            return true
        }
    }

    public func channel(bundleID: String, environment: APNsEnvironment, id: String) async throws -> BroadcastChannel? {
        try await rows(
            """
            SELECT storage_policy, created_at FROM channel
            WHERE bundle_id = \(bundleID) AND environment = \(environment.rawValue) AND id = \(id)
            """, as: (Int, Double).self
        ).first.flatMap { policy, created in
            ChannelStoragePolicy(rawValue: policy).map {
                BroadcastChannel(
                    id: id, bundleID: bundleID, environment: environment, storagePolicy: $0,
                    createdAt: Date(timeIntervalSince1970: created))
            }
        }
    }

    public func deleteChannel(bundleID: String, environment: APNsEnvironment, id: String) async throws -> Bool {
        try await transaction { connection in
            let existed = try await !self.rows(
                """
                DELETE FROM channel WHERE bundle_id = \(bundleID) AND environment = \(environment.rawValue) AND id = \(id)
                RETURNING id
                """, as: String.self, on: connection
            ).isEmpty
            try await self.drain(
                """
                DELETE FROM broadcast
                WHERE channel_id = \(id) AND environment = \(environment.rawValue) AND bundle_id = \(bundleID)
                """, on: connection)
            return existed
        }
    }

    public func saveBroadcast(_ m: BroadcastMessage) async throws {
        try await transaction { connection in
            try await self.drain(
                """
                DELETE FROM broadcast WHERE channel_id = \(m.channelID) AND environment = \(m.environment.rawValue)
                AND sent_at < \(m.sentAt.timeIntervalSince1970 - 60)
                """, on: connection)
            try await self.drain(
                """
                INSERT INTO broadcast (unique_id, channel_id, bundle_id, environment, storage_policy, request_id,
                    priority, expiration, payload, sent_at)
                VALUES (\(m.uniqueID), \(m.channelID), \(m.bundleID), \(m.environment.rawValue),
                    \(m.storagePolicy.rawValue), \(m.requestID), \(m.priority.rawValue), \(m.expiration),
                    \(m.payload), \(m.sentAt.timeIntervalSince1970))
                """, on: connection)
            // Heard by every node (this one too) when the transaction commits.
            try await self.drain("SELECT pg_notify(\(BroadcastChange.channel), \(m.uniqueID))", on: connection)
        }
    }

    public func broadcast(uniqueID: String) async throws -> BroadcastMessage? {
        try await broadcasts("WHERE unique_id = \(uniqueID)").first
    }

    public func latestBroadcast(channelID: String, environment: APNsEnvironment) async throws -> BroadcastMessage? {
        try await broadcasts(
            """
            WHERE channel_id = \(channelID) AND environment = \(environment.rawValue)
            ORDER BY sent_at DESC, unique_id DESC LIMIT 1
            """
        ).first
    }

    private func broadcasts(_ condition: PostgresQuery) async throws -> [BroadcastMessage] {
        var query = PostgresQuery(
            unsafeSQL: """
                SELECT unique_id, request_id, channel_id, bundle_id, environment, storage_policy, priority, expiration,
                    payload, sent_at FROM broadcast\u{20}
                """)
        query.sql += condition.sql
        query.binds = condition.binds
        return try await rows(query, as: (String, String, String, String, String, Int, Int, Int64?, Data, Double).self)
            .compactMap { unique, request, channel, bundle, environment, policy, priority, expiration, payload, sent in
                guard let environment = APNsEnvironment(rawValue: environment),
                    let policy = ChannelStoragePolicy(rawValue: policy), let priority = PushPriority(rawValue: priority)
                else { return nil }
                return BroadcastMessage(
                    uniqueID: unique, requestID: request, channelID: channel, bundleID: bundle,
                    environment: environment, storagePolicy: policy, priority: priority, expiration: expiration,
                    payload: payload, sentAt: Date(timeIntervalSince1970: sent))
            }
    }

    public func channelIDs(bundleID: String, environment: APNsEnvironment) async throws -> [String] {
        try await rows(
            """
            SELECT id FROM channel WHERE bundle_id = \(bundleID) AND environment = \(environment.rawValue)
            ORDER BY created_at, id
            """, as: String.self)
    }
}
