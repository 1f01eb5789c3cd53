import GRDB

/// The SQLite store's schema: GRDB migrations, run in order when the store opens.
extension SQLiteGatewayStore {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("gateway-v1") { db in
            for (table, key) in [("team", "id"), ("providerKey", "id"), ("app", "bundleID"), ("device", "id")] {
                try db.create(table: table) { t in
                    t.primaryKey(key, .text)
                    t.column("record", .blob).notNull()
                }
            }
            try db.create(table: "registration") { t in
                t.column("environment", .text).notNull()
                t.column("token", .text).notNull()
                t.column("deviceID", .text).notNull().indexed()
                t.column("record", .blob).notNull()
                t.primaryKey(["environment", "token"])
            }
            try db.create(table: "feedback") { t in
                t.column("bundleID", .text).notNull()
                t.column("environment", .text).notNull()
                t.column("token", .text).notNull()
                t.column("removedAt", .double).notNull()
                t.primaryKey(["bundleID", "environment", "token"])
            }
            try db.create(table: "stored") { t in
                t.autoIncrementedPrimaryKey("seq")
                t.column("apnsID", .text).notNull()
                t.column("deviceID", .text).notNull()
                t.column("topic", .text).notNull()
                t.column("collapseID", .text)
                t.column("expiresAt", .double).notNull()
                t.column("record", .blob).notNull()
                t.column("payload", .blob).notNull()
            }
            try db.create(index: "stored_device_topic", on: "stored", columns: ["deviceID", "topic", "seq"])
            try db.create(index: "stored_apnsID", on: "stored", columns: ["deviceID", "apnsID"])
            try db.create(index: "stored_expiry", on: "stored", columns: ["expiresAt"])
            try db.create(table: "event") { t in
                t.autoIncrementedPrimaryKey("seq")
                t.column("apnsID", .text).notNull().indexed()
                t.column("uniqueID", .text).indexed()
                t.column("record", .blob).notNull()
            }
        }
        // Where the delivery log stood at each hourly purge (its newest `seq` then): the purge deletes
        // the rows up to the newest mark older than the retention period, and the rows themselves
        // need no time column (the hot path writes them as they are).
        migrator.registerMigration("gateway-v2-log-marks") { db in
            try db.create(table: "eventMark") { t in
                t.primaryKey("at", .double)
                t.column("seq", .integer).notNull()
            }
        }
        // Broadcast channels (docs/broadcast.md).
        migrator.registerMigration("gateway-v3-channels") { db in
            try db.create(table: "channel") { t in
                t.column("bundleID", .text).notNull()
                t.column("environment", .text).notNull()
                t.column("id", .text).notNull()
                t.column("storagePolicy", .integer).notNull()
                t.column("createdAt", .double).notNull()
                t.primaryKey(["bundleID", "environment", "id"])
            }
            // Messages broadcast on them (``BroadcastMessage``): the recent ones, and the most recent.
            try db.create(table: "broadcast") { t in
                t.primaryKey("uniqueID", .text)
                t.column("channelID", .text).notNull()
                t.column("bundleID", .text).notNull()
                t.column("environment", .text).notNull()
                t.column("storagePolicy", .integer).notNull()
                t.column("requestID", .text).notNull()
                t.column("priority", .integer).notNull()
                t.column("expiration", .integer)
                t.column("payload", .blob).notNull()
                t.column("sentAt", .double).notNull()
            }
            try db.create(index: "broadcast_channel", on: "broadcast", columns: ["channelID", "environment", "sentAt"])
        }
        // Pushes by day, app and Apple's delivery state (``DeliveryCount``).
        migrator.registerMigration("gateway-v4-delivery-counts") { db in
            try db.create(table: "deliveryCount") { t in
                t.column("day", .text).notNull()
                t.column("app", .text).notNull()
                t.column("state", .text).notNull()
                t.column("count", .integer).notNull()
                t.primaryKey(["day", "app", "state"])
            }
        }
        return migrator
    }
}
