import HeraldNIO
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

/// Records the writes and closes that reach it.
final class OutboundRecorder: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
    var events: [String] = []
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        events.append("write " + String(buffer: unwrapOutboundIn(data)))
        context.write(data, promise: promise)
    }
    func flush(context: ChannelHandlerContext) {
        events.append("flush")
        context.flush()
    }
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        events.append("close")
        context.close(mode: mode, promise: promise)
    }
}

/// ``WriteCoalescingHandler`` on its own: what it gathers, when it passes it on.
@Suite struct WriteCoalescingHandlerTests {
    func channel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(WriteCoalescingHandler())
        return channel
    }

    func outbound(_ channel: EmbeddedChannel) throws -> [String] {
        var out: [String] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { out.append(String(buffer: buffer)) }
        return out
    }

    @Test func writesBetweenFlushesLeaveAsOneBufferAndTheirPromisesComplete() throws {
        let channel = try channel()
        let promises = (0..<3).map { _ in channel.eventLoop.makePromise(of: Void.self) }
        let done = Mutex([Bool](repeating: false, count: 3))
        for (i, p) in promises.enumerated() { p.futureResult.whenSuccess { done.withLock { $0[i] = true } } }
        channel.write(ByteBuffer(string: "a"), promise: promises[0])
        channel.write(ByteBuffer(string: "bc"), promise: nil)
        channel.write(ByteBuffer(string: "def"), promise: promises[1])
        channel.write(ByteBuffer(), promise: promises[2])
        // Nothing leaves before the flush.
        #expect(try outbound(channel) == [])
        #expect(done.withLock { $0 } == [false, false, false])
        channel.flush()
        #expect(try outbound(channel) == ["abcdef"])
        #expect(done.withLock { $0 } == [true, true, true])
    }

    @Test func eachFlushLeavesItsOwnBuffer() throws {
        let channel = try channel()
        channel.writeAndFlush(ByteBuffer(string: "first"), promise: nil)
        // The first buffer is still held below (unread) when the next writes are gathered.
        channel.writeAndFlush(ByteBuffer(string: "second"), promise: nil)
        channel.writeAndFlush(ByteBuffer(string: "third"), promise: nil)
        #expect(try outbound(channel) == ["first", "second", "third"])
        channel.writeAndFlush(ByteBuffer(string: "fourth"), promise: nil)
        #expect(try outbound(channel) == ["fourth"])
    }

    @Test func gatheringStopsAtOneRecordsWorthAndBigBuffersPassThrough() throws {
        let channel = try channel()
        let tenK = String(repeating: "a", count: 10 * 1024)
        let big = String(repeating: "b", count: WriteCoalescingHandler.limit + 1)
        channel.write(ByteBuffer(string: tenK), promise: nil)
        channel.write(ByteBuffer(string: "c"), promise: nil)
        // This one would take the gathered bytes past 16 KiB: what was gathered goes on first.
        channel.write(ByteBuffer(string: tenK), promise: nil)
        channel.write(ByteBuffer(string: big), promise: nil)
        channel.write(ByteBuffer(string: "d"), promise: nil)
        channel.flush()
        #expect(try outbound(channel) == [tenK + "c", tenK, big, "d"])
    }

    @Test func whatIsGatheredGoesOnBeforeAClose() throws {
        let channel = EmbeddedChannel()
        let below = OutboundRecorder()
        try channel.pipeline.syncOperations.addHandler(below)
        try channel.pipeline.syncOperations.addHandler(WriteCoalescingHandler())
        channel.write(ByteBuffer(string: "un"), promise: nil)
        channel.write(ByteBuffer(string: "flushed"), promise: nil)
        _ = try? channel.close().wait()
        #expect(below.events == ["write unflushed", "close"])
    }

    // MARK: One flush per turn of the loop (HTTP/2 connections: the provider client and the provider API)

    func recorded(flushOncePerLoopTurn: Bool) throws -> (EmbeddedChannel, OutboundRecorder) {
        let channel = EmbeddedChannel()
        let below = OutboundRecorder()
        try channel.pipeline.syncOperations.addHandler(below)
        try channel.pipeline.syncOperations.addHandler(
            WriteCoalescingHandler(flushOncePerLoopTurn: flushOncePerLoopTurn))
        return (channel, below)
    }

    @Test func flushesOfOneTurnLeaveAsOneBufferAndOneFlushWhenTheTurnIsOver() throws {
        let (channel, below) = try recorded(flushOncePerLoopTurn: true)
        channel.writeAndFlush(ByteBuffer(string: "first"), promise: nil)
        channel.writeAndFlush(ByteBuffer(string: "second"), promise: nil)
        channel.write(ByteBuffer(string: "third"), promise: nil)
        channel.flush()
        // Still this turn: nothing has gone below.
        #expect(below.events == [])
        channel.embeddedEventLoop.run()
        #expect(below.events == ["write firstsecondthird", "flush"])
        #expect(try outbound(channel) == ["firstsecondthird"])
        // The next turn's flush is one of its own.
        channel.writeAndFlush(ByteBuffer(string: "fourth"), promise: nil)
        channel.embeddedEventLoop.run()
        #expect(below.events == ["write firstsecondthird", "flush", "write fourth", "flush"])
        // Without the option, every flush goes below at once.
        let (plain, plainBelow) = try recorded(flushOncePerLoopTurn: false)
        plain.writeAndFlush(ByteBuffer(string: "a"), promise: nil)
        plain.writeAndFlush(ByteBuffer(string: "b"), promise: nil)
        #expect(plainBelow.events == ["write a", "flush", "write b", "flush"])
    }

    /// A turn that writes a lot does not hold it all to the turn's end: a flush that finds
    /// `earlyFlush` bytes unflushed sends them at once, so the peer can start on them.
    @Test func aTurnThatWritesALotFlushesEachEarlyFlushsWorthAtOnce() throws {
        let (channel, below) = try recorded(flushOncePerLoopTurn: true)
        let request = String(repeating: "r", count: 1000)
        let early = WriteCoalescingHandler.earlyFlush / 1000 + 1  // the flush that reaches it
        for _ in 0..<(early - 1) { channel.writeAndFlush(ByteBuffer(string: request), promise: nil) }
        #expect(below.events == [])
        channel.writeAndFlush(ByteBuffer(string: request), promise: nil)
        let first = String(repeating: request, count: early)
        #expect(below.events == ["write " + first, "flush"])
        // The turn goes on gathering; the rest waits for its end.
        channel.writeAndFlush(ByteBuffer(string: "tail"), promise: nil)
        #expect(below.events == ["write " + first, "flush"])
        channel.embeddedEventLoop.run()
        #expect(below.events == ["write " + first, "flush", "write tail", "flush"])
        #expect(try outbound(channel) == [first, "tail"])

        // Bytes passed on at a record's limit count too: with them, a small flush goes at once.
        let (other, otherBelow) = try recorded(flushOncePerLoopTurn: true)
        let big = String(repeating: "b", count: WriteCoalescingHandler.limit - 10)
        other.write(ByteBuffer(string: big), promise: nil)
        other.write(ByteBuffer(string: String(repeating: "c", count: 20)), promise: nil)
        #expect(otherBelow.events == ["write " + big])
        other.flush()
        #expect(otherBelow.events == ["write " + big, "write " + String(repeating: "c", count: 20), "flush"])
    }

    @Test func aFlushStillToComeIsDoneBeforeACloseOrTheHandlersRemoval() throws {
        let (channel, below) = try recorded(flushOncePerLoopTurn: true)
        channel.writeAndFlush(ByteBuffer(string: "last words"), promise: nil)
        _ = try? channel.close().wait()
        #expect(below.events == ["write last words", "flush", "close"])
        // The turn's task finds nothing left to do.
        channel.embeddedEventLoop.run()
        #expect(below.events == ["write last words", "flush", "close"])

        let (other, otherBelow) = try recorded(flushOncePerLoopTurn: true)
        other.writeAndFlush(ByteBuffer(string: "before removal"), promise: nil)
        let coalescer = try other.pipeline.syncOperations.handler(type: WriteCoalescingHandler.self)
        try other.pipeline.syncOperations.removeHandler(coalescer).wait()
        #expect(otherBelow.events == ["write before removal", "flush"])
        other.embeddedEventLoop.run()
        #expect(otherBelow.events == ["write before removal", "flush"])
    }
}
