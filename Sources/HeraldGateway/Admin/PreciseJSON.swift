import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// JSON with dates to the millisecond (`2026-11-24T10:45:47.123Z`): the delivery log's steps are
/// milliseconds apart, where the admin API's other routes give whole seconds. The console's routes
/// answer with it too.
enum PreciseJSON {
    /// `value` as a JSON response (200 unless `status` says), not to be cached.
    static func response(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date))
        }
        encoder.outputFormatting = .sortedKeys
        return Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }
}
