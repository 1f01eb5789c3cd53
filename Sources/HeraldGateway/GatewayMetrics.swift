import HeraldCore
import NIOCore
import Prometheus
import Synchronization

/// The gateway's Prometheus metrics, served at the admin API's `/metrics`
/// (docs/admin-api.md lists them). Counters for the usual answers are made up front, so the
/// provider API's hot path only looks one up and increments it.
public final class GatewayMetrics: Sendable {
    /// The registry `/metrics` emits.
    public let registry: PrometheusCollectorRegistry
    private let requests: [String: Counter]
    /// `requests`' counter of 200s, the answer nearly every push gets: counted without building its key.
    private let accepted: Counter
    private let otherRequests = Mutex<[String: Counter]>([:])
    private let latency: DurationHistogram
    private let acknowledged: Counter
    private let unacknowledged: Counter
    private let storedTotal: Counter
    private let discardedTotal: Counter
    private let droppedLogLines: Counter
    private let forwardedAnswered: Counter
    private let forwardedFailed: Counter
    let devicesOnline: Gauge
    let storedNow: Gauge
    private let refusedConnections = Mutex<[String: Counter]>([:])
    private let signedIn: Counter
    private let resumedIn: Counter
    private let resumedInUpgrade: Counter
    private let linksBackedUp: Counter
    private let broadcastsNotSent: Counter
    /// By app and Apple's delivery state, made as they first occur.
    private let states = Mutex<[DeliveryCount.Key: Counter]>([:])
    /// One per ``PushWarning``, in `allCases` order.
    private let warnings: [Counter]

