import Foundation
import Hummingbird
import NIOCore
import Synchronization
import Testing

@testable import HeraldDevice

/// The web device's event stream (`GET /events`): what it writes, and that a page that has gone
/// leaves nothing behind in the feed.
struct WebEventStreamTests {
    /// A response body that records what was written and fails from the `failing`-th write on, as
    /// a connection whose page has closed does.
    struct RecordingWriter: ResponseBodyWriter {
        struct Closed: Error {}
        let box: Box
        let failing: Int

        mutating func write(_ buffer: ByteBuffer) async throws {
            let count = box.written.withLock { $0.count }
            if count + 1 >= failing { throw Closed() }
            box.written.withLock { $0.append(String(buffer: buffer)) }
        }

        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
            box.written.withLock { $0.append("<finished>") }
        }
    }

    final class Box: Sendable { let written = Mutex<[String]>([]) }

    @Test func eachEntryIsOneEventAndAClosedPageLeavesTheFeed() async throws {
        let feed = DeviceFeed()
        let box = Box()
        let entries = feed.listen()
        #expect(feed.listenerCount == 1)
        let entry = DeviceLogEntry(
            date: Date(timeIntervalSince1970: 1_795_500_000), app: "dev.herald.tea", kind: .badge, text: "badge 3")
        let stream = Task {
            var writer = RecordingWriter(box: box, failing: 3)
            try await DeviceAPI.stream(entries, to: &writer)
        }
        // The opening comment, then the first entry as one `data:` event; the second write fails.
        feed.show(entry)
        feed.show(entry)
        await #expect(throws: RecordingWriter.Closed.self) { try await stream.value }
        let written = box.written.withLock { $0 }
        #expect(written.count == 2)
        #expect(written.first == ": herald device\n\n")
        let event = try #require(written.last)
        #expect(event.hasPrefix("data: {") && event.hasSuffix("}\n\n"))
        let decoded = try JSONDecoder.appLink.decode(
            DeviceLogEntry.self, from: Data(event.dropFirst("data: ".count).dropLast(2).utf8))
        #expect(decoded == entry)
        // The handler has ended, and the feed no longer holds its listener.
        #expect(feed.listenerCount == 0)
    }
}
