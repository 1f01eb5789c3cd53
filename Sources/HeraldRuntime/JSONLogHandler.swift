#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import HeraldCore
import Logging
import Synchronization

/// How a Herald process writes its log: swift-log's own text lines, or one JSON object a line.
public enum LogFormat: String, Sendable, CaseIterable {
    /// swift-log's `StreamLogHandler`: `2026-11-26T16:48:19+0000 info herald.gateway: [key=value] message`.
    case text
    /// One JSON object a line (``JSONLogHandler``), for a log collector.
    case json

    /// Makes every `Logger` of this process write in this format to standard error. Call it once,
    /// before the first `Logger` is made (swift-log allows one bootstrap per process).
    public func bootstrap() {
        switch self {
        case .text: LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        case .json: LoggingSystem.bootstrap { JSONLogHandler(label: $0) }
        }
    }
}

/// A swift-log handler that writes one JSON object a line to standard error:
///
///     {"time":"2026-11-26T16:48:19.123Z","level":"info","label":"herald.gateway","message":"gateway ready","providerURL":"https://localhost:2197"}
///
/// `time` (UTC, milliseconds), `level`, `label` and `message` come first, then the metadata as fields
/// of their own (the handler's, the provider's and the message's, the message's winning). A metadata
/// key that is one of those four names is written as `metadata.<key>`. Strings are strings; lists and
/// dictionaries of metadata are JSON arrays and objects. Each line goes out in one `write`, so lines
/// of several threads never interleave.
public struct JSONLogHandler: LogHandler {
    /// The logger's label.
    public let label: String
    /// Metadata added to every message of this handler.
    public var metadata: Logger.Metadata = [:]
    /// Metadata looked up at each message.
    public var metadataProvider: Logger.MetadataProvider?
    /// The lowest level written.
    public var logLevel: Logger.Level = .info
    /// Where lines go (standard error, unless a test says otherwise).
    let sink: @Sendable ([UInt8]) -> Void

    /// A handler for `label`, writing to standard error.
    public init(label: String, metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider) {
        self.init(label: label, metadataProvider: metadataProvider, sink: Self.standardError)
    }

    /// A handler for `label` that hands each line (its bytes, newline included) to `sink`.
    public init(
        label: String, metadataProvider: Logger.MetadataProvider? = nil, sink: @escaping @Sendable ([UInt8]) -> Void
    ) {
        self.label = label
        self.metadataProvider = metadataProvider
        self.sink = sink
    }

    /// The metadata value for `key`.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes one line.
    public func log(event: LogEvent) {
        var fields = self.metadata
        if let provided = metadataProvider?.get() { fields.merge(provided) { $1 } }
        if let explicit = event.metadata { fields.merge(explicit) { $1 } }
        if let error = event.error, fields["error"] == nil { fields["error"] = "\(error)" }
        sink(
            Self.line(time: Self.now(), level: event.level, label: label, message: "\(event.message)", metadata: fields)
        )
    }

    /// The line for one message (its bytes, newline included). Fields are written in the order of
    /// their keys, so equal messages give equal lines.
    static func line(
        time: (seconds: Int, milliseconds: Int), level: Logger.Level, label: String, message: String,
        metadata: Logger.Metadata
    ) -> [UInt8] {
        var json = JSONWriter(capacity: 256)
        json.raw("{\"time\":")
        json.string(timestamp(time))
        json.raw(",\"level\":")
        json.string(level.rawValue)
        json.raw(",\"label\":")
        json.string(label)
        json.raw(",\"message\":")
        json.string(message)
        for key in metadata.keys.sorted() {
            json.raw(",")
            json.string(reserved.contains(key) ? "metadata." + key : key)
            json.raw(":")
            write(metadata[key]!, to: &json)
        }
        json.raw("}\n")
        return json.bytes
    }

    private static let reserved: Set = ["time", "level", "label", "message"]

    private static func write(_ value: Logger.Metadata.Value, to json: inout JSONWriter) {
        switch value {
        case .string(let text): json.string(text)
        case .stringConvertible(let item): json.string(item.description)
        case .array(let items):
            json.raw("[")
            for (index, item) in items.enumerated() {
                if index > 0 { json.raw(",") }
                write(item, to: &json)
            }
            json.raw("]")
        case .dictionary(let entries):
            json.raw("{")
            for (index, key) in entries.keys.sorted().enumerated() {
                if index > 0 { json.raw(",") }
                json.string(key)
                json.raw(":")
                write(entries[key]!, to: &json)
            }
            json.raw("}")
        }
    }

    /// Seconds since 1970 and the milliseconds past them, now.
    private static func now() -> (seconds: Int, milliseconds: Int) {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return (Int(spec.tv_sec), Int(spec.tv_nsec) / 1_000_000)
    }

    /// `2026-11-26T16:48:19.123Z`.
    static func timestamp(_ time: (seconds: Int, milliseconds: Int)) -> String {
        var seconds = time_t(time.seconds)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let milliseconds =
            time.milliseconds < 10
            ? "00\(time.milliseconds)" : time.milliseconds < 100 ? "0\(time.milliseconds)" : "\(time.milliseconds)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):"
            + "\(two(parts.tm_min)):\(two(parts.tm_sec)).\(milliseconds)Z"
    }

    /// One `write` per line, under a lock; a short write (a full pipe) goes on with the rest.
    private static let standardError: @Sendable ([UInt8]) -> Void = { bytes in
        lock.withLock { _ in writeAll(bytes, to: 2) }
    }
    private static let lock = Mutex(())
}

/// Writes all of `bytes` to `descriptor`, going on after a short write or an interruption; gives up
/// on an error (a log line that cannot be written is not worth stopping the process for).
private func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
    bytes.withUnsafeBytes { buffer in
        var offset = 0
        while offset < buffer.count {
            let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}
