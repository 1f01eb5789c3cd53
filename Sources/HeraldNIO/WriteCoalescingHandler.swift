import NIOCore

/// Gathers the buffers written between two flushes (or, with `flushOncePerLoopTurn`, in one turn of
/// the event loop) into one before they reach the handler below (the TLS handler; on a cleartext h2c
/// connection, the socket, where it saves iovecs instead).
///
/// `NIOSSLHandler` gives each buffer written to it to BoringSSL on its own, and each becomes a TLS
/// record of its own. nio-http2 writes every frame as a buffer of its own, and a provider's answer
/// is one HEADERS frame of about 80 bytes. Without gathering, a batch of 100 answers went out as
/// 100 records: each with its own header, tag and encryption call on the gateway and its own
/// decryption on the provider. Gathered, the batch is one record, or one per 16 KiB.
///
/// Buffers are copied into one new buffer per flush passed on. That copy also lets nio-http2 reuse its
/// frame-encoding buffer instead of allocating a new one per frame while the TLS handler still
/// holds the last. Nothing is kept between flushes, so an idle connection holds no buffer here. A
/// write with a promise completes when the gathered write does.
public final class WriteCoalescingHandler: ChannelOutboundHandler, RemovableChannelHandler {
    /// What is written: buffers (gathered) and file regions (passed on).
    public typealias OutboundIn = IOData
    /// What is passed on.
    public typealias OutboundOut = IOData

    /// A handler with nothing gathered. With `flushOncePerLoopTurn`, a flush is not passed on at
    /// once: what the turn of the event loop writes and flushes is gathered until the tasks queued
    /// on the loop now have run, then passed on and flushed once. That lets the handler above flush
    /// as often as it likes (nio-http2 sends the DATA frames of one flush in no set order, so the
    /// provider client flushes each request on its own) at the cost of one write and flush below.
    /// A turn that writes a lot flushes early, at ``earlyFlush`` bytes.
    public init(flushOncePerLoopTurn: Bool = false) {
        self.turnFlush = flushOncePerLoopTurn ? LoopTurnFlush() : nil
    }

    /// The most gathered before it is passed on without waiting for the flush: what one TLS record
    /// holds.
    public static let limit = 16 * 1024

    /// With one flush per loop turn: once a flush finds this much unflushed (gathered, or passed on
    /// since the last flush), it goes at once instead of at the turn's end. The peer then starts on
    /// the first part of a long turn's output while the rest is made: a provider client answered
    /// 100 streams at once in one read makes 100 new requests in that turn, about 28 KB, and without
    /// this the server had nothing to do until the last of them was made.
    public static let earlyFlush = 8 * 1024

    private var gathered: ByteBuffer?
    /// Bytes passed on (at the ``limit``) and not flushed yet.
    private var passedOnSinceFlush = 0
    private var promise: EventLoopPromise<Void>?
    /// With one flush per loop turn: what schedules it, and whether one is coming.
    private let turnFlush: LoopTurnFlush?
    private var flushPending = false

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

    /// Passes on what is gathered, then flushes: now, or once this turn of the loop is over.
    public func flush(context: ChannelHandlerContext) {
        guard let turnFlush else { return flushNow(context) }
        if passedOnSinceFlush + (gathered?.readableBytes ?? 0) >= Self.earlyFlush {
            // Worth a write of its own: it goes now, and the turn goes on gathering.
            flushNow(context)
            return
        }
        flushPending = true
        turnFlush.request(on: context.eventLoop) { [self] in
            // Removed meanwhile: `handlerRemoved` flushed already.
            guard flushPending else { return }
            flushNow(context)
        }
    }

    /// Passes on what is gathered, then closes. A flush still to come is done first.
    public func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        // What was written before the close goes first; the handlers below decide its fate.
        if flushPending { flushNow(context) } else { passOn(context) }
        context.close(mode: mode, promise: promise)
    }

    /// Passes on what is gathered, and flushes if a flush was still to come.
    public func handlerRemoved(context: ChannelHandlerContext) {
        if flushPending { flushNow(context) } else { passOn(context) }
    }

    private func flushNow(_ context: ChannelHandlerContext) {
        flushPending = false
        passOn(context)
        passedOnSinceFlush = 0
        context.flush()
    }

    /// Passes what is gathered on (without flushing).
    private func passOn(_ context: ChannelHandlerContext) {
        guard let buffer = gathered else { return }
        let promise = self.promise
        gathered = nil
        self.promise = nil
        passedOnSinceFlush += buffer.readableBytes
        context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
    }
}
