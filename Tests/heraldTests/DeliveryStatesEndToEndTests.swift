import Foundation
import Testing

/// Today's counts of `GET /delivery-metrics` as "app state" → count.
func deliveryCounts(_ gateway: GatewayProcess) throws -> [String: Int] {
    let answer = try gateway.adminCall("GET", "/delivery-metrics?days=1")
    let counts = answer.json?["counts"] as? [[String: Any]] ?? []
    var byKey: [String: Int] = [:]
    for count in counts {
        guard let app = count["app"] as? String, let state = count["state"] as? String,
            let n = count["count"] as? Int
        else { continue }
        byKey["\(app) \(state)", default: 0] += n
    }
    return byKey
}

/// Apple's delivery states over real connections: a real `herald gateway`, curl as the provider and
/// a real `herald test-device` that comes and goes. Each push's log lines carry the state they map
/// onto, and the day's counts (`/delivery-metrics`, `/metrics`) add up.
@Suite(.serialized, .ownThread) struct DeliveryStatesEndToEndTests {
    @Test func eachStateIsReachedLoggedAndCounted() throws {
        // Priority 5 waits for a 30 s batch window: "held for power considerations".
        let p = try Provisioned(arguments: ["--batch-window", "30"])
        let identity = p.gateway.state.appendingPathComponent("states-device.json").path
        let arguments = ["--gateway", p.gateway.info.linkDevelopmentURL, "--identity", identity]
        var linked: LinkedTestDevice? = try LinkedTestDevice(arguments)
        let token = linked!.token
        func push(_ body: String, _ headers: [String] = []) throws -> String {
            let answer = try p.push(token: token, body: body, headers: headers)
            #expect(answer.status == 200, "\(body): \(answer.status) \(answer.body)")
            return answer.headers["apns-id"] ?? ""
        }
        func states(_ id: String, until last: String) throws -> [String] {
            var states: [String] = []
            try eventually("\(id) to reach \(last)") {
                let log = try p.gateway.adminCall("GET", "/deliveries/\(id)")
                let events = (try? JSONSerialization.jsonObject(with: Data(log.body.utf8))) as? [[String: Any]] ?? []
                states = events.compactMap { $0["state"] as? String }
                return states.last == last
            }
            return states
        }

        // Online: received, then delivered to the device.
        let direct = try push(#"{"aps":{"alert":"now"}}"#)
        #expect(linked!.child.reader.json()?["payload"] as? String == #"{"aps":{"alert":"now"}}"#)
        #expect(try states(direct, until: "delivered") == ["received", "delivered"])
        // Priority 5 inside the batch window: stored for power considerations.
        let held = try push(#"{"aps":{"alert":"later"}}"#, ["apns-priority: 5"])
        #expect(try states(held, until: "stored-power-considerations") == ["received", "stored-power-considerations"])

        // Offline: stored because the device is offline; with expiration 0, discarded as expired.
        linked!.watchdog.cancel()
        kill(linked!.child.process.processIdentifier, SIGKILL)
        linked!.child.process.waitUntilExit()
        linked = nil
        try eventually("the gateway to see the device gone") {
            try p.gateway.adminCall("GET", "/devices").body.contains(#""online":true"#) == false
        }
        let stored = try push(#"{"aps":{"alert":"while away"}}"#)
        #expect(try states(stored, until: "stored-device-offline") == ["received", "stored-device-offline"])
        let once = try push(#"{"aps":{"alert":"now or never"}}"#, ["apns-expiration: 0"])
        #expect(try states(once, until: "discarded-expired") == ["received", "discarded-expired"])

        // Back: the stored push is delivered from storage.
        let back = try LinkedTestDevice(arguments)
        defer { back.watchdog.cancel() }
        #expect(back.token == token)
        #expect(
            try states(stored, until: "delivered-from-storage")
                == ["received", "stored-device-offline", "delivered-from-storage"])

        // The day's counts: the console's Metrics view and /metrics say the same.
        try eventually("the counts to be written") {
            (try deliveryCounts(p.gateway)["\(Provisioned.topic) delivered-from-storage"] ?? 0) >= 1
        }
        let counts = try deliveryCounts(p.gateway)
        let app = Provisioned.topic
        #expect(counts["\(app) received"] == 4, "\(counts)")
        // (The held push waits in the store too: once its window passes it is delivered from storage.)
        #expect((counts["\(app) delivered-from-storage"] ?? 0) >= 1, "\(counts)")
        #expect(counts["\(app) delivered"] == 1, "\(counts)")
        #expect(counts["\(app) stored-power-considerations"] == 1, "\(counts)")
        #expect(counts["\(app) stored-device-offline"] == 1, "\(counts)")
        #expect(counts["\(app) discarded-expired"] == 1, "\(counts)")
        let metrics = try p.gateway.adminCall("GET", "/metrics").body
        for (state, count) in [("received", 4), ("delivered", 1), ("discarded-expired", 1)] {
            #expect(
                metrics.contains(#"herald_delivery_states_total{app="\#(app)",state="\#(state)"} \#(count)"#),
                "\(state)")
        }

        // Stored while the device is away, then its app removed: discarded from storage when it is back.
        back.watchdog.cancel()
        kill(back.child.process.processIdentifier, SIGKILL)
        back.child.process.waitUntilExit()
        try eventually("the gateway to see the device gone again") {
            try p.gateway.adminCall("GET", "/devices").body.contains(#""online":true"#) == false
        }
        let orphan = try push(#"{"aps":{"alert":"for an app since removed"}}"#)
        #expect(try states(orphan, until: "stored-device-offline").last == "stored-device-offline")
        #expect(try p.gateway.adminCall("DELETE", "/devices/\(back.id)/apps/\(Provisioned.topic)").status == 200)
        let last = try LinkedTestDevice(arguments)
        defer { last.watchdog.cancel() }
        #expect(
            try states(orphan, until: "discarded-token-unregistered-from-storage")
                == ["received", "stored-device-offline", "discarded-token-unregistered-from-storage"])
        #expect(p.gateway.stop() == 0)
    }
}
