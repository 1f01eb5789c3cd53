import Foundation
import GRDB
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldDevice

@Suite struct DeviceStoreTests {
    func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(UUID().uuidString).sqlite").path
    }

    @Test func everythingSurvivesARestart() async throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let app = "com.example.app"
        let t0 = at("2025-01-01T00:00:00Z")
        var e = try engine(app: app, now: t0)
        _ = try e.handle(.installApp(InstalledApp(bundleID: "com.other")), now: t0)
        _ = try e.handle(
            .setCategories(
                app: app,
                categories: [
                    try NotificationCategory(
                        identifier: "C", actions: [try NotificationAction(identifier: "OK", title: "OK")])
                ]), now: t0)
        _ = try e.handle(
            .add(
                app: app,
                request: NotificationRequest(
                    identifier: "later", content: content("later"),
                    trigger: .timeInterval(try TimeIntervalTrigger(interval: 3600)))), now: t0)
        _ = try e.handle(
            .add(app: app, request: NotificationRequest(identifier: "now", content: content("now", badge: 4))), now: t0)
        let store = try SQLiteDeviceStore(path: path)
        try await store.save(e.takeChanges())
        #expect(try await store.journalMode() == "wal")
        _ = try e.handle(.removeApp("com.other"), now: t0)
        try await store.save(e.takeChanges())
        #expect(e.changedApps.isEmpty && e.removedApps.isEmpty)
        // Removed and reinstalled before a save: the new install is written, not deleted.
        _ = try e.handle(.removeApp(app), now: t0)
        _ = try e.handle(.installApp(InstalledApp(bundleID: app)), now: t0)
        try await store.save(e.takeChanges())
        #expect(try await store.load().records.map(\.app.bundleID) == [app])
        e = try engine(app: app, now: t0)
        _ = try e.handle(
            .setCategories(
                app: app,
                categories: [
                    try NotificationCategory(
                        identifier: "C", actions: [try NotificationAction(identifier: "OK", title: "OK")])
                ]), now: t0)
        _ = try e.handle(
            .add(
                app: app,
                request: NotificationRequest(
                    identifier: "later", content: content("later"),
                    trigger: .timeInterval(try TimeIntervalTrigger(interval: 3600)))), now: t0)
        _ = try e.handle(
            .add(app: app, request: NotificationRequest(identifier: "now", content: content("now", badge: 4))), now: t0)
        try await store.save(e.takeChanges())

        // A new process: reopen, reload, and the pending request fires once, late.
        let reopened = try SQLiteDeviceStore(path: path)
        let records = try await reopened.load().records
        #expect(records.map(\.app.bundleID) == [app])
        var restarted = DeviceEngine(policy: FixedDecision(allow: false), records: records)
        let r = try #require(restarted.apps[app])
        #expect(r.settings.authorizationStatus == .authorized && r.badge == 4 && r.categories["C"] != nil)
        #expect(r.delivered.map(\.identifier) == ["now"] && r.pending["later"] != nil)
        let actions = try restarted.handle(.start, now: t0.addingTimeInterval(7200))
        #expect(actions.presentations.map(\.notification.identifier) == ["later"])
        #expect(actions.presentations.first?.notification.late == true)
        try await reopened.save(restarted.takeChanges())
        #expect(try await reopened.load().records.first?.pending.isEmpty == true)
    }
}

