import HTTPTypes
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Synchronization
import Testing

@testable import HeraldRuntime

/// The admin and device APIs' bound on a request's body (``RequestDeadline``): a request must
/// arrive whole within the first-bytes deadline of its head, however often its body's bytes come,
/// while the time between requests is the idle deadline's.
@Suite struct RequestDeadlineTests {
    static func channel(log: ListenerLog) throws -> (EmbeddedChannel, EmbeddedEventLoop) {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandler(
            RequestDeadline(listener: "admin API", deadline: .seconds(10), log: log))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, loop)
    }

    static let head = HTTPRequestPart.head(
        HTTPRequest(method: .post, scheme: nil, authority: "x", path: "/console/session"))

    @Test func aBodySentAByteAtATimeIsClosedAtTheDeadlineOfItsHead() throws {
        let closed = Mutex<[String]>([])
        let log = ListenerLog(
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            onClose: { listener in closed.withLock { $0.append(listener) } })
        let (channel, loop) = try Self.channel(log: log)
        try channel.writeInbound(Self.head)
        for _ in 0..<9 {
            try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "x")))
            loop.advanceTime(by: .seconds(1))
        }
        loop.advanceTime(by: .milliseconds(999))
        #expect(channel.isActive)
        try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "x")))
        loop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
        #expect(closed.withLock { $0 } == ["admin API"])
    }

    @Test func aWholeRequestStopsTheDeadlineAndTheNextHeadStartsAnother() throws {
        let log = ListenerLog(logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let (channel, loop) = try Self.channel(log: log)
        try channel.writeInbound(Self.head)
        loop.advanceTime(by: .seconds(9))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        // Between requests only the idle deadline (Hummingbird's) counts.
        loop.advanceTime(by: .seconds(60))
        #expect(channel.isActive)
        try channel.writeInbound(Self.head)
        loop.advanceTime(by: .seconds(10))
        #expect(!channel.isActive)
        // Every part went on to the handlers after it.
        var parts = 0
        while try channel.readInbound(as: HTTPRequestPart.self) != nil { parts += 1 }
        #expect(parts == 3)
    }
}
