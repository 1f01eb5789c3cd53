import Crypto
import Foundation
import HeraldCore
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

@testable import HeraldDevice

/// The device side of the link, driven frame by frame: what one read hands over and acknowledges.
@Suite struct LinkClientHandlerTests {
    func push(_ id: String) -> LinkPush {
        LinkPush(
            apnsID: id, uniqueID: nil, topic: "com.example.demo",
            token: DeviceToken(bytes: Array(repeating: 7, count: 32)),
            environment: .development, pushType: .alert, priority: .immediate, expiration: nil, collapseID: nil,
            payload: Data(#"{"aps":{"alert":"\#(id)"}}"#.utf8))
    }

    func frame(_ message: LinkMessage) -> WebSocketFrame {
        var buffer = ByteBuffer()
        buffer.writeBytes(message.encoded())
        return WebSocketFrame(fin: true, opcode: .text, data: buffer)
    }

    func sent(_ channel: EmbeddedChannel) throws -> [LinkMessage] {
        var messages: [LinkMessage] = []
        while let frame = try channel.readOutbound(as: WebSocketFrame.self) {
            // The frame encoder applies the mask on the wire; here the data is still plain.
            #expect(frame.maskKey != nil, "a client masks every frame")
            messages.append(try LinkMessage(json: Data(frame.data.readableBytesView)))
        }
        return messages
    }

    /// A link client handler that acknowledges by itself, in a channel of its own, and its events.
    func client(identity: DeviceIdentity = DeviceIdentity(deviceID: "d1"), seenLimit: Int = 100_000) throws -> (
        EmbeddedChannel, AsyncStream<GatewayLinkEvent>
    ) {
        let channel = EmbeddedChannel()
        let (events, continuation) = AsyncStream.makeStream(of: GatewayLinkEvent.self)
        let handler = LinkClientHandler(
            identity: identity, autoAcknowledge: true,
            welcome: channel.eventLoop.makePromise(), events: continuation, seenLimit: seenLimit)
        try channel.pipeline.syncOperations.addHandler(handler)
        return (channel, events)
    }

    @Test func aHeldTicketIsPresentedOnceAndARefusalIsAnsweredWithASignature() throws {
        let identity = DeviceIdentity(deviceID: "d1")
        let nonce = Data(repeating: 5, count: 32)
        // No ticket yet: the challenge is signed.
        var (channel, _) = try client(identity: identity)
        try channel.writeInbound(frame(.challenge(nonce: nonce)))
        guard case .hello(let device, _, let signature) = try #require(try sent(channel).first) else {
            Issue.record("expected a hello")
            return
        }
        #expect(device == "d1")
        let ecdsa = try P256.Signing.ECDSASignature(rawRepresentation: signature)
        #expect(identity.privateKey.publicKey.isValidSignature(ecdsa, for: DeviceLink.signedBytes(nonce: nonce)))
        let ticket = LinkTicket(ticket: Data([1, 2]), secret: Data(repeating: 3, count: 32), expires: Int64.max)
        try channel.writeInbound(frame(.welcome(device: "d1", generation: 1, registrations: [], ticket: ticket)))
        #expect(identity.resumption.ticket == ticket)

        // The next connection presents it, with the proof over its own challenge.
        (channel, _) = try client(identity: identity)
        try channel.writeInbound(frame(.challenge(nonce: nonce)))
        #expect(
            try sent(channel)
                == [
                    .resume(
                        device: "d1", ticket: ticket.ticket,
                        proof: DeviceLink.resumeProof(secret: ticket.secret, nonce: nonce))
                ])
        // Held until the welcome replaces it or the gateway refuses it: a connection that dies
        // before its welcome leaves it for the next.
        #expect(identity.resumption.ticket == ticket)
        // Refused: the same challenge is signed on the same link.
        try channel.writeInbound(frame(.error(request: nil, code: .ticketRefused, message: "the ticket has expired")))
        guard case .hello = try #require(try sent(channel).first) else {
            Issue.record("expected a hello after the refusal")
            return
        }
        #expect(identity.resumption.ticket == nil, "a refused ticket is forgotten")

