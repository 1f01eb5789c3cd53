import Logging
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import HeraldRuntime

/// Records the bytes that reach the end of the pipeline.
final class Sink: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    var received: [String] = []
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received.append(String(buffer: unwrapInboundIn(data)))
    }
}

/// Sends ``ConnectionEstablished`` toward the socket when told to.
final class Establisher: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.triggerUserOutboundEvent(ConnectionEstablished(), promise: nil)
        context.fireChannelRead(data)
    }
}

struct FirstBytesDeadlineTests {
    let log = ListenerLog(logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))

    func channel(_ handlers: [any ChannelHandler]) throws -> (EmbeddedChannel, EmbeddedEventLoop) {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandlers(handlers)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, loop)
    }

    @Test func aSilentConnectionIsClosedAtTheDeadlineAndNotBefore() throws {
        let (channel, loop) = try channel([FirstBytesDeadline(listener: "test", deadline: .seconds(10), log: log)])
        loop.advanceTime(by: .milliseconds(9_999))
        #expect(channel.isActive)
        loop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
    }

    @Test func aHalfSentRequestDoesNotMoveTheDeadline() throws {
        let (channel, loop) = try channel([FirstBytesDeadline(listener: "test", deadline: .seconds(10), log: log)])
        for _ in 0..<9 {
            try channel.writeInbound(ByteBuffer(string: "P"))
            loop.advanceTime(by: .seconds(1))
        }
        #expect(channel.isActive)
        loop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive)
    }

    @Test func anEstablishedConnectionOutlivesTheDeadlineAndTheWatchLeaves() throws {
        let sink = Sink()
        let (channel, loop) = try channel([
            FirstBytesDeadline(listener: "test", deadline: .seconds(10), log: log), Establisher(), sink,
        ])
        try channel.writeInbound(ByteBuffer(string: "hello"))
        loop.advanceTime(by: .hours(2))
        #expect(channel.isActive)
        #expect(sink.received == ["hello"])
        #expect(throws: (any Error).self) { try channel.pipeline.syncOperations.handler(type: FirstBytesDeadline.self) }
        _ = try channel.finish()
    }

    @Test func theLogNamesTheListenerAndWhatWasReceived() throws {
        let lines = LogLines()
        let log = ListenerLog(logger: Logger(label: "test", factory: { _ in CapturingLogHandler(lines) }))
        let (channel, loop) = try channel([
            FirstBytesDeadline(listener: "provider API", deadline: .seconds(10), log: log)
        ])
        try channel.writeInbound(ByteBuffer(string: "PRI * HTTP/2.0\r\n"))
        loop.advanceTime(by: .seconds(10))
        #expect(!channel.isActive)
        #expect(
            lines.all == [
                "connection closed listener=provider API peer=[IPv4]127.0.0.1:1 reason=sent 16 bytes but no complete request within 10 s of connecting (first-bytes deadline)"
            ])
    }
}

/// Connections of one listener on one loop share a queue of deadlines (``FirstBytesDeadlines``).
struct FirstBytesDeadlinesTests {
    let log = ListenerLog(logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))

    func connect(
        _ loop: EmbeddedEventLoop, _ deadlines: FirstBytesDeadlines, establishes: Bool = false
    ) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(loop: loop)
        var handlers: [any ChannelHandler] = [FirstBytesDeadline(listener: "test", deadlines: deadlines, log: log)]
        if establishes { handlers.append(Establisher()) }
        try channel.pipeline.syncOperations.addHandlers(handlers)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return channel
    }

    @Test func eachSilentConnectionClosesAtItsOwnDeadlineAndTheOthersStay() throws {
        let loop = EmbeddedEventLoop()
        let deadlines = FirstBytesDeadlines(deadline: .seconds(10))
        // Accepted one second apart: silent, answering, silent, answering, silent.
        var channels: [EmbeddedChannel] = []
        for index in 0..<5 {
            let channel = try connect(loop, deadlines, establishes: index % 2 == 1)
            if index % 2 == 1 { try channel.writeInbound(ByteBuffer(string: "GET / HTTP/1.1\r\n\r\n")) }
            channels.append(channel)
            loop.advanceTime(by: .seconds(1))
        }
        // Now 5 s after the first. Each silent one closes exactly 10 s after it was accepted.
        for silent in [0, 2, 4] {
            loop.advanceTime(to: NIODeadline.uptimeNanoseconds(0) + .seconds(Int64(10 + silent)) - .milliseconds(1))
            #expect(channels[silent].isActive)
            loop.advanceTime(by: .milliseconds(1))
            #expect(!channels[silent].isActive, "connection \(silent)")
        }
        #expect(channels[1].isActive && channels[3].isActive)
        #expect(deadlines.queue(on: loop).entries.isEmpty)
        loop.advanceTime(by: .hours(1))
        #expect(channels[1].isActive && channels[3].isActive)
        for index in [1, 3] { _ = try channels[index].finish() }
    }

    @Test func answeredConnectionsLeaveTheQueueOnceMostOfItIsDone() throws {
        let loop = EmbeddedEventLoop()
        let deadlines = FirstBytesDeadlines(deadline: .seconds(10))
        let first = try connect(loop, deadlines)
        var answered: [EmbeddedChannel] = []
        for _ in 0..<3000 {
            let channel = try connect(loop, deadlines, establishes: true)
            try channel.writeInbound(ByteBuffer(string: "x"))
            answered.append(channel)
        }
        loop.advanceTime(by: .seconds(1))
        let last = try connect(loop, deadlines)
        // The silent first one holds the head, yet the answered ones behind it are gone.
        let queue = deadlines.queue(on: loop)
        #expect(queue.entries.count < 1000, "at most a third of the answered ones are left")
        #expect(queue.entries.first?.watch.watching == true)
        loop.advanceTime(by: .seconds(9))
        #expect(!first.isActive)
        #expect(last.isActive)
        loop.advanceTime(by: .seconds(1))
        #expect(!last.isActive)
        #expect(answered.allSatisfy { $0.isActive })
        #expect(queue.entries.isEmpty)
        for channel in answered { _ = try channel.finish() }
    }

    @Test func aConnectionClosedBeforeItsDeadlineIsNotLoggedAsTimedOut() throws {
        let lines = LogLines()
        let log = ListenerLog(logger: Logger(label: "test", factory: { _ in CapturingLogHandler(lines) }))
        let loop = EmbeddedEventLoop()
        let deadlines = FirstBytesDeadlines(deadline: .seconds(10))
        let channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandler(
            FirstBytesDeadline(listener: "test", deadlines: deadlines, log: log))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        let silent = try connect(loop, deadlines)
        try channel.close().wait()
        loop.advanceTime(by: .seconds(10))
        #expect(!silent.isActive)
        #expect(lines.all.isEmpty)
    }
}

