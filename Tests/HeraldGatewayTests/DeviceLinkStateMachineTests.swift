import Foundation
import HeraldCore
import NIOCore
import NIOWebSocket
import Testing

@testable import HeraldGateway

/// The device link's logic as a value: events in, actions out; no socket, no store, no waiting.
/// (The same paths with a real device on the other side of a socket are in `DeviceLinkTests`.)
@Suite struct DeviceLinkStateMachineTests {
    typealias Link = LinkMachineDriver

    // MARK: Greeting and authentication

    @Test func theLinkGreetsAndTheDeviceMustSayHelloFirst() {
        var link = Link()
        #expect(link.take() == [.send(.challenge(nonce: Link.nonce))])
        link.receive(.ack(["x"]))
        #expect(
            link.take() == [
                .send(
                    .error(
                        request: nil, code: .notAuthenticated,
                        message: "the first message must be hello, signed over the challenge")),
                .close(code: 1008), .cancelTimers,
            ])
        #expect(link.machine.phase == .closed)
    }

    @Test func aHelloIsCheckedOffTheLoopAndTheDeviceIsWelcomedAttachedAndGivenItsBacklog() {
        var link = Link(idleTimeout: .seconds(600))
        _ = link.take()
        link.receive(.hello(device: "phone", publicKey: nil, signature: Data([9])))
        #expect(
            link.take() == [
                .connectionEstablished,
                .scheduleAuthenticationDeadline(at: link.now + .seconds(30)),
                .authenticate(device: "phone", publicKey: nil, signature: Data([9]), nonce: Link.nonce),
            ])
        // Anything but the answer meanwhile is refused.
        var early = link
        early.receive(.ack([]))
        #expect(
            early.take().first
                == .send(
                    .error(
                        request: nil, code: .notAuthenticated,
                        message: "the first message must be hello, signed over the challenge")))
        link.authenticate(generation: 3)
        #expect(
            link.take() == [
                .cancelAuthenticationDeadline,
                .scheduleLiveness(in: .minutes(5)),
                .send(.welcome(device: "phone", generation: 3, registrations: [])),
                .attach(device: "phone", at: Link.startDate),
                .readBacklog(device: "phone"),
            ])
        #expect(link.machine.deviceID == "phone")
    }

    @Test func aRefusedDeviceIsToldWhyAndClosed() {
        var link = Link()
        link.receive(.hello(device: "phone", publicKey: nil, signature: Data([9])))
        _ = link.take()
        let refusal = DeviceLinkService.Refusal(code: .badSignature, message: "no")
        link.record(link.machine.authenticated(.failure(refusal), now: link.now, at: link.at))
        #expect(
            link.take() == [
                .logRefused(code: .badSignature, message: "no"),
                .send(.error(request: nil, code: .badSignature, message: "no")),
                .close(code: 1008), .cancelTimers,
            ])
        // An answer that comes after the link closed changes nothing.
        link.authenticate()
        #expect(link.take().isEmpty)
    }

    /// A `hello` whose check does not come back (a store that stalls on a new device) holds the link
    /// no longer than the authentication deadline: the device is told and the link closed, and the
    /// check's late answer changes nothing. A check that comes back in time ends the deadline.
    @Test func aHelloNotCheckedWithinTheDeadlineIsRefusedAndItsLateAnswerIgnored() {
        var link = Link(authenticationTimeout: .seconds(20))
        _ = link.take()
        link.receive(.hello(device: "phone", publicKey: nil, signature: Data([9])))
        #expect(link.take().contains(.scheduleAuthenticationDeadline(at: link.now + .seconds(20))))
        link.advance(by: .milliseconds(19_999))
        #expect(link.take().isEmpty)
        #expect(link.machine.phase == .authenticating)
        link.advance(by: .milliseconds(1))
        let message = "the gateway could not check the hello within 20 s"
        #expect(
            link.take() == [
                .logRefused(code: .internal, message: message),
                .send(.error(request: nil, code: .internal, message: message)),
                .close(code: 1008), .cancelTimers,
            ])
        #expect(link.machine.phase == .closed)
        link.authenticate()
        #expect(link.take().isEmpty, "the check came back too late")

        // In time: the deadline is cancelled, and its time passing does nothing to the link.
        var quick = Link(authenticationTimeout: .seconds(20))
        quick.receive(.hello(device: "phone", publicKey: nil, signature: Data([9])))
        quick.advance(by: .seconds(19))
        quick.authenticate()
        #expect(quick.authentication == nil)
        _ = quick.take()
        quick.advance(by: .seconds(60))
        #expect(quick.take().isEmpty)
        #expect(quick.machine.deviceID == "phone")

        // A ticket accepted on the loop has no such deadline: nothing waits off the loop.
        var resumed = Link(authenticationTimeout: .seconds(20))
        resumed.receive(.resume(device: "phone", ticket: Data([1]), proof: Data([2])))
        #expect(resumed.authentication == nil)
    }

    @Test func aTicketIsCheckedOnTheLoopAndARefusedOneLeavesTheChallengeToBeSigned() {
        var link = Link(idleTimeout: .seconds(600))
        _ = link.take()
        link.receive(.resume(device: "phone", ticket: Data([1]), proof: Data([2])))
        // No connectionEstablished yet: the first-bytes deadline still holds until it is accepted.
        #expect(link.take() == [.resume(device: "phone", ticket: Data([1]), proof: Data([2]), nonce: Link.nonce)])
        let refusal = DeviceLinkService.Refusal(code: .ticketRefused, message: "the ticket has expired")
        link.record(link.machine.resumed(.failure(refusal), nonce: Link.nonce, now: link.now, at: link.at))
        #expect(
            link.take() == [
                .logRefused(code: .ticketRefused, message: "the ticket has expired"),
                .send(.error(request: nil, code: .ticketRefused, message: "the ticket has expired")),
            ])
        #expect(link.machine.phase == .greeting(nonce: Link.nonce))
        // One ticket per link: a second is refused like any message but hello, and the link closed.
        var again = link
        again.receive(.resume(device: "phone", ticket: Data([1]), proof: Data([2])))
        #expect(again.take().suffix(2) == [.close(code: 1008), .cancelTimers])
        // The signed hello goes on as without a ticket.
        link.receive(.hello(device: "phone", publicKey: nil, signature: Data([9])))
        #expect(
            link.take() == [
                .connectionEstablished,
                .scheduleAuthenticationDeadline(at: link.now + .seconds(30)),
                .authenticate(device: "phone", publicKey: nil, signature: Data([9]), nonce: Link.nonce),
            ])
    }

    @Test func anAcceptedTicketWelcomesTheDeviceWithTheNextTicket() {
        var link = Link(idleTimeout: .seconds(600))
        _ = link.take()
        link.receive(.resume(device: "phone", ticket: Data([1]), proof: Data([2])))
        _ = link.take()
        let next = LinkTicket(ticket: Data([3]), secret: Data([4]), expires: 5)
        let accepted = DeviceRecord(id: "phone", publicKey: Data([4]), generation: 2, createdAt: Link.startDate)
        link.record(
            link.machine.resumed(
                .success(.init(device: accepted, registrations: [], ticket: next)), nonce: Link.nonce, now: link.now,
                at: link.at))
        #expect(
            link.take() == [
                .connectionEstablished,
                .scheduleLiveness(in: .minutes(5)),
                .send(.welcome(device: "phone", generation: 2, registrations: [], ticket: next)),
                .attach(device: "phone", at: Link.startDate),
                .readBacklog(device: "phone"),
            ])
        // A refusal that is not about the ticket (the device was deleted) closes the link.
        var other = Link()
        _ = other.take()
        other.receive(.resume(device: "phone", ticket: Data([1]), proof: Data([2])))
        _ = other.take()
        let deleted = DeviceLinkService.Refusal(code: .deviceDeleted, message: "gone")
        other.record(other.machine.resumed(.failure(deleted), nonce: Link.nonce, now: other.now, at: other.at))
        #expect(other.take().suffix(2) == [.close(code: 1008), .cancelTimers])
    }

    @Test func pingsAreAnsweredAndACloseIsEchoed() {
        var link = Link.online()
        var data = ByteBuffer()
        data.writeString("hi")
        link.receive(WebSocketFrame(fin: true, opcode: .ping, data: data))
        #expect(link.take() == [.pong(data)])
        var close = ByteBuffer()
        close.writeInteger(UInt16(1000))
        close.writeString("bye")
        link.receive(WebSocketFrame(fin: true, opcode: .connectionClose, data: close))
        var code = ByteBuffer()
        code.writeInteger(UInt16(1000))
        #expect(link.take() == [.echoClose(code)])
    }

    @Test func aDevicesRequestsAreCarriedOutOffTheLoopAndStrangeMessagesRefused() {
        var link = Link.online()
        link.receive(.register(request: 4, topic: "com.example.app", environment: .development, installation: nil))
        #expect(
            link.take() == [
                .perform(
                    .register(request: 4, topic: "com.example.app", environment: .development, installation: nil),
                    device: "phone")
            ])
        let id = "6E1F2D3C-4B5A-4978-8A6B-5C4D3E2F1A0B"
        link.receive(.refused(apnsID: id, reason: "no such app"))
        #expect(
            link.take() == [
                .recordRefused(apnsID: id, device: "phone", reason: "no such app", at: Link.startDate, refusal: nil)
            ])
        // What the delivery log keeps for its whole retention is bounded: an id that is no push's
        // is refused, and a reason longer than any a device gives is cut.
        link.receive(.refused(apnsID: String(repeating: "a", count: 100_000), reason: "no such app"))
        #expect(
            link.take() == [
                .send(
                    .error(
                        request: nil, code: .badMessage,
                        message:
                            "apnsID \"\(String(repeating: "a", count: 64))…\" (100000 bytes in all) is not a push's apns-id"
                    ))
            ])
        link.receive(.refused(apnsID: id, reason: String(repeating: "é", count: 300)))
        #expect(
            link.take() == [
                .recordRefused(
                    apnsID: id, device: "phone", reason: String(repeating: "é", count: 250) + "… (600 bytes in all)",
                    at: Link.startDate, refusal: nil)
            ])
        link.receive(.challenge(nonce: Data()))
        #expect(
            link.take() == [
                .send(.error(request: nil, code: .badMessage, message: "a device does not send that message"))
            ])
        // A request this gateway cannot read (a message type it does not know) is answered as that
        // request, so the device's call fails at once; without a whole number it has none.
        func text(_ json: String) -> WebSocketFrame {
            WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: json))
        }
        link.receive(text(#"{"type":"frobnicate","request":7}"#))
        #expect(
            link.take() == [
                .send(.error(request: 7, code: .badMessage, message: "unknown message type \"frobnicate\""))
            ])
        for json in [#"{"type":"frobnicate","request":7.5}"#, #"{"type":"frobnicate","request":true}"#, "[1"] {
            link.receive(text(json))
            guard case .send(.error(request: nil, code: .badMessage, _)) = link.take().first else {
                Issue.record("\(json) was not answered without a request number")
                continue
            }
        }
    }

    // MARK: Notifications going down

    @Test func anOfflineLinkRefusesAPushAtOnce() {
        var link = Link()
        link.offer(Link.push("a"))
        #expect(link.answered() == [Link.answer(0, .notAcknowledged(deliveredAt: nil))])
    }

    @Test func anAcknowledgedPushIsAnsweredWithWhenItWasDeliveredAndAcknowledged() {
        var link = Link.online()
        link.offer(Link.push("a"))
        #expect(link.take() == [.write(Link.push("a")), .scheduleDeadline(at: Link.start + .seconds(2)), .flush])
        link.advance(by: .milliseconds(300))
        link.acknowledge(["a", "unknown"])
        let acknowledgedAt = Link.startDate.addingTimeInterval(0.3)
        #expect(
            link.take() == [Link.answer(1, .acknowledged(deliveredAt: Link.startDate, acknowledgedAt: acknowledgedAt))])
        // Its deadline passes without effect.
        link.advance(by: .seconds(5))
        #expect(link.answered().isEmpty)
    }

    /// The link's side of `DeviceLinkTests.priorityOneWaitsForOtherTrafficAndGoesWithIt`.
    @Test func priorityOneAndFiveAreHeldAndGoWithPriorityTen() {
        var link = Link.online(qos: .init(batchWindow: .seconds(60)))
        link.offer(Link.push("low", priority: .low))
        link.offer(Link.push("normal", priority: .normal))
        // Held: the router stores them and answers; nothing is written.
        #expect(
            link.take() == [Link.answer(1, .hold), Link.answer(2, .hold), .scheduleWake(at: Link.start + .seconds(60))])
        link.offer(Link.push("urgent"))
        #expect(link.written().map(\.apnsID) == ["urgent", "normal", "low"])
        link.acknowledge(["urgent", "normal", "low"])
        let actions = link.take()
        #expect(actions.first == Link.answer(3, .acknowledged(deliveredAt: link.at, acknowledgedAt: link.at)))
        // The held ones were stored: their acknowledgements remove them.
        #expect(
            actions.dropFirst().map { if case .recordAcknowledged(let p, _, _, _) = $0 { p.apnsID } else { "" } } == [
                "normal", "low",
            ])
    }

    @Test func aPriorityFiveBatchGoesWhenItsWindowCloses() {
        var link = Link.online(qos: .init(batchWindow: .seconds(1)))
        link.offer(Link.push("a", priority: .normal))
        link.advance(by: .milliseconds(500))
        link.offer(Link.push("b", priority: .normal))
        #expect(link.written().isEmpty)
        link.advance(by: .milliseconds(499))
        #expect(link.written().isEmpty)
        link.advance(by: .milliseconds(1))
        #expect(link.written().map(\.apnsID) == ["a", "b"])
        #expect(link.wake == nil)
    }

    /// A link still greeting (no device yet) has no one to tell: it only closes.
    @Test func aStoppingGatewayClosesALinkThatHasNoDeviceYet() {
        var machine = DeviceLinkStateMachine(
            configuration: DeviceLinkConfiguration(), broadcasts: false, nonce: Data(repeating: 1, count: 32))
        let actions = machine.goAway(at: Link.startDate)
        #expect(actions.first == .close(code: 1001))
        #expect(!actions.contains { if case .send = $0 { true } else { false } })
    }

    @Test func whenTheLinkClosesWaitingProvidersAreAnsweredAndTheDeviceDetached() {
        var link = Link.online()
        link.offer(Link.push("written"))
        link.offer(Link.push("expiration-0"), expiresIn: nil)
        link.offer(Link.push("held", priority: .low))
        #expect(link.answered() == [Link.answer(3, .hold)])
        link.record(link.machine.goAway(at: link.at))
        let actions = link.take()
        // The device is told when to come back (the drain window, 10 s by default), then the close.
        #expect(
            Array(actions.prefix(4)) == [
                .send(.goAway(reconnectWithin: 10_000)), .close(code: 1001), .cancelTimers,
                .detach(device: "phone", at: Link.startDate),
            ])
        #expect(actions.last == .logDisconnected(device: "phone"))
        // The written ones were not acknowledged (the router stores them); the held one is stored already.
        let answers = Link.answers(actions)
        #expect(Set(answers.map(\.ticket)) == [1, 2])
        #expect(answers.allSatisfy { $0.outcome == .notAcknowledged(deliveredAt: Link.startDate) })
        #expect(!link.isOpen)
        // Later events find the link closed.
        link.offer(Link.push("late"))
        #expect(link.answered() == [Link.answer(0, .notAcknowledged(deliveredAt: nil))])
        #expect(link.machine.closed(at: link.at).isEmpty)
    }

    // MARK: Broadcast channels

    @Test func subscriptionsAreAskedOfTheHubAnsweredWithAllTheAppsChannelsAndEndWithTheLink() {
        let channel = "AAAAAAAAAAAAAAAAAAAAAA=="
        let other = "BBBBBBBBBBBBBBBBBBBBBB=="
        let subscription = DeviceLinkStateMachine.Subscription(topic: "com.example.app", environment: .development)
        var without = Link.online(broadcasts: false)
        without.receive(
            .subscribe(request: 1, topic: "com.example.app", environment: .development, channels: [channel]))
        #expect(
            without.take() == [
                .send(.error(request: 1, code: .refused, message: "this gateway has no broadcast channels"))
            ])

        var link = Link.online(broadcasts: true)
        link.receive(
            .subscribe(request: 2, topic: "com.example.app", environment: .development, channels: ["not base64!"]))
        #expect(
            link.take() == [
                .send(.error(request: 2, code: .badMessage, message: "\"not base64!\" is not a channel id (base64)"))
            ])
        link.receive(.subscribe(request: 3, topic: "com.example.app", environment: .development, channels: [channel]))
        #expect(link.take() == [.subscribe(request: 3, subscription, channels: [channel], at: Link.startDate)])
        link.record(link.machine.subscribed(request: 3, subscription, channels: [channel], .success([])))
        #expect(
            link.take() == [
                .send(.subscribed(request: 3, topic: "com.example.app", environment: .development, channels: [channel]))
            ])
        let refusal = DeviceLinkService.Refusal(code: .refused, message: "not the app's")
        link.record(link.machine.subscribed(request: 4, subscription, channels: [other], .failure(refusal)))
        #expect(link.take() == [.send(.error(request: 4, code: .refused, message: "not the app's"))])
        // A broadcast frame goes while the link is up.
        #expect(link.machine.broadcastFrame(ByteBuffer()) == [.writeFrame(ByteBuffer()), .flush])
        link.receive(.unsubscribe(request: 5, topic: "com.example.app", environment: .development, channels: [channel]))
        #expect(
            link.take() == [
                .unsubscribe(channels: [channel], environment: .development),
                .send(.subscribed(request: 5, topic: "com.example.app", environment: .development, channels: [])),
            ])
        link.record(link.machine.subscribed(request: 6, subscription, channels: [other], .success([])))
        _ = link.take()
        link.record(link.machine.goAway(at: link.at))
        #expect(link.take().contains(.unsubscribe(channels: [other], environment: .development)))
        // A subscription the hub took after the link closed is given back at once.
        link.record(link.machine.subscribed(request: 7, subscription, channels: [channel], .success([])))
        #expect(link.take() == [.unsubscribe(channels: [channel], environment: .development)])
        #expect(link.machine.broadcastFrame(ByteBuffer()).isEmpty)
    }
}
