import ServiceLifecycle

/// A provider listener is bound before the group starts (a port in use fails the start at once) and
/// runs as a `Service` until graceful shutdown or cancellation: then GOAWAY, the streams in flight
/// finished, closed.
extension ProviderServer: Service {
    /// Waits for the end, then shuts down.
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }
}
