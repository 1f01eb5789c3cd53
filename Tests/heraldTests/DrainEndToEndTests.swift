import Foundation
import HeraldRuntime
import HeraldTesting
import Testing

/// A gateway stopped with SIGTERM tells its devices when to come back (`goaway`, its drain window)
/// before it closes their links: real gateways on one PostgreSQL and a real `herald test-device`.
@Suite(.serialized, .ownThread) struct DrainEndToEndTests {
    @Test func aStoppingNodeTellsItsDevicesToMoveWithinItsWindow() throws {
        let url = try TestPostgres.blockingDatabase()
        let a = try Provisioned(arguments: ["--database", url])
        let b = try GatewayProcess(arguments: ["--database", url, "--drain-window", "0.4"])
        let linked = try LinkedTestDevice([
            "--gateway", b.info.linkDevelopmentURL, "--gateway", a.gateway.info.linkDevelopmentURL, "--identity",
            b.state.appendingPathComponent("draining.json").path, "--reconnect",
        ])
        defer { linked.watchdog.cancel() }
        let (device, id, token) = (linked.child, linked.id, linked.token)
        try eventually("A to know the device's token and that B holds it") {
            let seen = try a.gateway.adminCall("GET", "/devices/\(id)")
            return seen.body.contains(token) && seen.json?["node"] as? String == b.info.nodeID
        }

        #expect(b.stop() == 0, "SIGTERM stops the node gracefully")
        var events: [[String: Any]] = []
        while let event = device.reader.json() {
            events.append(event)
            if event["event"] as? String == "reconnected" { break }
        }
        let names = events.compactMap { $0["event"] as? String }
        #expect(names == ["goaway", "disconnected", "reconnected"], "\(events)")
        #expect(events.first?["reconnectWithin"] as? Int == 400, "the node's window, in milliseconds")
        try eventually("A to hold the device") {
            let seen = try a.gateway.adminCall("GET", "/devices/\(id)").json
            return seen?["node"] as? String == a.gateway.info.nodeID && seen?["online"] as? Bool == true
        }
        let sent = try a.push(token: token, body: #"{"aps":{"alert":"after the move"}}"#)
        #expect(sent.status == 200, "\(sent.body)")
        #expect(device.reader.json()?["payload"] as? String == #"{"aps":{"alert":"after the move"}}"#)
        #expect(a.gateway.stop() == 0)
    }
}
