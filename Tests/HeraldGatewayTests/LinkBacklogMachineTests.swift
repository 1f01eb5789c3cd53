import Foundation
import HeraldCore
import NIOCore
import Testing

@testable import HeraldGateway

/// The link's side of `LinkBacklogRaceTests`, as values: stored pushes offered before the backlog
/// is read wait for it and go in the order they were accepted, once; a push the link has, or has
/// just had acknowledged, is not sent again; a push whose app was removed is discarded.
@Suite struct LinkBacklogMachineTests {
    typealias Link = LinkMachineDriver

    /// A link whose device is authenticated and whose backlog read is still out.
    func reading() -> Link {
        var link = Link()
        link.receive(.hello(device: Link.device, publicKey: nil, signature: Data([1])))
        link.authenticate()
        _ = link.take()
        return link
    }

    @Test func aCommitThatLandsBeforeTheBacklogIsReadWaitsAndGoesInOrderOnce() {
        var link = reading()
        let a = Link.stored("a", receivedAt: 1)
        let b = Link.stored("b", receivedAt: 2)
        let c = Link.stored("c", receivedAt: 3)
        link.record(link.machine.offerStored([c], now: link.now, at: link.at, isRegistered: { _ in true }))
        #expect(link.take().isEmpty)
        // The read finds all three (the commit landed before it): each goes once, oldest first.
        link.record(link.machine.backlogRead([a, b, c], now: link.now, at: link.at, isRegistered: { _ in true }))
        #expect(link.written().map(\.apnsID) == ["a", "b", "c"])
    }

    @Test func aCommitThatLandsAfterTheBacklogWasReadIsSentAtOnceAndOnce() {
        var link = reading()
        link.record(link.machine.backlogRead([], now: link.now, at: link.at, isRegistered: { _ in true }))
        #expect(link.take().isEmpty)
        let pushed = Link.stored("late")
        link.record(link.machine.offerStored([pushed], now: link.now, at: link.at, isRegistered: { _ in true }))
        #expect(link.written().map(\.apnsID) == ["late"])
        // Offered again while it awaits its acknowledgement, and after it: not sent again.
        link.record(link.machine.offerStored([pushed], now: link.now, at: link.at, isRegistered: { _ in true }))
        #expect(link.written().isEmpty)
        link.acknowledge(["late"])
        #expect(
            link.take() == [
                .recordAcknowledged(
                    pushed.linkPush, device: Link.device, deliveredAt: Link.startDate, acknowledgedAt: Link.startDate)
            ])
        link.record(link.machine.offerStored([pushed], now: link.now, at: link.at, isRegistered: { _ in true }))
        #expect(link.written().isEmpty)
    }

    /// The link's side of `DeviceLinkTests.aStoredPushWhoseAppWasRemovedMeanwhileIsDiscardedNotDelivered`.
    @Test func aStoredPushWhoseRegistrationIsGoneIsDiscardedNotWritten() {
        var link = reading()
        let removed = Link.stored("removed", receivedAt: 1)
        let kept = Link.stored("kept", receivedAt: 2)
        link.record(
            link.machine.backlogRead(
                [removed, kept], now: link.now, at: link.at, isRegistered: { $0.apnsID != "removed" }))
        #expect(
            link.take() == [
                .discard([removed], device: Link.device, at: Link.startDate), .write(kept.linkPush), .flush,
            ])
    }

    @Test func anOfflineLinkIgnoresStoredPushes() {
        var link = Link()
        #expect(link.take() == [.send(.challenge(nonce: Link.nonce))])
        link.record(
            link.machine.offerStored([Link.stored("a")], now: link.now, at: link.at, isRegistered: { _ in true }))
        #expect(link.take().isEmpty)
    }
}
