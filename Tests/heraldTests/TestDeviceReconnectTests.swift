import Foundation
import Testing

/// `herald test-device --reconnect`: the same device connects again after a gateway restart, gets
/// what was stored meanwhile, and drops a push it has already seen on an earlier connection; its
/// idle devices' tasks run on NIO's event loops.
@Suite(.serialized, .ownThread) struct TestDeviceReconnectTests {
    @Test func aTestDeviceComesBackAfterARestartAndDropsWhatItAlreadyHad() throws {
        let linkPort = try portOutsideTheEphemeralRange()
        let options = ["--link-port", "\(linkPort)", "--ack-timeout", "0.2", "--drain-window", "0.2"]
        let p = try Provisioned(arguments: options)
        let identity = p.gateway.state.appendingPathComponent("device.json").path
        // It never acknowledges: every push is stored once its acknowledgement is overdue, and sent again
        // on the next connection.
        let device = try Child(
            try heraldExecutable(),
            [
                "test-device", "--gateway", "ws://127.0.0.1:\(linkPort)/device/v1", "--identity", identity,
                "--topic", Provisioned.topic, "--json", "--reconnect", "--no-ack",
            ])
        let ready = device.reader.json() ?? [:]
        #expect(ready["event"] as? String == "ready")
        let token = try #require((ready["tokens"] as? [String: String])?[Provisioned.topic])

        let first = "aaaaaaaa-1111-2222-3333-444444444444"
        #expect(try p.push(token: token, headers: ["apns-id: \(first)"]).status == 200)
        #expect(device.reader.json()?["apnsID"] as? String == first)

        // The gateway goes down (telling the device to come back within its drain window) and comes back
        // on the same state and port; the device reconnects by itself and is sent the stored push again,
        // which it drops as a duplicate.
        #expect(p.gateway.stop() == 0)
        let goaway = device.reader.json() ?? [:]
        #expect(goaway["event"] as? String == "goaway" && goaway["reconnectWithin"] as? Int == 200, "\(goaway)")
        #expect(device.reader.json()?["event"] as? String == "disconnected")
        let again = try Provisioned(arguments: options, state: p.gateway.state, existing: p)
        #expect(device.reader.json()?["event"] as? String == "reconnected")
        let duplicate = device.reader.json() ?? [:]
        #expect(duplicate["event"] as? String == "duplicate" && duplicate["apnsID"] as? String == first, "\(duplicate)")
        // A new push arrives as usual.
        let second = "bbbbbbbb-1111-2222-3333-444444444444"
        #expect(try again.push(token: token, headers: ["apns-id: \(second)"]).status == 200)
        #expect(device.reader.json()?["apnsID"] as? String == second)
        kill(device.process.processIdentifier, SIGTERM)
        #expect(again.gateway.stop() == 0)
    }

    /// The devices' tasks run on NIO's event loops, not on Swift's own pool of threads (each hop
    /// between the two was a thread switch per wait: BENCHMARKS.md). Once twenty idle devices have
    /// connected, each through its own task, the process has NIO's threads and none of the pool's,
    /// whose names end in libdispatch's `…-qos…`.
    @Test func aTestDevicesTasksRunOnNIOsLoops() throws {
        let linkPort = try portOutsideTheEphemeralRange()
        let p = try Provisioned(arguments: ["--link-port", "\(linkPort)"])
        let device = try Child(
            try heraldExecutable(),
            [
                "test-device", "--gateway", "ws://127.0.0.1:\(linkPort)/device/v1",
                "--identity", p.gateway.state.appendingPathComponent("device.json").path,
                "--topic", Provisioned.topic, "--json", "--reconnect", "--idle-devices", "20",
            ])
        let ready = device.reader.json() ?? [:]
        #expect(ready["event"] as? String == "ready" && ready["idleDevices"] as? Int == 20, "\(ready)")
        let tasks = "/proc/\(device.process.processIdentifier)/task"
        let threads = try FileManager.default.contentsOfDirectory(atPath: tasks).map {
            try String(contentsOfFile: "\(tasks)/\($0)/comm", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(threads.contains { $0.hasPrefix("NIO-SGLTN") }, "\(threads)")
        #expect(!threads.contains { $0.contains("qos") }, "\(threads)")
        kill(device.process.processIdentifier, SIGTERM)
        #expect(p.gateway.stop() == 0)
    }
}
