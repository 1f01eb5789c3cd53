import Foundation
import HeraldCore
import NIOCore
import NIOHPACK
import NIOHTTP2
import Testing

@testable import HeraldGateway

/// Write coalescing in the provider API's HTTP/2 pipeline (``WriteCoalescingHandler`` on its own is
/// tested in HeraldRuntimeTests).
@Suite struct WriteCoalescingTests {
    /// A batch of answers read in one go goes back to the provider as one buffer: one TLS record,
    /// not one per HTTP/2 frame.
    @Test func answersToOneReadLeaveTheHTTP2PipelineAsOneBuffer() async throws {
        let f = try await Fixture()
        let router = PushRouter(committer: GroupCommitter(store: f.store, policy: OfflinePolicy()))
        let pair = try HTTP2Pair(api: f.api, router: router)
        let jwt = f.jwt()
        let streams = (0..<20).map { HTTP2StreamID(2 * $0 + 1) }
        for stream in streams {
            let headers = HTTP2Pair.badTokenRequest(jwt: jwt)
            pair.client.write(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: headers))), promise: nil)
            pair.client.write(
                HTTP2Frame(
                    streamID: stream,
                    payload: .data(.init(data: .byteBuffer(ByteBuffer(string: "{}")), endStream: true))),
                promise: nil)
            // Each request flushed alone, as HeraldProvider's client does: with one flush for all,
            // nio-http2 would send their DATA frames (their ends) in the order of a `Set`.
            pair.client.flush()
        }
        var requests = ByteBuffer()
        while var bytes = try pair.client.readOutbound(as: ByteBuffer.self) { requests.writeBuffer(&bytes) }
        try pair.server.writeInbound(requests)
        var answers: [ByteBuffer] = []
        // The gateway writes once its loop's turn is over.
        #expect(try pair.server.readOutbound(as: ByteBuffer.self) == nil)
        pair.server.embeddedEventLoop.run()
        while let bytes = try pair.server.readOutbound(as: ByteBuffer.self) { answers.append(bytes) }
        // Twenty answers, a HEADERS and a DATA frame each, in one buffer.
        #expect(answers.count == 1)
        for bytes in answers { try pair.client.writeInbound(bytes) }
        let statuses = pair.collector.frames.compactMap { frame -> String? in
            if streams.contains(frame.streamID), case .headers(let h) = frame.payload {
                return h.headers.first(name: ":status")
            }
            return nil
        }
        #expect(statuses == Array(repeating: "400", count: 20))
        // Each answer's body ends its stream in the order the requests came: nio-http2 would send the
        // DATA frames of one flush in the order of a `Set`, so each body is flushed on its own.
        let ends = pair.collector.frames.compactMap { frame -> HTTP2StreamID? in
            if case .data(let data) = frame.payload, data.endStream { return frame.streamID }
            return nil
        }
        #expect(ends == streams)
    }
}
