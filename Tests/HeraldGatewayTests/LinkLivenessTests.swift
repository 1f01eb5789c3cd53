import Foundation
import NIOCore
import NIOWebSocket
import Testing

@testable import HeraldGateway

/// The device link's idle deadline: an authenticated link quiet for half of it gets a ping, quiet
/// for all of it is closed; anything from the device (a pong) counts. Value tests of the link's
/// state machine: time moves when the test moves it.
@Suite struct LinkLivenessTests {
    @Test func aQuietDeviceIsPingedAtHalfTheDeadlineAndClosedAtAllOfIt() {
        var link = LinkMachineDriver.online(idleTimeout: .seconds(600))
        link.advance(by: .seconds(299))
        #expect(link.outbound().isEmpty)
        link.advance(by: .seconds(1))
        #expect(link.outbound() == [.ping])
        // No answer: closed (going away) at ten minutes, not before, and pinged only once.
        link.advance(by: .seconds(299))
        #expect(link.outbound().isEmpty)
        #expect(link.isOpen)
        link.advance(by: .seconds(1))
        let closing = link.actions
        #expect(link.outbound() == [.connectionClose])
        #expect(!link.isOpen)
        // Why, in the listener's log, and the code: 1001, going away.
        #expect(
            closing.prefix(2) == [
                .logClosed(reason: "device phone sent nothing, not even a pong, for 600 s (idle deadline)"),
                .close(code: 1001),
            ])
    }

    @Test func aPongKeepsTheLinkAndTheCountStartsAgain() {
        var link = LinkMachineDriver.online(idleTimeout: .seconds(600))
        link.advance(by: .seconds(300))
        #expect(link.outbound() == [.ping])
        link.advance(by: .seconds(100))
        link.receive(WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: ByteBuffer()))
        // Quiet since 400 s: the next ping comes at 700 s, the close at 1000 s.
        link.advance(by: .seconds(299))
        #expect(link.outbound().isEmpty)
        link.advance(by: .seconds(1))
        #expect(link.outbound() == [.ping])
        link.advance(by: .seconds(299))
        #expect(link.isOpen)
        link.advance(by: .seconds(1))
        #expect(!link.isOpen)
    }

    @Test func withoutADeadlineALinkIsNeverPinged() {
        var link = LinkMachineDriver.online(idleTimeout: nil)
        link.advance(by: .hours(48))
        #expect(link.outbound().isEmpty)
        #expect(link.isOpen)
    }
}
