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
        let streams = (0..<5).map { HTTP2StreamID(2 * $0 + 1) }
        for stream in streams {
            let headers = HTTP2Pair.badTokenRequest(jwt: jwt)
            pair.client.write(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: headers))), promise: nil)
            pair.client.write(
                HTTP2Frame(
                    streamID: stream,
                    payload: .data(.init(data: .byteBuffer(ByteBuffer(string: "{}")), endStream: true))),
                promise: nil)
        }
        pair.client.flush()
        var requests = ByteBuffer()
        while var bytes = try pair.client.readOutbound(as: ByteBuffer.self) { requests.writeBuffer(&bytes) }
        try pair.server.writeInbound(requests)
        var answers: [ByteBuffer] = []
        while let bytes = try pair.server.readOutbound(as: ByteBuffer.self) { answers.append(bytes) }
        // Five answers, a HEADERS and a DATA frame each, in one buffer.
        #expect(answers.count == 1)
        for bytes in answers { try pair.client.writeInbound(bytes) }
        let statuses = pair.collector.frames.compactMap { frame -> String? in
            if streams.contains(frame.streamID), case .headers(let h) = frame.payload {
                return h.headers.first(name: ":status")
            }
            return nil
        }
        #expect(statuses == Array(repeating: "400", count: 5))
    }
}
