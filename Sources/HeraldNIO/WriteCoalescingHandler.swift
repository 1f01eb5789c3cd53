import NIOCore

/// Gathers the buffers written between two flushes into one before they reach the handler below
/// (the TLS handler; on a cleartext h2c connection, the socket, where it saves iovecs instead).
///
/// `NIOSSLHandler` gives each buffer written to it to BoringSSL on its own, and each becomes a TLS
/// record of its own. nio-http2 writes every frame as a buffer of its own, and a provider's answer
/// is one HEADERS frame of about 80 bytes. Without gathering, a batch of 100 answers went out as
/// 100 records: each with its own header, tag and encryption call on the gateway and its own
/// decryption on the provider. Gathered, the batch is one record, or one per 16 KiB.
///
/// Buffers are copied into one new buffer per flush. That copy also lets nio-http2 reuse its
/// frame-encoding buffer instead of allocating a new one per frame while the TLS handler still
/// holds the last. Nothing is kept between flushes, so an idle connection holds no buffer here. A
/// write with a promise completes when the gathered write does.
public final class WriteCoalescingHandler: ChannelOutboundHandler, RemovableChannelHandler {
    /// What is written: buffers (gathered) and file regions (passed on).
    public typealias OutboundIn = IOData
    /// What is passed on.
    public typealias OutboundOut = IOData

    /// A handler with nothing gathered.
    public init() {}

    /// The most gathered before it is passed on without waiting for the flush: what one TLS record
    /// holds.
    public static let limit = 16 * 1024

    private var gathered: ByteBuffer?
    private var promise: EventLoopPromise<Void>?

    /// Gathers `data`, or passes it on as it is (a file region, or a buffer a record's worth).
    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .byteBuffer(var bytes) = unwrapOutboundIn(data), bytes.readableBytes <= Self.limit else {
            // A file region, or a buffer a record's worth on its own: it goes as it is, in order.
            passOn(context)
            context.write(data, promise: promise)
            return
        }
        if let gathered, gathered.readableBytes + bytes.readableBytes > Self.limit { passOn(context) }
        if gathered == nil {
            gathered = context.channel.allocator.buffer(capacity: max(4096, bytes.readableBytes))
        }
        gathered!.writeBuffer(&bytes)
        if let promise {
            if let first = self.promise {
                first.futureResult.cascade(to: promise)
            } else {
                self.promise = promise
            }
        }
    }

    /// Passes on what is gathered, then flushes.
    public func flush(context: ChannelHandlerContext) {
        passOn(context)
        context.flush()
    }

    /// Passes on what is gathered, then closes.
    public func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        // What was written before the close goes first; the handlers below decide its fate.
        passOn(context)
        context.close(mode: mode, promise: promise)
    }

    /// Passes on what is gathered.
    public func handlerRemoved(context: ChannelHandlerContext) {
        passOn(context)
    }

    /// Passes what is gathered on (without flushing).
    private func passOn(_ context: ChannelHandlerContext) {
        guard let buffer = gathered else { return }
        let promise = self.promise
        gathered = nil
        self.promise = nil
        context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
    }
}
