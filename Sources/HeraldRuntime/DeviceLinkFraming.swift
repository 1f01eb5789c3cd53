import HeraldCore
import NIOCore
import NIOWebSocket

/// The WebSocket handlers of a device link, on either side, once its opening handshake is done.
public enum DeviceLinkFraming {
    /// The frame encoder and decoder (frames up to ``DeviceLink/maximumMessageSize``), the protocol
    /// error handler, the aggregator of fragmented messages and then `link`, in pipeline order: `link`
    /// is added last, so whatever it writes as it is added goes through the encoder.
    public static func handlers(then link: any ChannelHandler) -> [any ChannelHandler] {
        [
            WebSocketFrameEncoder(),
            ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: DeviceLink.maximumMessageSize)),
            WebSocketProtocolErrorHandler(),
            NIOWebSocketFrameAggregator(
                minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 64,
                maxAccumulatedFrameSize: DeviceLink.maximumMessageSize),
            link,
        ]
    }
}
