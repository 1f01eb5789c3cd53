import Foundation
import HeraldCore
import NIOCore
import NIOWebSocket
import Synchronization
import Testing

@testable import HeraldGateway

/// A device that does not read what its link writes (docs/device-link.md, "A device that does not
/// read"): once the link is above its high-water mark, nothing more is written to it. Providers'
/// pushes go to the store, stored ones stay there, broadcasts are not sent; once the device has
/// read the link down below its low-water mark, the store is read again.
@Suite struct LinkBackPressureMachineTests {
    typealias Link = LinkMachineDriver

    /// A link that has written "sent" and then backed up.
    static func backedUp() -> Link {
        var link = Link.online()
        link.offer(Link.push("sent"))
        #expect(link.written().map(\.apnsID) == ["sent"])
        link.record(link.machine.writabilityChanged(isWritable: false, now: link.now, at: link.at))
        #expect(link.take() == [.logBackedUp(device: Link.device)])
        return link
    }

    @Test func aBackedUpLinkWritesNothingMoreAndSendsProvidersPushesToTheStore() {
        var link = Self.backedUp()
        link.offer(Link.push("urgent"))
        link.offer(Link.push("normal", priority: .normal))
        link.offer(Link.push("once"), expiresIn: nil)
        // None is written, none waits in the QoS (no wake-up): the router stores the two with an
        // expiry and discards the one with expiration 0, its one attempt made.
        #expect(link.take() == [Link.answer(2, .backedUp), Link.answer(3, .backedUp), Link.answer(4, .backedUp)])
        #expect(link.wake == nil)
        // Their commits land: they stay in the store, and nothing is read until the link catches up.
        link.record(
            link.machine.offerStored(
                [Link.stored("urgent"), Link.stored("normal")], now: link.now, at: link.at, isRegistered: { _ in true })
        )
        #expect(link.take().isEmpty)
        // The push written before is still awaited: its acknowledgement is read once the device reads.
        link.record(link.machine.writabilityChanged(isWritable: true, now: link.now, at: link.at))
        #expect(
            link.take() == [
                .logCaughtUp(device: Link.device, leftToStore: 3, broadcastsNotSent: 0),
                .readBacklog(device: Link.device),
            ])
        // The store's answer goes down as any backlog does, less what the link already has: "sent"
        // (stored, say, as its acknowledgement deadline passed) is still awaited.
        link.record(
            link.machine.backlogRead(
                [Link.stored("sent"), Link.stored("urgent"), Link.stored("normal", priority: .normal)], now: link.now,
                at: link.at, isRegistered: { _ in true }))
        #expect(link.written().map(\.apnsID) == ["urgent", "normal"])
        link.acknowledge(["sent"])
        #expect(
            Link.answers(link.take()).map(\.outcome) == [
                .acknowledged(deliveredAt: Link.startDate, acknowledgedAt: link.at)
            ]
        )
    }

    @Test func aQoSWakeUpWhileBackedUpIsMadeOnceTheLinkCatchesUp() {
        var link = Link.online(qos: .init(batchWindow: .seconds(1)))
        link.offer(Link.push("batched", priority: .normal))
        #expect(link.take() == [Link.answer(1, .hold), .scheduleWake(at: Link.start + .seconds(1))])
        link.record(link.machine.writabilityChanged(isWritable: false, now: link.now, at: link.at))
        _ = link.take()
        // The batch's window closes while the link is backed up: nothing is written, and the QoS
        // keeps the push (it is stored) rather than release it into a link that would not send it.
        link.advance(by: .seconds(1))
        #expect(link.take().isEmpty)
        link.advance(by: .milliseconds(500))
        link.record(link.machine.writabilityChanged(isWritable: true, now: link.now, at: link.at))
        // Nothing was left in the store: the wake-up it let pass is made, and no read.
        #expect(
            link.take() == [
                .logCaughtUp(device: Link.device, leftToStore: 0, broadcastsNotSent: 0),
                .write(Link.push("batched", priority: .normal)),
                .flush,
            ])
    }

    /// A background push's slot in the budget is not spent on a link that would not send it.
    @Test func aBacklogReadWhileBackedUpSpendsNoBackgroundSlot() {
        var link = Link.online(qos: .init(batchWindow: .seconds(1), backgroundBudget: 1))
        link.record(link.machine.writabilityChanged(isWritable: false, now: link.now, at: link.at))
        _ = link.take()
        var background = Link.stored("quiet")
        background.pushType = .background
        link.record(link.machine.backlogRead([background], now: link.now, at: link.at, isRegistered: { _ in true }))
        #expect(link.take().isEmpty)
        link.record(link.machine.writabilityChanged(isWritable: true, now: link.now, at: link.at))
        #expect(link.take().last == .readBacklog(device: Link.device))
        link.record(link.machine.backlogRead([background], now: link.now, at: link.at, isRegistered: { _ in true }))
        #expect(link.written().map(\.apnsID) == ["quiet"])
    }

    /// Pushes stored while the read after catching up runs wait for it, as at connect: older ones
    /// first.
    @Test func pushesStoredDuringTheReadAgainGoAfterTheOlderOnesItFinds() {
        var link = Self.backedUp()
        link.record(
            link.machine.offerStored([Link.stored("old")], now: link.now, at: link.at, isRegistered: { _ in true }))
        link.record(link.machine.writabilityChanged(isWritable: true, now: link.now, at: link.at))
        #expect(link.take().last == .readBacklog(device: Link.device))
        link.record(
            link.machine.offerStored(
                [Link.stored("new", receivedAt: 2)], now: link.now, at: link.at, isRegistered: { _ in true }))
        #expect(link.written().isEmpty)
        link.record(
            link.machine.backlogRead(
                [Link.stored("old", receivedAt: 1)], now: link.now, at: link.at, isRegistered: { _ in true }))
        #expect(link.written().map(\.apnsID) == ["old", "new"])
    }

    @Test func aLinkThatLeftNothingInTheStoreDoesNotReadItAgain() {
        var link = Self.backedUp()
        // Backed up twice over (writability reports once per change, but a second report is harmless).
        link.record(link.machine.writabilityChanged(isWritable: false, now: link.now, at: link.at))
        #expect(link.take().isEmpty)
        link.record(link.machine.writabilityChanged(isWritable: true, now: link.now, at: link.at))
        #expect(link.take() == [.logCaughtUp(device: Link.device, leftToStore: 0, broadcastsNotSent: 0)])
        // Caught up, it writes again.
        link.offer(Link.push("after"))
        #expect(link.written().map(\.apnsID) == ["after"])
        // A link that is not backed up ignores a report that it can write.
        link.record(link.machine.writabilityChanged(isWritable: true, now: link.now, at: link.at))
        #expect(link.take().isEmpty)
    }

    @Test func broadcastsAreNotSentWhileBackedUpAndAreCounted() {
        var link = Self.backedUp()
        var frame = ByteBuffer()
        frame.writeString(#"{"type":"broadcast"}"#)
        link.record(link.machine.broadcastFrame(frame))
        link.record(link.machine.broadcastFrame(frame))
        #expect(link.take().isEmpty)
        link.record(link.machine.writabilityChanged(isWritable: true, now: link.now, at: link.at))
        #expect(link.take() == [.logCaughtUp(device: Link.device, leftToStore: 0, broadcastsNotSent: 2)])
        link.record(link.machine.broadcastFrame(frame))
        #expect(link.take() == [.writeFrame(frame), .flush])
    }

    @Test func aLinkWithNoDeviceYetIgnoresItsWritability() {
        var link = Link()
        _ = link.take()  // the challenge
        link.record(link.machine.writabilityChanged(isWritable: false, now: link.now, at: link.at))
        #expect(link.take().isEmpty)
        #expect(!link.machine.backedUp)
    }

    @Test func whenABackedUpLinkClosesTheWrittenPushIsNotAcknowledgedAndNothingElseIsOwed() {
        var link = Self.backedUp()
        link.offer(Link.push("later"))
        #expect(link.answered() == [Link.answer(2, .backedUp)])
        link.record(link.machine.closed(at: link.at))
        // Only the push written before the link backed up waits for an answer.
        #expect(Link.answers(link.take()).map(\.ticket) == [1])
    }
}

