/// Hands a push for a device linked to another node of the cluster to that node (docs/cluster.md):
/// what ``PushRouter`` asks when the device is not linked here. ``ClusterForwarder`` is the one there is.
public protocol PushForwarding: Sendable {
    /// Forwards `push` if another node holds its device, and calls `outcome` once: with the holder's
    /// 200 (the device acknowledged it there, or that node stored it), or with why it was not
    /// forwarded, and then the router stores it here.
    func forward(_ push: AcceptedPush, outcome: @escaping @Sendable (ForwardOutcome) -> Void)
}

/// What became of a push offered to ``PushForwarding``.
public enum ForwardOutcome: Sendable {
    /// The holder answered 200: relay it.
    case answered(ProviderResponse)
    /// No other live node holds the device: store it.
    case notHeld
    /// The holder could not be reached, or did not answer 200 (the reason, for the log): store it,
    /// and the holder hears of it from the store.
    case failed(node: String, reason: String)
}
