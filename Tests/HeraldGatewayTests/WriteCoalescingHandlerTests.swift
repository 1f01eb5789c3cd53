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
}