struct ProtocolSnifferTests {
    let log = ListenerLog(logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))

    final class Chosen: Sendable { let value = Mutex<String?>(nil) }

    func channel(http1: Bool = true, http2: Bool = true) throws -> (EmbeddedChannel, Chosen, Sink) {
        let chosen = Chosen()
        let sink = Sink()
        let channel = EmbeddedChannel()
        let sniffer = ProtocolSniffer(
            listener: "test", log: log,
            http1: http1
                ? { sync in
                    chosen.value.withLock { $0 = "http1" }; try sync.addHandler(sink)
                } : nil,
            http2: http2
                ? { sync in
                    chosen.value.withLock { $0 = "http2" }; try sync.addHandler(sink)
                } : nil)
        try channel.pipeline.syncOperations.addHandler(sniffer)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, chosen, sink)
    }

    @Test func aPrefaceInPiecesGoesToHTTP2WithEveryByteReplayed() throws {
        let (channel, chosen, sink) = try channel()
        let preface = String(decoding: FirstBytes.http2Preface, as: UTF8.self)
        try channel.writeInbound(ByteBuffer(string: String(preface.prefix(10))))
        #expect(chosen.value.withLock { $0 } == nil)
        try channel.writeInbound(ByteBuffer(string: String(preface.dropFirst(10)) + "SETTINGS"))
        #expect(chosen.value.withLock { $0 } == "http2")
        #expect(sink.received == [preface + "SETTINGS"])
        #expect(throws: (any Error).self) { try channel.pipeline.syncOperations.handler(type: ProtocolSniffer.self) }
        try channel.writeInbound(ByteBuffer(string: "more"))
        #expect(sink.received.last == "more")
    }

    @Test func aRequestLineGoesToHTTP1() throws {
        let (channel, chosen, sink) = try channel()
        try channel.writeInbound(ByteBuffer(string: "GET /healthz HTTP/1.1\r\nhost: a\r\n\r\n"))
        #expect(chosen.value.withLock { $0 } == "http1")
        #expect(sink.received == ["GET /healthz HTTP/1.1\r\nhost: a\r\n\r\n"])
    }

    @Test func garbageIsClosedWithoutAnAnswer() throws {
        let (channel, chosen, _) = try channel()
        try channel.writeInbound(ByteBuffer(bytes: [0x00, 0xFF, 0x13]))
        #expect(!channel.isActive)
        #expect(chosen.value.withLock { $0 } == nil)
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
    }

    @Test func aReadableLineThatIsNoRequestGetsA400ThenTheClose() throws {
        let (channel, _, _) = try channel()
        try channel.writeInbound(ByteBuffer(string: "HELLO THERE\r\n"))
        let answer = try #require(try channel.readOutbound(as: ByteBuffer.self))
        let text = String(buffer: answer)
        #expect(text.hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
        #expect(text.hasSuffix("\r\n\r\nnot an HTTP/1.x request line: \"HELLO THERE\"\n"))
        #expect(text.contains("connection: close\r\n"))
        #expect(!channel.isActive)
    }

    @Test func aListenerWithoutHTTP2RefusesThePreface() throws {
        let (channel, chosen, _) = try channel(http2: false)
        try channel.writeInbound(ByteBuffer(bytes: FirstBytes.http2Preface))
        #expect(!channel.isActive)
        #expect(chosen.value.withLock { $0 } == nil)
    }
}

/// Log lines kept by ``CapturingLogHandler``.
final class LogLines: Sendable {
    let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }
}

/// A log handler that keeps each line as `message key=value …` (keys sorted).
struct CapturingLogHandler: LogHandler {
    let lines: LogLines
    init(_ lines: LogLines) { self.lines = lines }
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        let fields = (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        lines.lines.withLock { $0.append(([event.message.description] + fields).joined(separator: " ")) }
    }
}