/// The same through the real ``DeviceLinkHandler`` on a testing channel, with the provider API's
/// logic, the router, the group committer and the SQLite store behind it: the channel's
/// writability is what NIO reports as a link's unsent bytes cross its water marks.
@Suite struct LinkBackPressureEndToEndTests {
    static func id(_ n: Int) -> String { "44444444-4444-4444-4444-00000000000\(n)" }

    /// Makes the channel unwritable or writable, and tells its pipeline, as NIO does.
    static func writable(_ writable: Bool, _ link: VirtualLink) async throws {
        let channel = link.channel
        try await channel.testingEventLoop.executeInContext {
            channel.isWritable = writable
            channel.pipeline.fireChannelWritabilityChanged()
        }
    }

    /// Sends a push to the backed-up link and waits for its answer, or fails if the link writes
    /// it: its answer would then wait for an acknowledgement that never comes. (It polls because
    /// either may come first, from the store's thread or the link's loop.)
    static func pushNotWritten(_ id: String, _ link: VirtualLink, headers: [(String, String)] = []) async throws
        -> ProviderResponse
    {
        let answer = Mutex<ProviderResponse?>(nil)
        let push = link.push(headers: [("apns-id", id)] + headers)
        let waiter = Task {
            let response = try await push.value
            answer.withLock { $0 = response }
        }
        var written: WebSocketFrame?
        try await waitUntil("the answer to \(id), or its frame on the link") {
            if answer.withLock({ $0 }) != nil { return true }
            written = try await link.channel.readOutbound(as: WebSocketFrame.self)
            return written != nil
        }
        if written != nil {
            waiter.cancel()
            throw TestFailure("\(id) was written to a backed-up link")
        }
        return try #require(answer.withLock { $0 })
    }

