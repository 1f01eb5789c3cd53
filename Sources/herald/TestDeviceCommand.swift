import ArgumentParser
import Foundation
import HeraldCore
import HeraldRuntime
import HeraldDevice
import NIOCore
import NIOPosix
import Synchronization

struct TestDeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test-device",
        abstract: "Connect to a gateway's device link as a device, register apps and print what arrives.",
        discussion: """
            The device's key and id are kept in --identity, so running it again is the same device. \
            Notifications are acknowledged (unless --no-ack) and a second copy of an apns-id is dropped. \
            It stops after --count notifications, when the gateway closes the link (unless --reconnect), \
            or on Ctrl-C.
            """)

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Device link URL (ws://127.0.0.1:5223/device/v1 or wss://…); default: from gateway.json. Repeat it for a "
                + "cluster's other nodes: with --reconnect, each new attempt goes to the next address.",
            valueName: "url"))
    var gateway: [String] = []
    @Option(name: .long, help: "The gateway's state directory, to find gateway.json and ca.pem.")
    var gatewayState = ".herald/gateway"
    @Option(name: .long, help: "CA certificate to trust for wss:// (default: the gateway state's ca.pem).")
    var ca: String?
    @Option(name: .long, help: "Where the device's key and id are kept.")
    var identity = ".herald/test-device/identity.json"
    @Option(name: .long, help: "Device id to ask for on first contact (default: the gateway chooses).")
    var deviceId: String?
    @Option(name: .long, help: "Register this app (bundle id); repeat for more.")
    var topic: [String] = []
    @Option(name: .long, help: "Environment of the registrations (development or production).")
    var environment: APNsEnvironment = .development
    @Flag(name: .long, help: "Do not acknowledge notifications (the gateway stores them and sends them again).")
    var noAck = false
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Subscribe the first --topic's app to this broadcast channel (apns-channel-id); repeat for more. "
                + "With --idle-devices, every idle device subscribes too.",
            valueName: "channel-id"))
    var channel: [String] = []
    @Option(name: .long, help: "Stop after this many notifications (pushes and broadcasts).")
    var count: Int?
    @Flag(name: .long, help: "Print only the ready line and the final count, not every notification.")
    var quiet = false
    @Flag(name: .long, help: "Print JSON lines instead of text.")
    var json = false
    @Option(
        name: .long,
        help: """
            Also connect this many more devices, each with a fresh key (not saved), that register nothing \
            and stay idle until the command ends: a load for measuring what idle links cost the gateway.
            """)
    var idleDevices = 0
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Connect the idle devices from this local address (an IP address on this machine, such as 127.0.1.1); "
                + "repeat for more, taken in turn. Thousands of links to one gateway from one address make the "
                + "kernel's search for a free source port slow.",
            valueName: "address"))
    var idleSource: [String] = []
    @Flag(
        name: .long,
        help: """
            Stay connected: when the link drops or cannot be made (the gateway restarts), connect again \
            with the device daemon's backoff (0.5 s doubling to 30 s, each wait scaled by a random 50-100%), \
            register again and go on; idle devices too. A push seen before, on any connection, is dropped \
            (and reported as a duplicate with --json).
            """)
    var reconnect = false

    func validate() throws {
        if idleDevices < 0 { throw ValidationError("--idle-devices must be 0 or more") }
        for address in idleSource where (try? SocketAddress(ipAddress: address, port: 0)) == nil {
            throw ValidationError("--idle-source must be an IP address, not \"\(address)\"")
        }
        if !channel.isEmpty, topic.isEmpty {
            throw ValidationError("--channel needs --topic: channels are subscribed to for the first --topic's app")
        }
    }

    /// Makes Swift concurrency's jobs run on NIO's loops, the ones the links run on: a device's
    /// task that waits for its link then goes on where the link's future was completed, without a
    /// hop to Swift's own threads and back. With thousands of idle devices reconnecting, those hops
    /// cost a third to two fifths of the test devices' CPU per reconnection (BENCHMARKS.md).
    /// Nothing this command runs in a task blocks for long: its writes to standard output are the
    /// longest. Called once, from the main thread, before ``run()`` (NIO's takeover asks both).
    static func runTasksOnNIOLoops() {
        _ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }

    func run() async throws {
        let urls = gateway.isEmpty ? [try Self.linkURL(state: gatewayState)] : gateway
        let url = urls[0]
        var pem: String?
        if urls.contains(where: { $0.hasPrefix("wss:") }) {
            if let ca {
                pem = try CLIFile.text(ca, for: "--ca")
            } else {
                // The gateway state's CA when there is one; else the system's trust.
                let path = URL(fileURLWithPath: gatewayState).appendingPathComponent("ca.pem").path
                pem = try? String(contentsOfFile: path, encoding: .utf8)
            }
        }
        var me = try DeviceIdentity.loadOrCreate(at: identity, deviceID: deviceId)
        var (client, linked) = try await Self.connect(
            urls: urls, from: 0, identity: me, pem: pem, ack: !noAck, retry: reconnect)
        if me.deviceID != client.deviceID {
            me.deviceID = client.deviceID
            try me.save(to: identity)
        }
        var tokens: [(String, String)] = []
        for t in topic {
            let token = try await client.register(topic: t, environment: environment)
            tokens.append((t, token.hex))
        }
        let subscription =
            channel.isEmpty ? nil : Subscription(topic: topic[0], environment: environment, channels: channel)
        if let subscription { try await subscription.apply(to: client) }
        let idle = try await Self.connectIdle(
            idleDevices, url: url, caCertificatePEM: pem, sources: idleSource, reconnect: reconnect,
            subscription: subscription,
            fanout: json ? FanoutReport(devices: idleDevices, emit: emit) : nil)
        defer { idle.cancel() }
        announce(device: client, tokens: tokens)
        var received = 0
        var duplicates = 0
        var closedReason: String?
        // The window a stopping gateway gave (goaway), until the device has moved.
        var drain: Duration?
        // Across connections: a push the gateway sends again after a crash is dropped here.
        var seen = Set<String>()
        // Read once: an option's value is slow to read, and this loop runs for every notification.
        let (quiet, count, json) = (self.quiet, self.count, self.json)
        connection: while true {
            for await event in client.events {
                switch event {
                case .pushes(let pushes):
                    for push in pushes {
                        if reconnect, !seen.insert(push.apnsID).inserted {
                            duplicates += 1
                            if json { emit(["event": .string("duplicate"), "apnsID": .string(push.apnsID)]) }
                            continue
                        }
                        received += 1
                        if !quiet { show(push) }
                        if let count, received >= count { break connection }
                    }
                case .broadcast(let broadcast):
                    received += 1
                    if !quiet { show(broadcast) }
                    if let count, received >= count { break connection }
                case .reset(let generation):
                    if json {
                        emit(["event": .string("reset"), "generation": .int(Int64(generation))])
                    } else {
                        write("reset: generation \(generation)\n")
                    }
                case .goAway(let within):
                    drain = within
                    if json {
                        emit([
                            "event": .string("goaway"),
                            // Whole milliseconds, as the gateway sent them: no trip through a
                            // Double, which rounds the largest up past what an Int64 holds.
                            "reconnectWithin": .int(
                                within.components.seconds * 1000
                                    + within.components.attoseconds / 1_000_000_000_000_000),
                        ])
                    }
                case .closed(let reason):
                    closedReason = reason
                }
            }
            guard reconnect else { break }
            // The link dropped: the same device connects again, registers again (the same tokens)
            // and goes on.
            await client.close()
            if json { emit(["event": .string("disconnected"), "reason": .string(closedReason ?? "closed")]) }
            if let window = drain {
                // As the daemon does: a random part of the stopping node's window, then the next node.
                let wait = ReconnectBackoff.drainDelay(within: window.timeInterval, jitter: Double.random(in: 0...1))
                try await Task.sleep(for: .milliseconds(Int64(wait * 1000)))
            }
            (client, linked) = try await relink(
                urls: urls, after: linked, identity: me, pem: pem, subscription: subscription, afterDrain: drain != nil)
            closedReason = nil
            drain = nil
            if json { emit(["event": .string("reconnected"), "device": .string(client.deviceID)]) }
        }
        finished(received: received, duplicates: duplicates)
        await client.close()
        if let closedReason, !reconnect { throw CommandFailure("the gateway closed the link: \(closedReason)") }
    }

    /// Says how many notifications arrived (and, with --json, how many were dropped as duplicates).
    func finished(received: Int, duplicates: Int) {
        if json {
            emit(["event": .string("done"), "received": .int(Int64(received)), "duplicates": .int(Int64(duplicates))])
        } else {
            write("received \(received)\n")
        }
    }

    /// Says the device is ready: its id and tokens, what it subscribed to, its idle devices.
    func announce(device client: GatewayLinkClient, tokens: [(String, String)]) {
        if json {
            emit([
                "event": .string("ready"), "device": .string(client.deviceID),
                "generation": .int(Int64(client.generation)),
                "tokens": .object(Dictionary(tokens, uniquingKeysWith: { $1 }).mapValues(JSONValue.string)),
                "idleDevices": .int(Int64(idleDevices)), "channels": .strings(channel),
            ])
        } else {
            var text = "herald test-device ready\n  device: \(client.deviceID)\n"
            for (t, hex) in tokens { text += "  token \(t) (\(environment.rawValue)): \(hex)\n" }
            if !channel.isEmpty { text += "  subscribed \(topic[0]) to: \(channel.joined(separator: ", "))\n" }
            if idleDevices > 0 { text += "  idle devices connected: \(idleDevices)\n" }
            write(text)
        }
    }

    /// After the link dropped: the same device connects again, registers again (the same tokens) and
    /// subscribes again; returns the link and the index of the address it reached.
    func relink(
        urls: [String], after linked: Int, identity me: DeviceIdentity, pem: String?, subscription: Subscription?,
        afterDrain: Bool = false
    ) async throws -> (GatewayLinkClient, Int) {
        var linked = linked
        while true {
            // The next address first: the node this one was on may be gone.
            let client: GatewayLinkClient
            // After a goaway the wait was the drain's: the first attempt goes at once.
            (client, linked) = try await Self.connect(
                urls: urls, from: linked + 1, identity: me, pem: pem, ack: !noAck, retry: true, failed: !afterDrain)
            do {
                for t in topic { _ = try await client.register(topic: t, environment: environment) }
                if let subscription { try await subscription.apply(to: client) }
                return (client, linked)
            } catch {
                // The link dropped again while registering (the gateway went down once more).
                await client.close()
            }
        }
    }

    /// Connects to `urls[from]`; with `retry`, tries again with the device daemon's backoff until it
    /// works, each attempt at the next address (`failed`: the link just dropped, so the first attempt
    /// waits its turn too). Returns the link and the index of the address it reached.
    static func connect(
        urls: [String], from start: Int, identity: DeviceIdentity, pem: String?, ack: Bool, retry: Bool,
        failed: Bool = false, source: String? = nil
    ) async throws -> (GatewayLinkClient, Int) {
        guard retry else {
            let index = start % urls.count
            let client = try await GatewayLinkClient.connect(
                url: urls[index], identity: identity, caCertificatePEM: pem, autoAcknowledge: ack, sourceAddress: source
            )
            return (client, index)
        }
        // The waits and the attempts run on the link's event loop; this task waits once, for the link.
        return try await GatewayLinkClient.connect(
            urls: urls, from: start, identity: identity, caCertificatePEM: pem, autoAcknowledge: ack,
            sourceAddress: source, failures: failed ? 1 : 0
        ) { failures in
            .seconds(
                ReconnectBackoff.delay(failures: failures, base: 0.5, maximum: 30, jitter: Double.random(in: 0...1)))
        }
    }

    func show(_ push: LinkPush) {
        if json {
            var line: [String: JSONValue] = [
                "event": .string("push"), "apnsID": .string(push.apnsID), "topic": .string(push.topic),
                "token": .string(push.token.hex), "pushType": .string(push.pushType.rawValue),
                "priority": .int(Int64(push.priority.rawValue)),
                "payload": .string(String(decoding: push.payload, as: UTF8.self)),
            ]
            if let c = push.collapseID { line["collapseID"] = .string(c) }
            if let e = push.expiration { line["expiration"] = .int(e) }
            emit(line)
        } else {
            write(
                "push \(push.apnsID) \(push.topic) priority \(push.priority.rawValue) "
                    + "\(push.pushType.rawValue): \(String(decoding: push.payload, as: UTF8.self))\n")
        }
    }

    func show(_ broadcast: LinkBroadcast) {
        if json {
            var line: [String: JSONValue] = [
                "event": .string("broadcast"), "uniqueID": .string(broadcast.uniqueID),
                "channel": .string(broadcast.channelID),
                "topic": .string(broadcast.topic), "priority": .int(Int64(broadcast.priority.rawValue)),
                "payload": .string(String(decoding: broadcast.payload, as: UTF8.self)),
            ]
            if let e = broadcast.expiration { line["expiration"] = .int(Int64(e)) }
            emit(line)
        } else {
            write(
                "broadcast \(broadcast.uniqueID) channel \(broadcast.channelID) \(broadcast.topic) "
                    + "priority \(broadcast.priority.rawValue): \(String(decoding: broadcast.payload, as: UTF8.self))\n"
            )
        }
    }

    /// The channels a device subscribes to, each time it connects.
    struct Subscription: Sendable {
        var topic: String
        var environment: APNsEnvironment
        var channels: [String]

        func apply(to client: GatewayLinkClient) async throws {
            try await client.subscribe(topic: topic, environment: environment, channels: channels)
        }
    }

    /// Tells when every idle device has a broadcast: one JSON line per broadcast, with the time the
    /// last of them got it (what a fan-out measurement reads).
    final class FanoutReport: Sendable {
        let devices: Int
        let emit: @Sendable ([String: JSONValue]) -> Void
        private let arrivals = Mutex<[String: Int]>([:])

        init(devices: Int, emit: @escaping @Sendable ([String: JSONValue]) -> Void) {
            self.devices = devices
            self.emit = emit
        }

        func arrived(_ uniqueID: String) {
            let count = arrivals.withLock { arrivals in
                arrivals[uniqueID, default: 0] += 1
                return arrivals[uniqueID]!
            }
            if count == devices {
                emit([
                    "event": .string("fanout"), "uniqueID": .string(uniqueID), "devices": .int(Int64(devices)),
                    "at": .double(Date().timeIntervalSince1970),
                ])
            }
        }
    }

    /// Connects `count` devices with fresh identities, 64 handshakes at a time, and keeps them: with
    /// `reconnect`, each connects again (same id and key) whenever its link drops. With a
    /// `subscription`, each subscribes (again on each connection) and `fanout` hears of each
    /// broadcast each gets. Cancel the task to close them all.
    static func connectIdle(
        _ count: Int, url: String, caCertificatePEM: String?, sources: [String] = [], reconnect: Bool,
        subscription: Subscription? = nil, fanout: FanoutReport? = nil
    ) async throws -> Task<Void, Never> {
        var clients: [(DeviceIdentity, GatewayLinkClient)] = []
        clients.reserveCapacity(count)
        var next = 0
        while next < count {
            let wave = min(64, count - next)
            try await withThrowingTaskGroup(of: (DeviceIdentity, GatewayLinkClient).self) { group in
                for i in 0..<wave {
                    let source: String? = sources.isEmpty ? nil : sources[(next + i) % sources.count]
                    group.addTask {
                        var identity = DeviceIdentity()
                        let client = try await GatewayLinkClient.connect(
                            url: url, identity: identity, caCertificatePEM: caCertificatePEM, sourceAddress: source)
                        identity.deviceID = client.deviceID
                        if let subscription { try await subscription.apply(to: client) }
                        return (identity, client)
                    }
                }
                for try await pair in group { clients.append(pair) }
            }
            next += wave
        }
        let connected = clients
        return Task {
            await withTaskGroup(of: Void.self) { group in
                for (index, (identity, first)) in connected.enumerated() {
                    let source: String? = sources.isEmpty ? nil : sources[index % sources.count]
                    group.addTask {
                        var client = first
                        while !Task.isCancelled {
                            for await event in client.events {
                                if case .broadcast(let broadcast) = event { fanout?.arrived(broadcast.uniqueID) }
                            }
                            await client.close()
                            guard reconnect, !Task.isCancelled,
                                let again = try? await connect(
                                    urls: [url], from: 0, identity: identity, pem: caCertificatePEM, ack: true,
                                    retry: true, failed: true, source: source)
                            else { break }
                            client = again.0
                            if let subscription { try? await subscription.apply(to: client) }
                        }
                        await client.close()
                    }
                }
            }
        }
    }

    static func linkURL(state: String) throws -> String {
        let runtime = URL(fileURLWithPath: state).appendingPathComponent(GatewayInfo.fileName)
        guard let url = (try? GatewayInfo.read(from: runtime.path))?.linkDevelopmentURL else {
            throw CommandFailure(
                "no running gateway found: \(runtime.path) is missing; pass --gateway-state or --gateway")
        }
        return url
    }

    func write(_ text: String) { FileHandle.standardOutput.write(Data(text.utf8)) }

    @Sendable func emit(_ object: [String: JSONValue]) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        guard let data = try? encoder.encode(object) else { return }
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
}
