/// Tells a provider connection to stop gracefully: GOAWAY with `{"reason":"Shutdown"}`, finish
/// the streams in flight, then close.
public struct ProviderShutdownEvent: Sendable {
    /// The event.
    public init() {}
}
