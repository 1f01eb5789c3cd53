import Foundation

// The floor under a reconnection: what accepting a connection, reading a device's upgrade request
// and writing the `101` with a welcome-sized frame in one write costs a server on this machine, with
// nothing of Herald's in it. Three servers (the kernel's floor with epoll and no framework; NIO with
// one handler; NIO's HTTP/1.1 decoder and WebSocket handlers swapped in as the gateway's handshake
// does) against one client, run by scripts/bench-reconnect-floor (BENCHMARKS.md, "The floor under a
// reconnection"), which also measures `herald gateway` with the same client and prints the ratios.
//
// `tickets` makes devices on a running gateway and writes their tickets; `connect --resume` then
// presents them, one `Herald-Resume` per connection (the resumed row: the gateway's whole
// reconnection with nothing of the storm around it). `connect --client` makes the same connections
// with the device side's layers instead of the epoll client (DeviceClients.swift), so that the
// client's CPU per connection is measured at each layer against the same gateway.
//
//   reconnect-floor serve epoll|nio|nio-http PORT
//   reconnect-floor connect PORT COUNT IN-FLIGHT [--client nio|nio-http|herald] [--resume FILE] SOURCE...
//   reconnect-floor tickets PORT COUNT SOURCE... > FILE

let arguments = Array(CommandLine.arguments.dropFirst())
let usage =
    "usage: reconnect-floor serve epoll|nio|nio-http PORT"
    + " | connect PORT COUNT IN-FLIGHT [--client nio|nio-http|herald] [--resume FILE] SOURCE..."
    + " | tickets PORT COUNT SOURCE..."

func number(_ index: Int) -> Int {
    guard index < arguments.count, let value = Int(arguments[index]), value > 0 else {
        FileHandle.standardError.write(Data((usage + "\n").utf8))
        exit(2)
    }
    return value
}

switch arguments.first {
case "serve" where arguments.count == 3:
    let port = number(2)
    switch arguments[1] {
    case "epoll": serveEpoll(host: "127.0.0.1", port: port)
    case "nio": try serveNIO(host: "127.0.0.1", port: port, http: false)
    case "nio-http": try serveNIO(host: "127.0.0.1", port: port, http: true)
    default: break
    }
case "connect" where arguments.count >= 5:
    let (port, count, inFlight) = (number(1), number(2), number(3))
    var rest = Array(arguments[4...])
    var client: DeviceClient?
    var resumeFile: String?
    while let option = rest.first, option.hasPrefix("--") {
        guard rest.count >= 2 else { stop("\(option) needs a value; \(usage)") }
        switch option {
        case "--client":
            guard let named = DeviceClient(rawValue: rest[1]) else { stop("no client layer \(rest[1])") }
            client = named
        case "--resume": resumeFile = rest[1]
        default: stop(usage)
        }
        rest.removeFirst(2)
    }
    guard !rest.isEmpty else { stop(usage) }
    let devices = resumeFile.map(devices(from:))
    if let resumeFile, let devices, devices.count < count {
        stop("\(resumeFile) holds \(devices.count) devices, fewer than \(count)")
    }
    switch client {
    case nil:
        connectAll(
            host: "127.0.0.1", port: port, count: count, inFlight: inFlight, sources: rest,
            resume: devices.map(resumeHeaders(for:)))
    case .some(let client):
        guard let devices else { stop("--client needs --resume: its requests resume devices") }
        if client == .herald {
            takeOverExecutor()
            connectWithHerald(
                host: "127.0.0.1", port: port, count: count, inFlight: inFlight, sources: rest, devices: devices)
        }
        connectWithNIO(
            client, host: "127.0.0.1", port: port, count: count, inFlight: inFlight, sources: rest,
            resume: resumeHeaders(for: devices))
    }
case "tickets" where arguments.count >= 4:
    writeTickets(host: "127.0.0.1", port: number(1), count: number(2), sources: Array(arguments[3...]))
default: break
}
FileHandle.standardError.write(Data((usage + "\n").utf8))
exit(2)