    @Test func aBackedUpLinkLeavesPushesInTheStoreAndSendsTheNewestOnceCaughtUp() async throws {
        let link = try await VirtualLink()
        let first = link.push(headers: [("apns-id", Self.id(1))])
        #expect(try await link.written(1).map(\.apnsID) == [Self.id(1)])
        try await Self.writable(false, link)

        // Answered 200 once stored, never written: the second is replaced by the third (APNs keeps
        // one push per app for a device it cannot reach).
        #expect(try await Self.pushNotWritten(Self.id(2), link).status == 200)
        #expect(try await Self.pushNotWritten(Self.id(3), link).status == 200)
        #expect(try await link.storedCount() == 1)
        let stored = try await link.f.store.deliveryLog(id: Self.id(3)).first { $0.kind == .stored }
        #expect(stored?.detail?.contains("the device's link is backed up") == true)
        #expect(try await link.f.store.deliveryLog(id: Self.id(2)).map(\.kind).last == .replaced)
        // One with expiration 0 had its one attempt: discarded, and the log says why.
        #expect(try await Self.pushNotWritten(Self.id(4), link, headers: [("apns-expiration", "0")]).status == 200)
        let discarded = try await link.f.store.deliveryLog(id: Self.id(4))
        #expect(discarded.map(\.kind) == [.accepted, .discarded])
        #expect(discarded.last?.detail == "expiration 0 or past and the device's link is backed up")
        #expect(try await link.storedCount() == 1)

        // The device reads again: the first push's acknowledgement comes, the store is read again,
        // and the third push goes down.
        try await Self.writable(true, link)
        try await link.acknowledge([Self.id(1)])
        #expect(try await first.value.status == 200)
        #expect(try await link.written(1).map(\.apnsID) == [Self.id(3)])
        try await link.acknowledge([Self.id(3)])
        try await link.settled()
        #expect(try await link.storedCount() == 0)
    }
}
