import Foundation
import Testing

/// Device tokens cannot be forged or carried across environments, and a certificate pushes to the
/// topics it lists only; over real connections with curl.
@Suite(.serialized, .ownThread) struct SecurityEndToEndTests {
    @Test func deviceTokensCannotBeForgedOrReplayedAcrossEnvironments() throws {
        let p = try Provisioned()
        #expect(try p.push().status == 200)
        // A forged token (random bytes), and the real one with one bit changed.
        let forged = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        var flipped = Array(p.token)
        flipped[10] = flipped[10] == "0" ? "1" : "0"
        for token in [forged, String(flipped)] {
            let r = try p.push(token: token)
            #expect(r.status == 400 && r.reason == "BadDeviceToken", "\(token): \(r)")
        }
        // The development token sent to the production environment (the authority names it).
        for host in ["api.push.apple.com", "api.development.push.apple.com"] {
            let r = try p.push(headers: ["host: \(host)"], http: "--http1.1")
            let expected = host == "api.push.apple.com" ? 400 : 200
            #expect(r.status == expected, "\(host): \(r)")
            if expected == 400 { #expect(r.reason == "BadDeviceToken") }
        }
        // The same device's production token is another token, unknown in development.
        let production = try p.gateway.adminCall(
            "POST", "/devices/dev1/apps", #"{"bundleID":"\#(Provisioned.topic)","environment":"production"}"#)
        let productionToken = try #require(production.json?["token"] as? String)
        #expect(productionToken != p.token)
        #expect(try p.push(token: productionToken).reason == "BadDeviceToken")
        #expect(
            try p.push(token: productionToken, headers: ["host: api.push.apple.com"], http: "--http1.1").status == 200)
        #expect(p.gateway.stop() == 0)
    }

    @Test func aCertificatePushesToTheTopicsItListsOnly() throws {
        let p = try Provisioned()
        // A second app of the same team, with a device registration of its own.
        let other = "com.example.other"
        #expect(
            try p.gateway.adminCall("POST", "/apps", #"{"bundleID":"\#(other)","teamID":"\#(Provisioned.team)"}"#)
                .status == 201)
        let registration = try p.gateway.adminCall("POST", "/devices/dev1/apps", #"{"bundleID":"\#(other)"}"#)
        let otherToken = try #require(registration.json?["token"] as? String)
        // A certificate for the first app, listing its own topic and its VoIP topic.
        let issued = try p.gateway.adminCall(
            "POST", "/apps/\(Provisioned.topic)/certificates",
            #"{"environments":["development"],"topics":["\#(Provisioned.topic)","\#(Provisioned.topic).voip"]}"#)
        #expect(issued.status == 201, "\(issued)")
        let cert = p.gateway.state.appendingPathComponent("topics.pem").path
        let key = p.gateway.state.appendingPathComponent("topics-key.pem").path
        try (issued.json?["certificate"] as? String ?? "").write(toFile: cert, atomically: true, encoding: .utf8)
        try (issued.json?["privateKey"] as? String ?? "").write(toFile: key, atomically: true, encoding: .utf8)
        let tls = ["--cacert", p.gateway.ca, "--cert", cert, "--key", key]
        // Its own topic: accepted, with no token at all.
        #expect(try p.push(p.gateway.tls, auth: false, http: "--http2", extra: tls).status == 200)
        // Another app's topic, even of the same team and with a valid token for it: refused.
        let refused = try p.push(
            p.gateway.tls, token: otherToken, topic: other, auth: false, http: "--http2", extra: tls)
        #expect(refused.status == 400 && refused.reason == "TopicDisallowed", "\(refused)")
        // A JWT on the same request changes nothing: the certificate decides on its connection.
        let both = try p.push(p.gateway.tls, token: otherToken, topic: other, auth: true, http: "--http2", extra: tls)
        #expect(both.status == 400 && both.reason == "TopicDisallowed", "\(both)")
        // A topic it does not list, of its own app (complication): refused too.
        let complication = try p.push(
            p.gateway.tls, topic: Provisioned.topic + ".complication", headers: ["apns-push-type: complication"],
            auth: false, http: "--http2", extra: tls)
        #expect(complication.status == 400 && complication.reason == "TopicDisallowed", "\(complication)")
        #expect(p.gateway.stop() == 0)
    }
}
