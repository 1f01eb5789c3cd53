import HeraldRuntime
import Logging
import NIOCore
import NIOExtras

/// The provider listeners' traffic after TLS, written to a file as a packet capture (pcap) that
/// Wireshark or tshark read as HTTP/2 or HTTP/1.1: for seeing, frame by frame, what a provider's
/// client sends (`herald gateway --capture FILE`; docs/listeners.md).
///
/// The file holds everything a provider sends, authentication tokens and payloads included; it is
/// created readable by its owner only. One capture serves every connection of the listeners given it.
public final class ProviderCapture: Sendable {
    let sink: NIOWritePCAPHandler.SynchronizedFileSink
    /// The file's path.
    public let path: String

    /// Creates (or empties) the file at `path`. A write that fails later stops the capture and is
    /// logged to `logger`, once; the listeners go on.
    public init(path: String, logger: Logger = .silent) throws {
        self.path = path
        do {
            sink = try .fileSinkWritingToFile(path: path) { error in
                logger.warning("the packet capture stopped", metadata: ["file": "\(path)", "error": "\(error)"])
            }
        } catch {
            throw CaptureError(path: path)
        }
    }

    /// A handler that writes one connection's traffic: it goes where the pipeline carries plain bytes
    /// (after the TLS handler, or first on a cleartext listener).
    func handler() -> NIOWritePCAPHandler {
        NIOWritePCAPHandler(mode: .server, fileSink: sink.write)
    }

    /// Writes what is buffered and closes the file.
    public func close() {
        try? sink.syncClose()
    }

    /// The capture file could not be created.
    public struct CaptureError: Error, CustomStringConvertible {
        /// The path given.
        public let path: String
        /// What the gateway prints: the file it could not create.
        public var description: String { "cannot create the packet capture file \(path)" }
    }
}
