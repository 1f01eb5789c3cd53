import ArgumentParser
import Foundation
import HeraldCore
import HeraldDevice

struct TestDeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test-device",
        abstract: "Connect to a gateway's device link as a device, register apps and print what arrives.",
        discussion: """
            The device's key and id are kept in --identity, so running it again is the same device. \
            Notifications are acknowledged (unless --no-ack) and a second copy of an apns-id is dropped. \
            It stops after --count notifications, when the gateway closes the link, or on Ctrl-C.
            """)

    @Option(
        name: .long, help: "Device link URL (ws://127.0.0.1:5223/device/v1 or wss://…); default: from gateway.json.")
    var gateway: String?
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
    @Option(name: .long, help: "Stop after this many notifications.")
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

    func validate() throws {
        if idleDevices < 0 { throw ValidationError("--idle-devices must be 0 or more") }
    }

    func run() async throws {
        let url = try gateway ?? Self.linkURL(state: gatewayState)
        var pem: String?
        if url.hasPrefix("wss:") {
            let path = ca ?? URL(fileURLWithPath: gatewayState).appendingPathComponent("ca.pem").path
            pem = try? String(contentsOfFile: path, encoding: .utf8)
        }
        var me = try DeviceIdentity.loadOrCreate(at: identity, deviceID: deviceId)
        let client = try await GatewayLinkClient.connect(
            url: url, identity: me, caCertificatePEM: pem, autoAcknowledge: !noAck)
        if me.deviceID != client.deviceID {
            me.deviceID = client.deviceID
            try me.save(to: identity)
        }
        var tokens: [(String, String)] = []
        for t in topic {
            let token = try await client.register(topic: t, environment: environment)
            tokens.append((t, token.hex))
        }
        let idle = try await Self.connectIdle(idleDevices, url: url, caCertificatePEM: pem)
        defer { withExtendedLifetime(idle) {} }
        if json {
            emit([
                "event": "ready", "device": client.deviceID, "generation": client.generation,
                "tokens": Dictionary(tokens, uniquingKeysWith: { $1 }), "idleDevices": idle.count,
            ])
        } else {
            var text = "herald test-device ready\n  device: \(client.deviceID)\n"
            for (t, hex) in tokens { text += "  token \(t) (\(environment.rawValue)): \(hex)\n" }
            if !idle.isEmpty { text += "  idle devices connected: \(idle.count)\n" }
            write(text)
        }
        var received = 0
        var closedReason: String?
        // Read once: an option's value is slow to read, and this loop runs for every notification.
        let (quiet, count) = (self.quiet, self.count)
        loop: for await event in client.events {
            switch event {
            case .pushes(let pushes):
                for push in pushes {
                    received += 1
                    if !quiet { show(push) }
                    if let count, received >= count { break loop }
                }
            case .reset(let generation):
                if json {
                    emit(["event": "reset", "generation": generation])
                } else {
                    write("reset: generation \(generation)\n")
                }
            case .closed(let reason):
                closedReason = reason
                break loop
            }
        }
        if json { emit(["event": "done", "received": received]) } else { write("received \(received)\n") }
        await client.close()
        if let closedReason { throw ValidationError("the gateway closed the link: \(closedReason)") }
    }

    func show(_ push: LinkPush) {
        if json {
            var line: [String: Any] = [
                "event": "push", "apnsID": push.apnsID, "topic": push.topic, "token": push.token.hex,
                "pushType": push.pushType.rawValue, "priority": push.priority.rawValue,
                "payload": String(decoding: push.payload, as: UTF8.self),
            ]
            if let c = push.collapseID { line["collapseID"] = c }
            if let e = push.expiration { line["expiration"] = e }
            emit(line)
        } else {
            write(
                "push \(push.apnsID) \(push.topic) priority \(push.priority.rawValue) "
                    + "\(push.pushType.rawValue): \(String(decoding: push.payload, as: UTF8.self))\n")
        }
    }

    /// Connects `count` devices with fresh identities, 64 handshakes at a time.
    static func connectIdle(_ count: Int, url: String, caCertificatePEM: String?) async throws -> [GatewayLinkClient] {
        var clients: [GatewayLinkClient] = []
        clients.reserveCapacity(count)
        var next = 0
        while next < count {
            let wave = min(64, count - next)
            try await withThrowingTaskGroup(of: GatewayLinkClient.self) { group in
                for _ in 0..<wave {
                    group.addTask {
                        try await GatewayLinkClient.connect(
                            url: url, identity: DeviceIdentity(), caCertificatePEM: caCertificatePEM)
                    }
                }
                for try await client in group { clients.append(client) }
            }
            next += wave
        }
        return clients
    }

    static func linkURL(state: String) throws -> String {
        let runtime = URL(fileURLWithPath: state).appendingPathComponent("gateway.json")
        let info = (try? JSONSerialization.jsonObject(with: Data(contentsOf: runtime))) as? [String: Any] ?? [:]
        guard let url = info["linkDevelopmentURL"] as? String else {
            throw ValidationError(
                "no running gateway found: \(runtime.path) is missing; pass --gateway-state or --gateway")
        }
        return url
    }

    func write(_ text: String) { FileHandle.standardOutput.write(Data(text.utf8)) }

    func emit(_ object: [String: Any]) {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
}