extension DeviceStoreTests {
    /// A database of the first schema (notifications inside each app's record) opens with its
    /// notifications in rows of their own, in order, and their pushes known as taken.
    @Test func aFirstSchemaDatabaseIsMigrated() async throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        var record = AppRecord(app: InstalledApp(bundleID: "a"))
        record.badge = 2
        record.delivered = ["new", "old"].enumerated().map { k, id in
            DeliveredNotification(
                request: NotificationRequest(identifier: id, content: NotificationContent(body: id)),
                date: at("2025-01-01T00:00:00Z").addingTimeInterval(Double(-k)), isRemote: true, late: false,
                apnsID: "apns-\(id)")
        }
        let encoded = try JSONEncoder().encode(record)
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            try db.execute(sql: "CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
            try db.execute(sql: "INSERT INTO grdb_migrations VALUES ('v1')")
            try db.execute(
                sql: "CREATE TABLE app (bundleID TEXT PRIMARY KEY, record BLOB NOT NULL, updatedAt DATETIME NOT NULL)")
            try db.execute(
                sql: "INSERT INTO app VALUES ('a', ?, ?)", arguments: [encoded, Date()])
        }
        try queue.close()
        let store = try SQLiteDeviceStore(path: path)
        let snapshot = try await store.load()
        #expect(snapshot.records.first?.delivered.map(\.identifier) == ["new", "old"])
        #expect(snapshot.records.first?.badge == 2 && snapshot.taken == ["apns-old", "apns-new"])
        #expect(snapshot.device == nil)
    }

    /// The `apns-id`s taken are kept to their bound, the newest first to stay.
    @Test func thePushesTakenAreKeptToTheirBound() async throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try SQLiteDeviceStore(path: path)
        let limit = SQLiteDeviceStore.takenLimit
        for batch in stride(from: 0, to: limit + 700, by: 100) {
            try await store.save(DeviceChanges(taken: (batch..<batch + 100).map { "p\($0)" }))
        }
        let taken = try await store.load().taken
        #expect(taken.count == limit && taken.first == "p700" && taken.last == "p\(limit + 699)")
        let rows = try await store.writer.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM taken") ?? 0 }
        #expect(rows >= limit && rows < limit + 512, "\(rows)")
    }

    /// The device's state, held notifications and the pushes taken come back after a restart.
    @Test func theDevicesStateHeldNotificationsAndTakenPushesSurvive() async throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let t0 = at("2025-01-06T10:00:00Z")
        var e = try engine(now: t0)
        var summary = SummarySettings()
        summary.enabled = true
        summary.apps = ["com.example.app"]
        _ = try e.handle(.updateSummary(summary), now: t0)
        _ = try e.handle(.focus(.turnOn("work", until: nil)), now: t0)
        _ = try e.handle(
            .remoteNotification(
                app: "com.example.app", payload: try Payload(json: #"{"aps":{"alert":"x"}}"#), apnsID: "p1",
                collapseID: nil), now: t0)
        let store = try SQLiteDeviceStore(path: path)
        try await store.save(e.takeChanges())
        let snapshot = try await store.load()
        #expect(snapshot.device?.summary.apps == ["com.example.app"] && snapshot.device?.focus.manual?.mode == "work")
        #expect(snapshot.records.first?.held?.map(\.identifier) == ["p1"] && snapshot.taken == ["p1"])
        let restarted = DeviceEngine(
            policy: FixedDecision(allow: true), records: snapshot.records, device: snapshot.device ?? DeviceState())
        #expect(restarted.activeFocus(at: t0)?.identifier == "work")
    }
}

@Suite struct CrashSafetyTests {
    /// A push waiting for its service extension when the daemon dies is still shown after the restart.
    @Test func notificationWaitingForItsExtensionSurvivesARestart() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(UUID().uuidString).sqlite")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let app = "com.example.app"
        let t0 = at("2025-01-01T00:00:00Z")
        var e = try engine(app: app, now: t0)
        let payload = try Payload(json: #"{"aps":{"alert":"original","mutable-content":1}}"#)
        _ = try e.handle(.remoteNotification(app: app, payload: payload, apnsID: "m1", collapseID: nil), now: t0)
        let store = try SQLiteDeviceStore(path: path)
        try await store.save(e.takeChanges())
        // kill -9 here; a new process loads the records.
        var restarted = DeviceEngine(policy: FixedDecision(allow: true), records: try await store.load().records)
        #expect(restarted.nextWake == t0.addingTimeInterval(30))
        let shown = try restarted.handle(.start, now: t0.addingTimeInterval(120))
        #expect(shown.presentations.map(\.notification.request.content.body) == ["original"])
        #expect(restarted.apps[app]!.awaitingExtension.isEmpty && restarted.apps[app]!.delivered.count == 1)
        #expect(restarted.nextWake == nil)
    }
}

@Suite struct SchedulerTests {
    @Test func matchesASortedOracleUnderRandomOperations() {
        var rng = SeededGenerator(seed: 99)
        var scheduler = Scheduler()
        var oracle: [Scheduler.Key: Double] = [:]
        for step in 0..<20_000 {
            let key = Scheduler.Key(
                app: "app\(Int.random(in: 0..<50, using: &rng))", id: "\(Int.random(in: 0..<40, using: &rng))")
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<6:
                let t = Double(Int.random(in: 0..<1_000_000, using: &rng))
                scheduler.schedule(key, at: Date(timeIntervalSince1970: t))
                oracle[key] = t
            case 6..<9:
                #expect(scheduler.remove(key) == (oracle.removeValue(forKey: key) != nil))
            default:
                let now = Double(step * 50)
                let due = scheduler.takeDue(now: Date(timeIntervalSince1970: now))
                let expected = oracle.filter { $0.value <= now }
                #expect(Set(due.map(\.key)) == Set(expected.keys))
                #expect(due.map(\.date.timeIntervalSince1970) == due.map(\.date.timeIntervalSince1970).sorted())
                for k in expected.keys { oracle[k] = nil }
            }
            #expect(scheduler.count == oracle.count)
            #expect(scheduler.nextWake?.timeIntervalSince1970 == oracle.values.min())
        }
    }
}

