import ServiceLifecycle

/// A legacy listener (binary interface or feedback service) as a `Service`: until graceful shutdown
/// or cancellation, then it stops accepting and finishes what is in flight.
extension LegacyServer: Service {
    /// Waits for the end, then shuts down.
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }
}
