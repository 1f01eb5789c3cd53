import Foundation
import HeraldCore
import HeraldRuntime
import NIOCore

extension Gateway {
    /// Where and how the gateway listens.
    public struct Configuration: Sendable {
        /// The state directory (`--state`).
        public var stateDirectory: String = ".herald/gateway"
        /// The address every listener binds, except the development listener, which is always on
        /// loopback: `127.0.0.1` by default. Off loopback (`--listen 0.0.0.0`) the provider API and
        /// the device link take network clients over TLS only (cleartext only from loopback peers)
        /// and the admin API is served over TLS, with its token as always.
        public var listenAddress: String = "127.0.0.1"
        /// Port of the TLS provider API (2197; 0 picks a free port).
        public var port: Int = 2197
        /// Port of the cleartext development listener on loopback (2198; 0 picks a free port; `nil` = off).
        public var developmentPort: Int? = 2198
        /// Port of the admin API (8080; 0 picks a free port).
        public var adminPort: Int = 8080
        /// Port of the device link (5223; 0 picks a free port): TLS, and cleartext from loopback.
        public var linkPort: Int = 5223
        /// Port of the legacy binary provider interface (2195; 0 picks a free port; `nil` = off),
        /// TLS with a client certificate.
        public var binaryPort: Int? = 2195
        /// Port of the feedback service (2196; 0 picks a free port; `nil` = off).
        public var feedbackPort: Int? = 2196
        /// Port of the channel management API over TLS (2295; 0 picks a free port; `nil` = off),
        /// docs/broadcast.md. Apple's are 2195 and 2196, which are the legacy interface's here.
        public var channelsPort: Int? = 2295
        /// Port of the channel management API in cleartext on loopback, for development (2296; 0 picks
        /// a free port; `nil` = off).
        public var channelsDevelopmentPort: Int? = 2296
        /// Listening sockets handed over at start (systemd's socket activation): a listener with one
        /// serves it instead of binding its address and port, and an optional listener (development,
        /// legacy, channel management) with one runs even when its port is `nil`.
        public var inheritedSockets = InheritedSockets()
        /// Acknowledgement timeout, batching window and background budget of the device link.
        public var link = DeviceLinkServer.Configuration()
        /// The environment requests address when their authority names none.
        public var environment: APNsEnvironment = .development
        /// Names and addresses the TLS certificate is issued for (on first start).
        public var certificateHosts: [String] = ["localhost", "127.0.0.1", "::1"]
        /// The provider API's settings (per-token rate, idle deadline).
        public var provider = ProviderAPI.Configuration()
        /// Every listener's first-bytes deadline (docs/listeners.md): from accepting a connection
        /// until its first complete request. The device link has its own
        /// (``DeviceLinkServer/Configuration/firstBytesTimeout``).
        public var firstBytesTimeout: Duration = .seconds(10)
        /// The admin API's idle deadline between requests.
        public var adminIdleTimeout: Duration? = .seconds(60)
        /// How many connections one address (IPv4, or an IPv6 /64 prefix) may hold open on each
        /// provider listener that serves other machines (the provider API, the channel management
        /// API, the binary interface and the feedback service; not the development listeners, which
        /// serve loopback only); a connection over it is closed at once (``PeerConnectionLimit``).
        /// 0, the default: no limit. The device link has its own
        /// (``DeviceLinkConfiguration/maxConnectionsPerAddress``).
        public var maxConnectionsPerAddress = 0
        /// How many pushes to keep per (device, topic) while offline.
        public var offline = OfflinePolicy()
        /// How much may wait for the store's next commit (docs/listeners.md, "Memory"): past it a
        /// push that must be stored is answered 503 `ServiceUnavailable` at once, and log lines
        /// nobody waits for are dropped and counted.
        public var storeQueue = GroupCommitter.Limits()
        /// How long the delivery log keeps a push's steps (30 days); the hourly purge deletes older ones.
        public var logRetention: Duration = .seconds(30 * 86400)
        /// Serve the test API on the admin listener (`/test/…`: waits, what devices received, a reset
        /// that erases devices, pushes and logs; docs/testing.md) and keep the last deliveries'
        /// payloads for it. Off by default: it is for test gateways.
        public var testAPI = false
        /// SQLite durability (the embedded store only).
        public var durability: SQLiteGatewayStore.Durability = .full
        /// Where the shared state lives: `nil` for the embedded SQLite database in the state
        /// directory, or a PostgreSQL URL (`postgres://user@host:port/database`) that every node of
        /// a cluster shares (docs/cluster.md). The state directory keeps the CA, the token secret and
        /// the admin token either way.
        public var database: String?
        /// With a cluster: the host (name or IP address) other nodes reach this node's TLS provider
        /// API at, to forward pushes for devices linked here (docs/cluster.md). `nil`: the listen
        /// address (loopback for a wildcard), which serves nodes on one machine.
        public var clusterAddress: String?
        /// Event-loop threads for provider connections (both provider listeners, the legacy
        /// interface and the admin API): one per core by default.
        public var providerThreads: Int = System.coreCount
        /// Event-loop threads for device links, apart from the provider threads: half as many as
        /// cores (at least one) by default. A push is read on its provider connection's loop and
        /// written on its device's loop; with separate loops neither kind of work queues behind
        /// the other, and the link's smaller share (a frame out, an acknowledgement in) gets
        /// fewer threads.
        public var linkThreads: Int = max(1, System.coreCount / 2)
        /// Where the provider API and development listener write their traffic after TLS as a
        /// packet capture (``ProviderCapture``), for debugging a provider's client; `nil`: nowhere.
        public var capturePath: String?

        /// The defaults.
        public init() {}

        /// Whether `listenAddress` is a loopback address.
        public var listensOnLoopbackOnly: Bool { Loopback.contains(listenAddress) }
    }
}
