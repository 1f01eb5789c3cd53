import Dispatch
import Foundation
import HeraldCore
import HeraldDevice
import Synchronization

// The devices of the floor's resumed row: made once against a running gateway, each with the ticket
// its `welcome` gave, so that a later `connect --resume` presents a `Herald-Resume` for every
// connection, as a device of the reconnect storm does after its gateway restarted.

/// Connects `count` new devices to the gateway's link at `host:port` (64 at a time, from `sources`
/// in turn), each signing its `hello` with a fresh key; writes one line per device, its id and its
/// ticket (`device ticket secret expires`, the two in base64), and closes them.
func writeTickets(host: String, port: Int, count: Int, sources: [String]) -> Never {
    let url = "ws://\(host):\(port)\(DeviceLink.path)"
    let lines = Mutex<[String]>([])
    let failure = Mutex<String?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        defer { done.signal() }
        do {
            var next = 0
            while next < count {
                let wave = min(64, count - next)
                try await withThrowingTaskGroup(of: String.self) { group in
                    for i in 0..<wave {
                        let source = sources[(next + i) % sources.count]
                        group.addTask {
                            let identity = DeviceIdentity()
                            let client = try await GatewayLinkClient.connect(
                                url: url, identity: identity, sourceAddress: source)
                            await client.close()
                            guard let ticket = identity.resumption.ticket else {
                                throw TicketsFailure(
                                    message: "the gateway's welcome to \(client.deviceID) had no ticket")
                            }
                            return "\(client.deviceID) \(ticket.ticket.base64EncodedString()) "
                                + "\(ticket.secret.base64EncodedString()) \(ticket.expires)"
                        }
                    }
                    for try await line in group { lines.withLock { $0.append(line) } }
                }
                next += wave
            }
        } catch {
            failure.withLock { $0 = "\(error)" }
        }
    }
    done.wait()
    if let message = failure.withLock({ $0 }) {
        FileHandle.standardError.write(Data("reconnect-floor: tickets: \(message)\n".utf8))
        exit(1)
    }
    say(lines.withLock { $0.joined(separator: "\n") })
    exit(0)
}

/// A device of the resumed gateway's state: its id and the ticket its last `welcome` gave.
struct Device {
    var id: String
    var ticket: LinkTicket
}

/// The devices in `path` (lines written by ``writeTickets(host:port:count:sources:)``), in order.
func devices(from path: String) -> [Device] {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { stop("cannot read \(path)") }
    return text.split(separator: "\n").enumerated().map { index, line in
        let fields = line.split(separator: " ").map(String.init)
        guard fields.count == 4, let ticket = Data(base64Encoded: fields[1]),
            let secret = Data(base64Encoded: fields[2]), let expires = Int64(fields[3])
        else { stop("\(path): line \(index + 1) is no device and ticket") }
        return Device(id: fields[0], ticket: LinkTicket(ticket: ticket, secret: secret, expires: expires))
    }
}

/// The `Herald-Resume` of each of `devices`, the one at `index` for the key ``Wire/key(_:)`` of
/// `index`, made now.
func resumeHeaders(for devices: [Device]) -> [String] {
    let now = Int64(Date().timeIntervalSince1970.rounded(.down))
    return devices.enumerated().map { index, device in
        DeviceLink.UpgradeResume(device: device.id, ticket: device.ticket, webSocketKey: Wire.key(index), time: now)
            .headerValue
    }
}

/// Stops the benchmark with `message` (a mistake in its input, not a failed system call).
func stop(_ message: String) -> Never {
    FileHandle.standardError.write(Data("reconnect-floor: \(message)\n".utf8))
    exit(2)
}

struct TicketsFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
