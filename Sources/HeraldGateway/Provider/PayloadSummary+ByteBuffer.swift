import HeraldCore
import NIOCore

extension PayloadSummary {
    /// Scans a request body in place (``PayloadSummary/scan(_:)-(UnsafeRawBufferPointer)``).
    public static func scan(_ body: ByteBuffer) throws(ScanError) -> PayloadSummary {
        let result: Result<PayloadSummary, ScanError> = body.withUnsafeReadableBytes { raw in
            do throws(ScanError) {
                return .success(try scan(raw))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}