    /// Creates the metrics in a registry of their own.
    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        var requests: [String: Counter] = [:]
        requests[Self.key(200, nil)] = Self.requestCounter(registry, 200, nil)
        for reason in APNsReason.allCases {
            requests[Self.key(reason.status, reason.rawValue)] = Self.requestCounter(
                registry, reason.status, reason.rawValue)
        }
        for reason in BroadcastReason.allCases {
            requests[Self.key(reason.status, reason.rawValue)] = Self.requestCounter(
                registry, reason.status, reason.rawValue)
        }
        self.requests = requests
        accepted = requests[Self.key(200, nil)]!
        latency = registry.makeDurationHistogram(
            descriptor: Self.name(
                "provider_request_duration", "seconds", "Time from a provider request's arrival to its answer"),
            buckets: [
                .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
                .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
                .seconds(2.5), .seconds(5),
            ])
        acknowledged = registry.makeCounter(descriptor: Self.deliveries, labels: [("result", "acknowledged")])
        unacknowledged = registry.makeCounter(descriptor: Self.deliveries, labels: [("result", "unacknowledged")])
        storedTotal = registry.makeCounter(
            descriptor: Self.name("pushes_stored", "total", "Pushes written to the offline store"))
        discardedTotal = registry.makeCounter(
            descriptor: Self.name(
                "pushes_discarded", "total", "Pushes with expiration 0 (or past) that could not be delivered at once"))
        droppedLogLines = registry.makeCounter(
            descriptor: Self.name(
                "delivery_log_lines_dropped", "total",
                "Delivery-log lines nobody waited for, dropped because the store was too far behind"))
        let forwarded = Self.name(
            "pushes_forwarded", "total", "Pushes for a device linked to another node of the cluster, sent there")
        forwardedAnswered = registry.makeCounter(descriptor: forwarded, labels: [("result", "answered")])
        forwardedFailed = registry.makeCounter(descriptor: forwarded, labels: [("result", "failed")])
        devicesOnline = registry.makeGauge(
            descriptor: Self.name("devices_online", "", "Devices connected over the device link"))
        storedNow = registry.makeGauge(
            descriptor: Self.name("stored_pushes", "", "Pushes waiting in the offline store"))
        let authentications = Self.name(
            "link_authentications", "total", "Devices let onto the device link, by a signature or a resumption ticket")
        signedIn = registry.makeCounter(descriptor: authentications, labels: [("method", "signature")])
        resumedIn = registry.makeCounter(descriptor: authentications, labels: [("method", "ticket")])
        resumedInUpgrade = registry.makeCounter(
            descriptor: Self.name(
                "link_upgrade_resumptions", "total",
                "Devices let onto the device link by a resumption ticket in their upgrade request (also counted as ticket)"
            ))
        linksBackedUp = registry.makeCounter(
            descriptor: Self.name(
                "link_backed_up", "total",
                "Times a device link backed up (its device did not read what was written to it) and sent pushes to the store"
            ))
        broadcastsNotSent = registry.makeCounter(
            descriptor: Self.name(
                "link_broadcasts_not_sent", "total",
                "Broadcast messages not sent to a device because its link was backed up"
            ))
        let warned = Self.name(
            "push_warnings", "total",
            "Pushes answered with a warning: accepted (or, with --strict, refused) though Apple would handle them quietly"
        )
        warnings = PushWarning.allCases.map {
            registry.makeCounter(descriptor: warned, labels: [("kind", $0.rawValue)])
        }
    }

    /// Counts a device link that backed up.
    public func linkBackedUp() { linksBackedUp.increment() }

    /// Counts the broadcasts a link that caught up did not send meanwhile.
    public func linkCaughtUp(broadcastsNotSent count: Int) {
        if count > 0 { broadcastsNotSent.increment(by: Int64(count)) }
    }

    /// Counts a device let onto the link: with a resumption ticket (`inUpgrade`: presented in its
    /// upgrade request rather than over the challenge), or with a signature.
    public func linkAuthenticated(byTicket: Bool, inUpgrade: Bool = false) {
        (byTicket ? resumedIn : signedIn).increment()
        if inUpgrade { resumedInUpgrade.increment() }
    }

    /// Counts a push forwarded to another node: `answered` when that node took it (200), else it
    /// was stored here instead.
    public func forwarded(answered: Bool) {
        (answered ? forwardedAnswered : forwardedFailed).increment()
    }

    /// Counts a connection a listener closed for a missed deadline or bytes it does not speak.
    public func connectionRefused(listener: String) {
        let counter = refusedConnections.withLock { counters in
            if let counter = counters[listener] { return counter }
            let counter = registry.makeCounter(
                descriptor: Self.name(
                    "connections_refused", "total",
                    "Connections closed for a missed first-bytes or idle deadline, or bytes no protocol spoken there"),
                labels: [("listener", listener)])
            counters[listener] = counter
            return counter
        }
        counter.increment()
    }

    static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "herald", metricName: metric, unitName: unit, helpText: help)
    }

    static var deliveries: MetricNameDescriptor {
        name(
            "deliveries", "total", "Notifications written to a device link, by whether the device acknowledged them")
    }

    static func key(_ status: Int, _ reason: String?) -> String { "\(status) \(reason ?? "")" }

    static func requestCounter(_ registry: PrometheusCollectorRegistry, _ status: Int, _ reason: String?)
        -> Counter
    {
        registry.makeCounter(
            descriptor: name("provider_requests", "total", "Provider API answers by status and reason"),
            labels: [("status", String(status)), ("reason", reason ?? "")])
    }

    /// Counts an answer to a provider and how long it took.
    public func answered(_ response: ProviderResponse, after elapsed: TimeAmount) {
        // A connection a fault rule closed answered nothing.
        if response.connectionFault == .close { return }
        if response.status == 200, response.reasonText == nil {
            accepted.increment()
        } else if let counter = requests[Self.key(response.status, response.reasonText)] {
            counter.increment()
        } else {
            // A fault rule can pair any status with any reason.
            let key = Self.key(response.status, response.reasonText)
            let counter = otherRequests.withLock { others in
                if let c = others[key] { return c }
                let c = Self.requestCounter(registry, response.status, response.reasonText)
                others[key] = c
                return c
            }
            counter.increment()
        }
        latency.record(Duration.nanoseconds(elapsed.nanoseconds))
        var bits = response.warnings.rawValue
        while bits != 0 {
            warnings[bits.trailingZeroBitCount].increment()
            bits &= bits - 1
        }
    }

    /// Counts pushes that reached Apple's delivery states (``AppleDeliveryState``), as the store
    /// wrote them: the same counts as the console's Metrics view, since this node started.
    public func deliveryStates(_ counts: [DeliveryCount.Key: Int]) {
        states.withLock { counters in
            for (key, count) in counts {
                // A counter per app and state: the day is the store's business, not Prometheus's.
                let label = DeliveryCount.Key(day: "", app: key.app, state: key.state)
                let counter =
                    counters[label]
                    ?? registry.makeCounter(
                        descriptor: Self.name(
                            "delivery_states", "total",
                            "Pushes by app and the delivery state Apple's Push Notifications Console would report"),
                        labels: [("app", key.app), ("state", key.state.rawValue)])
                counters[label] = counter
                counter.increment(by: Int64(count))
            }
        }
    }

    /// Counts a notification written to a device.
    public func delivered(acknowledged: Bool) {
        (acknowledged ? self.acknowledged : unacknowledged).increment()
    }

    /// Counts a push written to the offline store.
    public func stored() { storedTotal.increment() }

    /// Counts a push discarded (expiration 0 and not deliverable at once).
    public func discarded() { discardedTotal.increment() }

    /// Counts delivery-log lines dropped because the store was too far behind to take them.
    public func logLinesDropped(_ lines: Int) { droppedLogLines.increment(by: Int64(lines)) }

    /// The metrics in Prometheus's text format, after setting the gauges read at scrape time.
    public func emit(devicesOnline: Int, storedPushes: Int) -> [UInt8] {
        self.devicesOnline.set(to: Double(devicesOnline))
        storedNow.set(to: Double(storedPushes))
        return registry.emitToBuffer()
    }
}
