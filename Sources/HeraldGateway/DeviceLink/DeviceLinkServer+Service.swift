import ServiceLifecycle

/// The device link listener as a `Service`: until graceful shutdown or cancellation, then every
/// device gets a close frame (1001, going away).
extension DeviceLinkServer: Service {
    /// Waits for the end, then shuts down.
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }
}