        // An expired ticket is not presented, and is forgotten; a reset forgets the held one.
        identity.resumption.keep(LinkTicket(ticket: Data([1]), secret: Data([2]), expires: 1))
        (channel, _) = try client(identity: identity)
        try channel.writeInbound(frame(.challenge(nonce: nonce)))
        guard case .hello = try #require(try sent(channel).first) else {
            Issue.record("expected a hello for an expired ticket")
            return
        }
        #expect(identity.resumption.ticket == nil)
        identity.resumption.keep(ticket)
        try channel.writeInbound(frame(.reset(request: nil, generation: 2)))
        #expect(identity.resumption.ticket == nil)
    }

    @Test func notificationsOfOneReadAreHandedOverTogetherAndAcknowledgedInOneMessage() async throws {
        let (channel, events) = try client()
        var iterator = events.makeAsyncIterator()

        // One read: two notifications and a second copy of the first.
        // (EmbeddedChannel.writeInbound ends a read after each frame: fire the reads by hand.)
        let pipeline = channel.pipeline.syncOperations
        for message in [LinkMessage.push(push("a")), .push(push("b")), .push(push("a"))] {
            pipeline.fireChannelRead(NIOAny(frame(message)))
        }
        #expect(try sent(channel).isEmpty, "nothing is acknowledged before the read ends")
        pipeline.fireChannelReadComplete()
        #expect(await iterator.next() == .pushes([push("a"), push("b")]))
        // The copy is acknowledged (so the gateway stops sending it) but not handed over again.
        #expect(try sent(channel) == [.ack(["a", "b", "a"])])

        // A reset within a read comes after the notifications read before it.
        pipeline.fireChannelRead(NIOAny(frame(.push(push("c")))))
        pipeline.fireChannelRead(NIOAny(frame(.reset(request: nil, generation: 2))))
        pipeline.fireChannelRead(NIOAny(frame(.push(push("d")))))
        pipeline.fireChannelReadComplete()
        #expect(await iterator.next() == .pushes([push("c")]))
        #expect(await iterator.next() == .reset(generation: 2))
        #expect(await iterator.next() == .pushes([push("d")]))
        #expect(try sent(channel) == [.ack(["c", "d"])])

        // Notifications read when the link closes are still handed over before the close.
        pipeline.fireChannelRead(NIOAny(frame(.push(push("e")))))
        try await channel.close()
        #expect(await iterator.next() == .pushes([push("e")]))
        #expect(await iterator.next() == .closed(reason: nil))
    }

    /// A request that reaches the handler after the link closed fails at once: it would otherwise wait
    /// for an answer for ever (a device registering just as the gateway went down hung that way).
    @Test func aRequestAfterTheLinkClosedFailsAtOnce() async throws {
        let (channel, _) = try client()
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        let handler = try channel.pipeline.syncOperations.handler(type: LinkClientHandler.self)
        let open = channel.eventLoop.makePromise(of: LinkMessage.self)
        handler.request({ .register(request: $0, topic: "com.example.a", environment: .development) }, promise: open)
        try await channel.close()
        // A request in flight when the link closed fails with it...
        await #expect(throws: GatewayLinkClient.Failure.self) { try await open.futureResult.get() }
        // ...and so does one that arrives afterwards.
        let late = channel.eventLoop.makePromise(of: LinkMessage.self)
        handler.request({ .register(request: $0, topic: "com.example.a", environment: .development) }, promise: late)
        await #expect(throws: GatewayLinkClient.Failure.self) { try await late.futureResult.get() }
    }

    /// The duplicate check keeps a lowercase UUID as its 128 bits and any other identifier as text:
    /// two identifiers are the same exactly when their text is.
    @Test func duplicatesAreTheSameIdentifierText() async throws {
        let lower = "0190f3c2-7b1e-7cc0-8a1d-3f5e9b2c4d6a"
        #expect(SeenID(lower) == .uuid(0x0190_f3c2_7b1e_7cc0, 0x8a1d_3f5e_9b2c_4d6a))
        #expect(SeenID(lower.uppercased()) == .text(lower.uppercased()))
        #expect(SeenID("not-a-uuid") == .text("not-a-uuid"))
        #expect(SeenID(lower + "0") == .text(lower + "0"))
        #expect(SeenID("0190f3c2-7b1e-7cc0-8a1d-3f5e9b2c4d6b") != SeenID(lower))
        #expect(SeenID("1190f3c2-7b1e-7cc0-8a1d-3f5e9b2c4d6a") != SeenID(lower))

        let (channel, events) = try client()
        var iterator = events.makeAsyncIterator()
        let pipeline = channel.pipeline.syncOperations
        for id in [lower, "plain", lower, lower.uppercased(), "plain"] {
            pipeline.fireChannelRead(NIOAny(frame(.push(push(id)))))
        }
        pipeline.fireChannelReadComplete()
        #expect(await iterator.next() == .pushes([push(lower), push("plain"), push(lower.uppercased())]))
        #expect(try sent(channel) == [.ack([lower, "plain", lower, lower.uppercased(), "plain"])])
    }

    /// A second copy is dropped while its id is among the newest `seenLimit` seen, and still a
    /// generation later; after two generations (here 3 ids each) it is forgotten and handed over again.
    @Test func theDuplicateCheckRemembersTheNewestIdsByGenerations() async throws {
        let (channel, events) = try client(seenLimit: 3)
        var iterator = events.makeAsyncIterator()
        let pipeline = channel.pipeline.syncOperations
        let ids = ["a", "b", "c", "d", "e", "a", "f", "a", "d", "c"]
        for id in ids {
            pipeline.fireChannelRead(NIOAny(frame(.push(push(id)))))
        }
        pipeline.fireChannelReadComplete()
        // a, b, c fill the first generation; d, e, f the second, while a copy of a is still dropped;
        // then a, b and c are forgotten (a comes again and starts the third), and d is still known.
        #expect(await iterator.next() == .pushes(["a", "b", "c", "d", "e", "f", "a", "c"].map(push)))
        #expect(try sent(channel) == [.ack(ids)])
    }
}
