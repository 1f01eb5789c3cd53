import Foundation
import HeraldRuntime
import HeraldTesting
import Testing

/// Real `herald gateway` processes on one PostgreSQL database (the test process's private server,
/// which must start): they share the directory, the secrets and the offline store, and what one
/// changes the other answers by.
@Suite(.serialized, .ownThread) struct ClusterEndToEndTests {
    @Test func twoGatewaysOnOneDatabaseAnswerAsOne() throws {
        let url = try TestPostgres.blockingDatabase()
        // A is the first node: its secrets become the cluster's. B starts on a new state directory
        // and takes them.
        let a = try Provisioned(arguments: ["--database", url])
        let b = try GatewayProcess(arguments: ["--database", url])
        #expect(b.adminToken == a.gateway.adminToken)
        #expect(
            try String(contentsOfFile: b.ca, encoding: .utf8) == String(contentsOfFile: a.gateway.ca, encoding: .utf8))
        #expect(a.gateway.log.contains("store: PostgreSQL"))
        #expect(!a.gateway.log.contains("secret"), "the URL has no password here, and none is ever logged")

        // B knows the device A registered and the key A created: 200, stored for the offline device.
        let viaB = try a.push(b.dev, body: #"{"aps":{"alert":"via B"}}"#)
        #expect(viaB.status == 200, "\(viaB.body)")
        // Then one through A: the offline store keeps one push per app per device (APNs' rule)
        // whichever node accepted them, so A's replaces B's.
        let viaA = try a.push(body: #"{"aps":{"alert":"via A"}}"#)
        #expect(viaA.status == 200, "\(viaA.body)")
        let stored = try a.gateway.adminCall("GET", "/devices/dev1/stored")
        let list = (try? JSONSerialization.jsonObject(with: Data(stored.body.utf8))) as? [[String: Any]] ?? []
        #expect(list.map { $0["payload"] as? String } == [#"{"aps":{"alert":"via A"}}"#])
        // The delivery log is shared too: B's push, read through A, was accepted and then replaced.
        let log = try a.gateway.adminCall("GET", "/deliveries/\(viaB.headers["apns-id"] ?? "")")
        let kinds = ((try? JSONSerialization.jsonObject(with: Data(log.body.utf8))) as? [[String: Any]] ?? [])
            .compactMap { $0["kind"] as? String }
        #expect(kinds == ["accepted", "stored", "replaced"], "\(log.body)")
        // B's TLS listener has a certificate from the cluster's CA: curl trusts it with A's ca.pem.
        let tls = try a.push(b.tls, http: "--http2", extra: ["--cacert", a.gateway.ca])
        #expect(tls.status == 200, "\(tls.body)")

        // The app removed from the device on A: B answers 410 Unregistered within moments.
        #expect(try a.gateway.adminCall("DELETE", "/devices/dev1/apps/\(Provisioned.topic)").status == 200)
        // Until B has heard, its 200s store pushes that replace the one before.
        var lastTaken = tls.headers["apns-id"]
        try eventually("B answers 410") {
            let answer = try a.push(b.dev)
            if answer.status == 200 { lastTaken = answer.headers["apns-id"] }
            return answer.status == 410
        }
        #expect(try a.push(b.dev).reason == "Unregistered")

        // A killed outright: what it accepted is still there for B.
        #expect(a.gateway.stop(signal: SIGKILL) == SIGKILL)
        let afterKill = try b.adminCall("GET", "/devices/dev1/stored")
        let kept = (try? JSONSerialization.jsonObject(with: Data(afterKill.body.utf8))) as? [[String: Any]] ?? []
        #expect(kept.map { $0["apnsID"] as? String } == [lastTaken])
        #expect(b.stop() == 0)
    }

    /// A device linked to B, a provider talking to A, and A cannot reach B (B's cluster address is
    /// one nothing listens on): A stores the push, B hears of it (`NOTIFY herald_stored`) and sends
    /// it; the device's acknowledgement, on B, empties the shared store.
    @Test func aPushForANodeThatCannotBeReachedIsStoredAndSentByIt() throws {
        let url = try TestPostgres.blockingDatabase()
        let a = try Provisioned(arguments: ["--database", url])
        // 127.0.0.2 is loopback, but B listens on 127.0.0.1 only: A's connection is refused.
        let b = try GatewayProcess(arguments: ["--database", url, "--cluster-address", "127.0.0.2"])
        let linked = try LinkedTestDevice([
            "--gateway-state", b.state.path, "--identity", b.state.appendingPathComponent("test-device.json").path,
            "--count", "3",
        ])
        defer { linked.watchdog.cancel() }
        let (device, id, token) = (linked.child, linked.id, linked.token)
        try eventually("B to hold the device") {
            try b.adminCall("GET", "/devices/\(id)").json?["online"] as? Bool == true
        }
        // Every node knows which one holds it (device_node), and the nodes' heartbeats.
        let bNode = try #require(b.info.nodeID)
        #expect(bNode.hasPrefix("node-") && bNode != a.gateway.info.nodeID)
        try eventually("A to see the device on B") {
            let seen = try a.gateway.adminCall("GET", "/devices/\(id)").json
            return seen?["node"] as? String == bNode && seen?["online"] as? Bool == true
        }
        let nodes = try JSONSerialization.jsonObject(with: Data(a.gateway.adminCall("GET", "/nodes").body.utf8))
        let listed = try #require(nodes as? [[String: Any]])
        #expect(Set(listed.compactMap { $0["id"] as? String }) == [bNode, a.gateway.info.nodeID ?? ""])
        #expect(listed.allSatisfy { $0["alive"] as? Bool == true })
        #expect(listed.first { $0["id"] as? String == bNode }?["devices"] as? Int == 1)
        #expect(listed.first { $0["this"] as? Bool == true }?["id"] as? String == a.gateway.info.nodeID)
        let bAddress = try #require(b.info.clusterURL)
        #expect(bAddress.hasPrefix("https://127.0.0.2:") && bAddress.hasSuffix(":\(URL(string: b.tls)?.port ?? 0)"))
        #expect(listed.first { $0["id"] as? String == bNode }?["address"] as? String == bAddress)

        // A learns of the registration made on B (herald_directory), then takes the push: one 200.
        var first = CurlResponse(status: 0, version: "", headers: [:], body: "")
        try eventually("A to know B's token") {
            first = try a.push(token: token, body: #"{"aps":{"alert":"one"}}"#)
            return first.status == 200
        }
        #expect(device.reader.json()?["payload"] as? String == #"{"aps":{"alert":"one"}}"#)
        #expect(a.gateway.log.contains("could not forward a push to the node holding its device; storing it"))
        let second = try a.push(token: token, body: #"{"aps":{"alert":"two"}}"#)
        #expect(second.status == 200)
        #expect(device.reader.json()?["payload"] as? String == #"{"aps":{"alert":"two"}}"#)
        // Both nodes stop hearing herald_stored (their listening connections cut); the third push's
        // notification goes unheard, and B finds it when it listens again and looks at every device
        // it holds.
        let database = String(url.split(separator: "/").last!)
        let cut = try TestPostgres.blockingServer().sql(
            """
            SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
            WHERE datname = '\(database)' AND query LIKE 'LISTEN "herald_stored"%'
            """, database: database)
        #expect(cut.trimmingCharacters(in: .whitespacesAndNewlines) == "2")
        #expect(try a.push(token: token, body: #"{"aps":{"alert":"three"}}"#).status == 200)
        #expect(device.reader.json()?["payload"] as? String == #"{"aps":{"alert":"three"}}"#)
        #expect(b.log.contains("not hearing the pushes other nodes stored from PostgreSQL; listening again"))
        #expect(device.reader.json()?["received"] as? Int == 3)
        // Acknowledged on B: gone from the store, and the shared log says where it went.
        try eventually("the store to empty") { try a.gateway.adminCall("GET", "/devices/\(id)/stored").body == "[]" }
        let log = try a.gateway.adminCall("GET", "/deliveries/\(first.headers["apns-id"] ?? "")")
        let kinds = ((try? JSONSerialization.jsonObject(with: Data(log.body.utf8))) as? [[String: Any]] ?? [])
            .compactMap { $0["kind"] as? String }
        // The push was acknowledged on B. Its stored copy leaves the shared store in B's next
        // commit, and A may store the second push first: that commit replaces the copy and logs
        // `replaced` after `acknowledged` (seen once with the machine loaded; a known race between
        // two nodes' transactions, left as it is).
        #expect(kinds.first == "accepted" && kinds.contains("acknowledged"), "\(log.body)")
        #expect(kinds.drop { $0 != "acknowledged" }.dropFirst().allSatisfy { $0 == "replaced" }, "\(log.body)")
        #expect(b.log.contains("device connected") && !a.gateway.log.contains("device connected"))
        // The device gone (it stopped after two), no node holds it.
        try eventually("the device's claim to be released") {
            let seen = try a.gateway.adminCall("GET", "/devices/\(id)").json
            return seen?["node"] == nil && seen?["online"] as? Bool == false
        }
        #expect(a.gateway.stop() == 0)
        // A stopped gracefully: the others see it stopped.
        let after = try JSONSerialization.jsonObject(with: Data(b.adminCall("GET", "/nodes").body.utf8))
        let a2 = (after as? [[String: Any]])?.first { $0["id"] as? String == a.gateway.info.nodeID }
        #expect(a2?["alive"] as? Bool == false && a2?["stoppedAt"] != nil, "\(String(describing: a2))")
        #expect(b.stop() == 0)
    }

    /// A push for a device linked to B, sent to A, is forwarded to B: A's 200 comes once the device
    /// acknowledged it on B (nothing stored), a burst arrives whole (APNs' one-push-per-app rule of
    /// the offline store replaces none of it), and a device that does not acknowledge holds A's
    /// answer for B's acknowledgement timeout, after which B stores the push.
    @Test func aPushForADeviceOnAnotherNodeIsForwardedAndAnsweredOnceAcknowledged() throws {
        let url = try TestPostgres.blockingDatabase()
        let a = try Provisioned(arguments: ["--database", url])
        let b = try GatewayProcess(arguments: ["--database", url, "--ack-timeout", "3"])
        let burst = 200
        var watchdogs: [DispatchWorkItem] = []
        defer { for w in watchdogs { w.cancel() } }
        func device(_ name: String, _ extra: [String]) throws -> (child: Child, id: String, token: String) {
            let linked = try LinkedTestDevice(
                [
                    "--gateway", b.info.linkDevelopmentURL, "--identity",
                    b.state.appendingPathComponent("\(name).json").path,
                ] + extra)
            watchdogs.append(linked.watchdog)
            let (child, id, token) = (linked.child, linked.id, linked.token)
            try eventually("A to know the device's token and that B holds it") {
                let seen = try a.gateway.adminCall("GET", "/devices/\(id)")
                return seen.body.contains(token) && seen.json?["node"] as? String == b.info.nodeID
            }
            return (child, id, token)
        }
        let listening = try device("listening", ["--count", "\(burst + 1)"])
        // No --count: a device that stops after its push would close its link, and B would store the
        // push at once instead of waiting.
        let silent = try device("silent", ["--no-ack"])
        func kinds(_ apnsID: String?) throws -> [String] {
            let log = try a.gateway.adminCall("GET", "/deliveries/\(apnsID ?? "")")
            return ((try? JSONSerialization.jsonObject(with: Data(log.body.utf8))) as? [[String: Any]] ?? [])
                .compactMap { $0["kind"] as? String }
        }

        // One push: delivered and acknowledged on B before A answers; never stored.
        let one = try a.push(token: listening.token, body: #"{"aps":{"alert":"one"}}"#)
        #expect(one.status == 200, "\(one.body)")
        #expect(listening.child.reader.json()?["payload"] as? String == #"{"aps":{"alert":"one"}}"#)
        try eventually("the shared delivery log to say acknowledged") {
            try kinds(one.headers["apns-id"]) == ["accepted", "delivered", "acknowledged"]
        }

        // A burst on one connection, 20 at a time: every push reaches the device, none is replaced.
        let payload = a.gateway.state.appendingPathComponent("burst.json")
        try Data(#"{"aps":{"alert":"burst"}}"#.utf8).write(to: payload)
        let load = try run(
            "/usr/bin/env",
            [
                "h2load", "-n", "\(burst)", "-c", "1", "-m", "20", "-N", "30s", "-d", payload.path, "-H",
                "authorization: bearer \(a.jwt)", "-H", "apns-topic: \(Provisioned.topic)",
                a.gateway.dev + "/3/device/" + listening.token,
            ])
        #expect(load.stdout.contains("status codes: \(burst) 2xx, 0 3xx, 0 4xx, 0 5xx"), "\(load.stdout)")
        let payloads = (0..<burst).compactMap { _ in listening.child.reader.json()?["payload"] as? String }
        #expect(payloads.count == burst && payloads.allSatisfy { $0 == #"{"aps":{"alert":"burst"}}"# })
        #expect(listening.child.reader.json()?["received"] as? Int == burst + 1)
        #expect(try a.gateway.adminCall("GET", "/devices/\(listening.id)/stored").body == "[]")
        let metrics = try a.gateway.adminCall("GET", "/metrics").body
        #expect(metrics.contains(#"herald_pushes_forwarded_total{result="answered"} \#(burst + 1)"#), "\(metrics)")

        // A device that never acknowledges: A's answer waits for B's acknowledgement timeout (3 s),
        // then B stores the push and both answer 200.
        let started = Date()
        let held = try a.push(token: silent.token, body: #"{"aps":{"alert":"held"}}"#)
        let waited = Date().timeIntervalSince(started)
        #expect(held.status == 200, "\(held.body)")
        #expect(waited >= 3, "A answered before B gave up waiting for the acknowledgement: after \(waited) s")
        #expect(silent.child.reader.json()?["payload"] as? String == #"{"aps":{"alert":"held"}}"#)
        let stored = try a.gateway.adminCall("GET", "/devices/\(silent.id)/stored")
        let list = (try? JSONSerialization.jsonObject(with: Data(stored.body.utf8))) as? [[String: Any]] ?? []
        #expect(list.map { $0["apnsID"] as? String } == [held.headers["apns-id"]], "\(stored.body)")
        #expect(try a.gateway.adminCall("GET", "/devices/\(silent.id)").json?["stored"] as? Int == 1)
        #expect(try a.gateway.adminCall("GET", "/devices/\(listening.id)").json?["stored"] as? Int == 0)
        #expect(try kinds(held.headers["apns-id"]) == ["accepted", "delivered", "stored"])
        #expect(!a.gateway.log.contains("could not forward"))
        #expect(a.gateway.stop() == 0)
        #expect(b.stop() == 0)
    }

    /// B is killed while a push A forwarded to it waits for the device's acknowledgement: A stores
    /// the push and answers 200; the device moves to A and gets it again.
    @Test func aHolderKilledWithAForwardedPushInFlightLeavesItStored() throws {
        let url = try TestPostgres.blockingDatabase()
        let a = try Provisioned(arguments: ["--database", url])
        let b = try GatewayProcess(arguments: ["--database", url, "--ack-timeout", "30"])
        let linked = try LinkedTestDevice([
            "--gateway", b.info.linkDevelopmentURL, "--gateway",
            a.gateway.info.linkDevelopmentURL, "--identity",
            b.state.appendingPathComponent("moving.json").path, "--no-ack", "--reconnect",
        ])
        defer { linked.watchdog.cancel() }
        let (device, id, token) = (linked.child, linked.id, linked.token)
        try eventually("A to know the device's token and that B holds it") {
            let seen = try a.gateway.adminCall("GET", "/devices/\(id)")
            return seen.body.contains(token) && seen.json?["node"] as? String == b.info.nodeID
        }
        // The provider's request runs on its own thread: its answer waits for B, which waits for an
        // acknowledgement that never comes.
        let answered = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var answer: CurlResponse?
        nonisolated(unsafe) let provider = a
        DispatchQueue.global().async {
            answer = try? provider.push(token: token, body: #"{"aps":{"alert":"in flight"}}"#)
            answered.signal()
        }
        let first = try #require(device.reader.json())
        #expect(first["payload"] as? String == #"{"aps":{"alert":"in flight"}}"#)
        #expect(b.stop(signal: SIGKILL) == SIGKILL)
        #expect(answered.wait(timeout: .now() + 20) == .success)
        #expect(answer?.status == 200, "\(String(describing: answer?.body))")
        #expect(answer?.headers["apns-id"] == first["apnsID"] as? String)
        #expect(a.gateway.log.contains("could not forward a push to the node holding its device; storing it"))
        // The device moves to A, which claims it and sends what was stored: the same push again.
        var events: [[String: Any]] = []
        while let event = device.reader.json() {
            events.append(event)
            if event["event"] as? String == "duplicate" { break }
        }
        #expect(events.contains { $0["event"] as? String == "reconnected" }, "\(events)")
        #expect(events.last?["apnsID"] as? String == first["apnsID"] as? String, "\(events)")
        #expect(a.gateway.stop() == 0)
    }

    /// Three nodes, a device on each: a push sent to any node reaches the device on any node, each
    /// with one 200. Back to back, with APNs' one push per app kept offline: each goes through the
    /// holder's link, not the store, so none replaces another.
    @Test func everyNodeReachesTheDevicesOfEveryNode() throws {
        let url = try TestPostgres.blockingDatabase()
        let options = ["--database", url]
        let a = try Provisioned(arguments: options)
        let b = try GatewayProcess(arguments: options)
        let c = try GatewayProcess(arguments: options)
        let nodes = [a.gateway, b, c]
        var devices: [(child: Child, id: String, token: String)] = []
        var watchdogs: [DispatchWorkItem] = []
        defer { for w in watchdogs { w.cancel() } }
        for (i, node) in nodes.enumerated() {
            let linked = try LinkedTestDevice([
                "--gateway", node.info.linkDevelopmentURL, "--identity",
                node.state.appendingPathComponent("spread-\(i).json").path, "--count", "3",
            ])
            watchdogs.append(linked.watchdog)
            devices.append((linked.child, linked.id, linked.token))
        }
        // Every node knows every device's registration (herald_directory) before the pushes.
        for node in nodes {
            for device in devices {
                try eventually("a node to know a device's token") {
                    try node.adminCall("GET", "/devices/\(device.id)").body.contains(device.token)
                }
            }
        }
        for (j, node) in nodes.enumerated() {
            for (i, device) in devices.enumerated() {
                let sent = try a.push(node.dev, token: device.token, body: #"{"aps":{"alert":"\#(j) to \#(i)"}}"#)
                #expect(sent.status == 200, "node \(j) to the device on node \(i): \(sent.body)")
            }
        }
        for (i, device) in devices.enumerated() {
            let payloads = (0..<3).compactMap { _ in device.child.reader.json()?["payload"] as? String }
            #expect(
                Set(payloads) == Set((0..<3).map { #"{"aps":{"alert":"\#($0) to \#(i)"}}"# }),
                "the device on node \(i): \(payloads)")
            #expect(device.child.reader.json()?["received"] as? Int == 3)
        }
        for node in nodes { #expect(node.stop() == 0) }
    }

    /// A broadcast sent to one node reaches the devices subscribed on every node (herald_broadcast),
    /// and a device that subscribes on another node later gets the channel's kept message.
    @Test func aBroadcastOnOneNodeReachesTheSubscribersOfEveryNode() throws {
        let url = try TestPostgres.blockingDatabase()
        let a = try Provisioned(arguments: ["--database", url])
        let b = try GatewayProcess(arguments: ["--database", url])
        let channel = try BroadcastEndToEndTests.channel(a, policy: 1)
        let onA = try BroadcastEndToEndTests.device(a, "on-a", channels: [channel])
        let onB = try BroadcastEndToEndTests.device(a, "on-b", channels: [channel], on: b)
        defer { for d in [onA, onB] { d.watchdog.cancel() } }
        try eventually("B to know the app") {
            try b.adminCall("GET", "/apps").body.contains(Provisioned.topic)
        }
        let sent = try BroadcastEndToEndTests.send(a, channel: channel, to: b.dev)
        #expect(sent.status == 200, "\(sent)")
        let uniqueID = try #require(sent.headers["apns-unique-id"])
        for device in [onA, onB] {
            let got = try #require(device.child.reader.json())
            #expect(
                got["uniqueID"] as? String == uniqueID && got["payload"] as? String == BroadcastEndToEndTests.update,
                "\(got)")
        }
        let late = try BroadcastEndToEndTests.device(a, "late-b", channels: [channel], on: b)
        defer { late.watchdog.cancel() }
        #expect(try #require(late.child.reader.json())["uniqueID"] as? String == uniqueID)
        #expect(a.gateway.stop() == 0)
        #expect(b.stop() == 0)
    }

    /// A fault rule added through A's admin API is answered by B within moments; removed through B,
    /// A forgets it. `remaining` counts on each node.
    @Test func aFaultRuleAddedOnOneNodeIsAnsweredByEveryNode() throws {
        let url = try TestPostgres.blockingDatabase()
        let a = try Provisioned(arguments: ["--database", url])
        let b = try GatewayProcess(arguments: ["--database", url])
        #expect(try a.push(b.dev).status == 200)
        let added = try a.gateway.adminCall(
            "POST", "/faults", #"{"topic":"\#(Provisioned.topic)","reason":"TooManyRequests","remaining":2}"#)
        #expect(added.status == 201, "\(added.body)")
        let id = try #require(added.json?["id"] as? String)
        #expect(id.hasPrefix("fault-") && id != "fault-1", "ids are random on a cluster: \(id)")
        try eventually("B to answer the rule") { try a.push(b.dev).status == 429 }
        #expect(try a.push(b.dev).reason == "TooManyRequests")
        // B used its two; A still has its own two.
        #expect(try a.push(b.dev).status == 200)
        #expect(try a.push().reason == "TooManyRequests")
        #expect(try a.push().reason == "TooManyRequests")
        #expect(try a.push().status == 200)
        #expect(try b.adminCall("GET", "/faults").body == "[]")
        #expect(try a.gateway.adminCall("GET", "/faults").body == "[]")

        let again = try b.adminCall("POST", "/faults", #"{"topic":"\#(Provisioned.topic)","reason":"BadTopic"}"#)
        let second = try #require(again.json?["id"] as? String)
        try eventually("A to answer B's rule") { try a.push().reason == "BadTopic" }
        #expect(try b.adminCall("DELETE", "/faults/\(second)").status == 204)
        try eventually("A to forget it") { try a.push().status == 200 }
        #expect(a.gateway.stop() == 0)
        #expect(b.stop() == 0)
    }

    /// Three nodes; a device given all three link addresses is on B. B is killed with SIGKILL: the
    /// push sent meanwhile (through A) is stored, the device moves to the next address, C claims it
    /// with a newer epoch and delivers what was stored.
    @Test func aDeviceWhoseNodeIsKilledMovesToAnotherAndGetsWhatWasStored() async throws {
        let url = try TestPostgres.blockingDatabase()
        let a = try Provisioned(arguments: ["--database", url])
        let b = try GatewayProcess(arguments: ["--database", url])
        let c = try GatewayProcess(arguments: ["--database", url])
        let links = [b, c, a.gateway].map { $0.info.linkDevelopmentURL }
        let device = try await TestDevice.start(
            gatewayURL: links[0], otherGatewayURLs: Array(links.dropFirst()), apps: [Provisioned.topic])
        let token = try await device.token(for: Provisioned.topic)
        let id = try #require(await device.service.deviceID)
        let bNode = try #require(b.info.nodeID)
        let cNode = try #require(c.info.nodeID)
        try eventually("A to know the device is on B") {
            try a.gateway.adminCall("GET", "/devices/\(id)").json?["node"] as? String == bNode
        }
        try eventually("A to know B's token") {
            try a.push(token: token, body: #"{"aps":{"alert":"before"}}"#).status == 200
        }
        #expect(await device.nextPresentation()?.body == "before")

        #expect(b.stop(signal: SIGKILL) == SIGKILL)
        let during = try a.push(token: token, body: #"{"aps":{"alert":"while B is gone"}}"#)
        #expect(during.status == 200, "\(during.body)")
        // The device tries the next address (C), which claims it and sends what was stored.
        #expect(await device.nextPresentation(within: .seconds(30))?.body == "while B is gone")
        let seen = try a.gateway.adminCall("GET", "/devices/\(id)").json
        #expect(seen?["node"] as? String == cNode, "\(String(describing: seen))")
        try eventually("the store to empty") { try a.gateway.adminCall("GET", "/devices/\(id)/stored").body == "[]" }
        // B's heartbeat stopped: the others stop counting it alive within 15 s (not waited for here);
        // it was not marked stopped, since it did not stop gracefully.
        let nodes = try JSONSerialization.jsonObject(with: Data(c.adminCall("GET", "/nodes").body.utf8))
        let killed = (nodes as? [[String: Any]])?.first { $0["id"] as? String == bNode }
        #expect(killed?["stoppedAt"] == nil && killed?["devices"] as? Int == 0, "\(String(describing: killed))")
        await device.stop()
        #expect(c.stop() == 0)
        #expect(a.gateway.stop() == 0)
    }

    @Test func aStateDirectoryOfAnotherServiceIsRefusedAndABadURLIsNamed() throws {
        let url = try TestPostgres.blockingDatabase()
        let first = try GatewayProcess(arguments: ["--database", url])
        #expect(first.stop() == 0)
        // A state directory that ran on its own (SQLite) has a CA of its own.
        let alone = try GatewayProcess()
        #expect(alone.stop() == 0)
        let ports = [
            "--port", "0", "--dev-port", "0", "--admin-port", "0", "--link-port", "0", "--no-legacy", "--no-channels",
        ]
        let refused = try run(
            try heraldExecutable().path, ["gateway", "--state", alone.state.path, "--database", url] + ports)
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("has a CA and secrets of its own, not the cluster's"), "\(refused.stderr)")
        #expect(refused.stderr.contains("give this node a new --state directory"), "\(refused.stderr)")

        let state = FileManager.default.temporaryDirectory.appendingPathComponent("herald-gw-\(UUID())").path
        let bad = try run(
            try heraldExecutable().path, ["gateway", "--state", state, "--database", "mysql://u:pw@h/db"] + ports)
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("--database must be sqlite or a postgres:// URL"), "\(bad.stderr)")
        #expect(!bad.stderr.contains("pw"))
        let port = try portOutsideTheEphemeralRange()
        let unreachable = try run(
            try heraldExecutable().path,
            ["gateway", "--state", state, "--database", "postgres://herald:pw@127.0.0.1:\(port)/herald"] + ports)
        #expect(unreachable.status != 0)
        #expect(
            unreachable.stderr.contains("could not open the database postgres://herald:***@127.0.0.1:\(port)/herald"),
            "\(unreachable.stderr)")
    }

    /// PostgreSQL crashes (immediate stop) and comes back while providers send: every push the
    /// gateway answered 200 is in the database afterwards, and every request was answered.
    @Test func aDatabaseRestartUnderLoadLosesNothingAcknowledged() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-pg-load-\(UUID())")
        let server = try PrivatePostgres.start(dataDirectory: directory.appendingPathComponent("data"))
        defer { server.destroy() }
        let url = try server.createDatabase("load")
        let p = try Provisioned(arguments: ["--database", url, "--offline-depth", "100000"])
        let payload = p.gateway.state.appendingPathComponent("payload.json")
        try Data(#"{"aps":{"alert":"n"}}"#.utf8).write(to: payload)
        // 2,000 pushes at about 400 a second over two connections: about five seconds of load.
        let load = Process()
        load.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        load.arguments = [
            // -N: a connection that hears nothing for 30 s is closed, so a gateway that stopped
            // answering fails the test instead of hanging it.
            "h2load", "-n", "2000", "-c", "2", "-m", "8", "--rps", "200", "-N", "30s", "-d", payload.path,
            "-H", "authorization: bearer \(p.jwt)", "-H", "apns-topic: \(Provisioned.topic)",
            p.gateway.dev + "/3/device/" + p.token,
        ]
        let output = Pipe()
        load.standardOutput = output
        try load.run()
        func storedCount() throws -> Int {
            Int(
                try server.sql("SELECT count(*) FROM stored", database: "load").trimmingCharacters(
                    in: .whitespacesAndNewlines)) ?? -1
        }
        try eventually("the load is under way") { try storedCount() >= 200 }
        try server.stop(immediate: true)
        try server.restart()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        load.waitUntilExit()
        let codes = String(text.split(separator: "\n").first { $0.contains("status codes:") } ?? "")
        func count(_ kind: String) -> Int? {
            (try? Regex("([0-9]+) \(kind)").firstMatch(in: codes)).flatMap { Int($0.output[1].substring ?? "") }
        }
        let (ok, failed) = (count("2xx") ?? 0, count("5xx") ?? 0)
        #expect(ok + failed == 2000, "every request answered: \(text)")
        #expect(count("3xx") == 0 && count("4xx") == 0, "\(codes)")
        // Answered 503 while the database was away, or 200 and stored: never 200 and gone.
        let stored = try storedCount()
        #expect(stored >= ok, "\(ok) acknowledged, \(stored) stored")
        #expect(ok >= 200)
        // The gateway works on: a new push is stored.
        #expect(try p.push().status == 200)
        #expect(try storedCount() == stored + 1)
        #expect(p.gateway.log.contains("store write failed") || failed == 0)
        // With the database away, a push that must be stored gets APNs' answer for a service that
        // cannot take it now; once it is back, the same push is taken.
        try server.stop()
        let away = try p.push()
        #expect(away.status == 503 && away.reason == "ServiceUnavailable", "\(away.body)")
        try server.restart()
        try eventually("the gateway to store again") { try p.push().status == 200 }
        #expect(p.gateway.stop() == 0)
    }
}

/// A `herald test-device --json` registered for ``Provisioned/topic``, read up to its ready line.
/// Its watchdog kills it after 60 s: a safety net, not a wait (a push that never arrives ends the
/// test instead of hanging it); cancel it when the test is done.
struct LinkedTestDevice {
    let child: Child
    let id: String
    let token: String
    let watchdog: DispatchWorkItem

    init(_ arguments: [String]) throws {
        child = try Child(
            try heraldExecutable(), ["test-device", "--topic", Provisioned.topic, "--json"] + arguments,
            keepingErrors: true)
        watchdog = heraldTests.watchdog(child.process, after: 60)
        let child = self.child
        let ready = try #require(
            child.reader.json(), "no ready line from herald test-device; its standard error: \(child.errors)")
        id = try #require(ready["device"] as? String)
        token = try #require((ready["tokens"] as? [String: String])?[Provisioned.topic])
    }
}