@Suite struct SoundResolverTests {
    static func wav(seconds: Double, format: UInt16 = 1, rate: Int = 8000) -> Data {
        let bytesPerSecond = rate * 2
        let dataSize = Int(seconds * Double(bytesPerSecond))
        var d = Data("RIFF".utf8)
        d.append(le32(36 + dataSize))
        d.append(Data("WAVEfmt ".utf8))
        d.append(le32(16))
        d.append(le16(Int(format)))
        d.append(le16(1))
        d.append(le32(rate))
        d.append(le32(bytesPerSecond))
        d.append(le16(2))
        d.append(le16(16))
        d.append(Data("data".utf8))
        d.append(le32(dataSize))
        d.append(Data(count: dataSize))
        return d
    }

    static func aiff(frames: Int, rate: Double = 44100, compression: String? = nil) -> Data {
        var comm = Data()
        comm.append(be16(1))
        comm.append(be32(frames))
        comm.append(be16(16))
        // 80-bit extended sample rate
        let exponent = Int(log2(rate))
        let mantissa = UInt64(rate * pow(2, Double(63 - exponent)))
        comm.append(be16(16383 + exponent))
        comm.append(contentsOf: (0..<8).map { UInt8((mantissa >> (56 - 8 * UInt64($0))) & 0xFF) })
        if let compression { comm.append(Data(compression.utf8)); comm.append(contentsOf: [0, 0]) }
        var d = Data("FORM".utf8)
        d.append(be32(4 + 8 + comm.count))
        d.append(Data((compression == nil ? "AIFF" : "AIFC").utf8))
        d.append(Data("COMM".utf8))
        d.append(be32(comm.count))
        d.append(comm)
        return d
    }

    static func caf(seconds: Double, format: String = "ima4", dataSize: Int? = nil, before: Data = Data()) -> Data {
        let rate = 44100.0
        let packets = Int(seconds * rate / 64)
        var d = Data("caff".utf8)
        d.append(contentsOf: [0, 1, 0, 0])
        d.append(Data("desc".utf8))
        d.append(be64(32))
        d.append(be64(Int(rate.bitPattern)))
        d.append(Data(format.utf8))
        d.append(be32(0))
        d.append(be32(34))
        d.append(be32(64))
        d.append(be32(1))
        d.append(be32(0))
        d.append(before)
        d.append(Data("data".utf8))
        d.append(be64(dataSize ?? 4 + packets * 34))
        d.append(be32(0))
        d.append(Data(count: packets * 34))
        return d
    }

