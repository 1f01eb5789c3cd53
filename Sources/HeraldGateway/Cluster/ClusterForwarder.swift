import AsyncHTTPClient
import Foundation
import HeraldCore
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// Sends a push accepted here for a device linked to another node of the cluster to that node
/// (docs/cluster.md), over HTTP/2 with TLS to its provider API (``ClusterNode/address``) with the
/// cluster's credential: the holder offers it to the device's link or stores it, and answers 200
/// only then, which is the answer the provider gets from here. The connections are
/// AsyncHTTPClient's, kept open and multiplexed per node.
///
/// The holder's certificate must be issued by the cluster's CA; its name is not checked, since a
/// node's internal address may be any name or IP address (the CA is the cluster's own, and issues
/// only the nodes' and the apps' certificates).
public final class ClusterForwarder: PushForwarding {
    let holders: DeviceHolders
    let credential: ClusterForwarding.Credential
    let caPEM: String
    /// How long the holder may take to answer (its acknowledgement timeout and a store commit).
    let timeout: TimeAmount
    let logger: Logger
    private let client = Mutex<HTTPClient?>(nil)

    /// A forwarder for node `holders.me`, trusting the cluster CA `caPEM`; `timeout` bounds each
    /// forwarded push.
    public init(
        holders: DeviceHolders, credential: ClusterForwarding.Credential, caPEM: String, timeout: TimeAmount,
        logger: Logger
    ) {
        self.holders = holders
        self.credential = credential
        self.caPEM = caPEM
        self.timeout = timeout
        self.logger = logger
    }

    /// Opens the client on `group` (the gateway's provider threads); until then nothing is forwarded.
    public func start(group: any EventLoopGroup) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(caPEM.utf8)))
        tls.certificateVerification = .noHostnameVerification
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .automatic
        // A node that is gone should fail fast: the push is stored instead.
        configuration.timeout = .init(connect: .seconds(2))
        configuration.connectionPool = .init(idleTimeout: .minutes(5))
        let http = HTTPClient(eventLoopGroup: group, configuration: configuration, backgroundActivityLogger: logger)
        let earlier = client.withLock { current -> HTTPClient? in
            defer { current = http }
            return current
        }
        if let earlier { Task { try? await earlier.shutdown() } }
    }

    /// Closes the client's connections.
    public func shutdown() async {
        if let http = client.withLock({ current -> HTTPClient? in
            defer { current = nil }
            return current
        }) {
            try? await http.shutdown()
        }
    }

    /// Forwards `push` to the node holding its device, if another live node does.
    public func forward(_ push: AcceptedPush, outcome: @escaping @Sendable (ForwardOutcome) -> Void) {
        let device = push.registration.deviceID
        if let known = holders.cachedHolder(of: device) {
            send(push, to: known, outcome: outcome)
            return
        }
        Task {
            do {
                send(push, to: try await holders.lookUp(device), outcome: outcome)
            } catch {
                outcome(
                    .failed(
                        node: "?",
                        reason: "could not read where the device is linked: \(PostgresGatewayStore.describe(error))"))
            }
        }
    }

    private func send(
        _ push: AcceptedPush, to holder: DeviceHolders.Holder?, outcome: @escaping @Sendable (ForwardOutcome) -> Void
    ) {
        guard let holder else { return outcome(.notHeld) }
        guard let http = client.withLock({ $0 }) else { return outcome(.failed(node: holder.node, reason: "stopped")) }
        let request: HTTPClient.Request
        do {
            request = try HTTPClient.Request(
                url: holder.address + ClusterForwarding.pathPrefix + push.registration.token.hex, method: .POST,
                headers: headers(push), body: .byteBuffer(push.payload))
        } catch {
            return outcome(.failed(node: holder.node, reason: "bad address \(holder.address): \(error)"))
        }
        // On the loop of the provider connection the push came from, when there is one: AsyncHTTPClient
        // then keeps a connection to the holder per loop, and the forwarded pushes spread over the
        // threads as the providers' connections do. Over a single connection they all queued on one
        // thread, which ran at a full core while the other idled (BENCHMARKS.md, bench-cluster).
        let loop = MultiThreadedEventLoopGroup.currentEventLoop
        http.execute(
            request: request, eventLoop: loop.map { .delegateAndChannel(on: $0) } ?? .indifferent,
            deadline: .now() + timeout, logger: logger
        ).whenComplete { result in
            switch result {
            case .success(let response) where response.status == .ok:
                outcome(.answered(.ok(apnsID: push.apnsID, uniqueID: push.uniqueID)))
            case .success(let response):
                let body = response.body.map { String(buffer: $0) } ?? ""
                outcome(.failed(node: holder.node, reason: "answered \(response.status.code) \(body)"))
            case .failure(let error):
                outcome(.failed(node: holder.node, reason: "\(error)"))
            }
        }
    }

    private func headers(_ push: AcceptedPush) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.reserveCapacity(8)
        headers.add(name: "authorization", value: credential.authorization)
        headers.add(name: "apns-id", value: push.apnsID)
        headers.add(name: "apns-topic", value: push.topic)
        headers.add(name: "apns-push-type", value: push.pushType.rawValue)
        headers.add(name: "apns-priority", value: String(push.priority.rawValue))
        if let expiration = push.expiration { headers.add(name: "apns-expiration", value: String(expiration)) }
        if let collapseID = push.collapseID { headers.add(name: "apns-collapse-id", value: collapseID) }
        headers.add(
            name: ClusterForwarding.header,
            value: ClusterForwarding.Fields(
                environment: push.registration.environment, acceptedAt: push.receivedAt, uniqueID: push.uniqueID,
                binaryIdentifier: push.binaryIdentifier
            ).text)
        return headers
    }
}