    static func le16(_ v: Int) -> Data { Data([UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF)]) }
    static func le32(_ v: Int) -> Data { le16(v & 0xFFFF) + le16((v >> 16) & 0xFFFF) }
    static func be16(_ v: Int) -> Data { Data([UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]) }
    static func be32(_ v: Int) -> Data { be16((v >> 16) & 0xFFFF) + be16(v & 0xFFFF) }
    static func be64(_ v: Int) -> Data { be32(Int(UInt64(bitPattern: Int64(v)) >> 32)) + be32(v & 0xFFFF_FFFF) }

    @Test func readsHeaders() throws {
        let w = try #require(SoundResolver.inspect(Self.wav(seconds: 2), fileSize: Self.wav(seconds: 2).count))
        #expect(w.container == "wav" && w.encoding == "lpcm" && abs(w.duration - 2) < 0.01 && w.isPlayable)
        let ulaw = try #require(
            SoundResolver.inspect(Self.wav(seconds: 1, format: 7), fileSize: Self.wav(seconds: 1, format: 7).count))
        #expect(ulaw.encoding == "ulaw")
        let a = try #require(SoundResolver.inspect(Self.aiff(frames: 44100 * 3), fileSize: 100))
        #expect(a.container == "aiff" && a.encoding == "lpcm" && abs(a.duration - 3) < 0.01)
        let aifc = try #require(SoundResolver.inspect(Self.aiff(frames: 44100, compression: "ima4"), fileSize: 100))
        #expect(aifc.encoding == "ima4")
        let mp3in = try #require(SoundResolver.inspect(Self.aiff(frames: 44100, compression: ".mp3"), fileSize: 100))
        #expect(!mp3in.isPlayable)
        let c = try #require(SoundResolver.inspect(Self.caf(seconds: 5), fileSize: Self.caf(seconds: 5).count))
        #expect(c.container == "caf" && c.encoding == "ima4" && abs(c.duration - 5) < 0.01)
        #expect(
            !(SoundResolver.inspect(Self.caf(seconds: 31), fileSize: Self.caf(seconds: 31).count)?.isPlayable ?? true))
        #expect(SoundResolver.inspect(Data("ID3\u{3}not audio at all".utf8), fileSize: 20) == nil)
    }

    /// Sizes no file could have never stop the daemon: a data chunk of size -1 (CAF's "unknown")
    /// runs to the end of the file; a chunk whose size would carry the reader past the end of
    /// memory, or a packet table claiming more frames than an `Int` holds, leave the file unread or
    /// its frame count unknown.
    @Test func cafSizesBeyondTheFileAreReadWithoutTrapping() throws {
        let unknown = Self.caf(seconds: 5, dataSize: -1)
        let c = try #require(SoundResolver.inspect(unknown, fileSize: unknown.count))
        #expect(abs(c.duration - 5) < 0.01, "\(c.duration)")
        let huge = Self.caf(seconds: 5, before: Data("free".utf8) + Self.be64(0x7FFF_FFFF_FFFF_FFF8))
        #expect(SoundResolver.inspect(huge, fileSize: huge.count) == nil)
        var pakt = Data("pakt".utf8) + Self.be64(24) + Self.be64(1) + Self.be32(-1) + Self.be32(-1)
        pakt += Self.be32(0) + Self.be32(0)
        let table = Self.caf(seconds: 5, before: pakt)
        let t = try #require(SoundResolver.inspect(table, fileSize: table.count))
        #expect(abs(t.duration - 5) < 0.01, "frames counted from the data's size: \(t.duration)")
    }

    @Test func looksInLibrarySoundsThenBundleAndFallsBackToDefault() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("herald-sounds-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let library = root.appendingPathComponent("Library")
        let bundle = root.appendingPathComponent("App.app")
        try FileManager.default.createDirectory(
            at: library.appendingPathComponent("Sounds"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        try Self.wav(seconds: 1).write(to: library.appendingPathComponent("Sounds/chime.wav"))
        try Self.wav(seconds: 2).write(to: bundle.appendingPathComponent("chime.wav"))
        try Self.wav(seconds: 2).write(to: bundle.appendingPathComponent("bell.wav"))
        try Self.wav(seconds: 31, rate: 100).write(to: bundle.appendingPathComponent("long.wav"))
        try Data("ID3 an mp3".utf8).write(to: bundle.appendingPathComponent("song.mp3"))
        func resolve(_ name: String) -> ResolvedSound {
            SoundResolver.resolve(name, libraryDirectory: library.path, bundleDirectory: bundle.path)
        }
        #expect(resolve("chime.wav") == .file(path: library.path + "/Sounds/chime.wav", duration: 1))
        #expect(resolve("bell.wav") == .file(path: bundle.path + "/bell.wav", duration: 2))
        #expect(resolve("long.wav") == .default)
        #expect(resolve("song.mp3") == .default)
        #expect(resolve("missing.caf") == .default)
        #expect(resolve("../../etc/passwd") == .default)

        // Through the engine: a push naming a sound plays the app's file, or the default.
        let t0 = at("2025-01-01T00:00:00Z")
        var e = try engine(app: "com.example.app", now: t0)
        _ = try e.handle(
            .installApp(
                InstalledApp(bundleID: "com.example.app", bundleDirectory: bundle.path, libraryDirectory: library.path)),
            now: t0)
        for (name, expected, fallback) in [
            ("chime.wav", ResolvedSound.file(path: library.path + "/Sounds/chime.wav", duration: 1), nil),
            ("long.wav", .default, "long.wav lasts 31.0 s; a sound must be shorter than 30 s"),
            ("song.mp3", .default, "song.mp3 is not an aiff, wav or caf file"),
            ("missing.caf", .default, "missing.caf is in neither Library/Sounds nor the app's bundle"),
        ] {
            let payload = try Payload(json: #"{"aps":{"alert":"x","sound":"\#(name)"}}"#)
            let actions = try e.handle(
                .remoteNotification(app: "com.example.app", payload: payload, apnsID: name, collapseID: nil), now: t0)
            let presentation = try #require(actions.presentations.first)
            let resolved = try #require(e.resolvedSound(for: presentation))
            #expect(resolved.sound == expected && resolved.fallback == fallback, "\(name)")
            // What the terminal line and the device's log say: the sound that really plays.
            let summary = PresentationSummary(presentation, playing: resolved)
            #expect(summary.sound == (fallback == nil ? name : "default"))
            #expect(summary.soundFile == (fallback == nil ? library.path + "/Sounds/chime.wav" : nil))
            #expect(summary.line == "x (sound \(fallback == nil ? name : "default (\(fallback!))"))")
        }
    }
}
