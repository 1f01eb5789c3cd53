import Foundation
import HeraldCore
import HeraldNIO
import HeraldRuntime
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// Sends a push accepted here for a device linked to another node of the cluster to that node
/// (docs/cluster.md), over HTTP/2 with TLS to its provider API (``ClusterNode/address``) with the
/// cluster's credential: the holder offers it to the device's link or stores it, and answers 200
/// only then, which is the answer the provider gets from here. The connections are an
/// `HTTP2Client`'s (HeraldNIO, shared with the provider client): one per other node and
/// event loop, kept open.
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
    private let client = Mutex<HTTP2Client?>(nil)

    /// A forwarder for node `holders.me`, trusting the cluster CA `caPEM`; `timeout` bounds each
    /// forwarded push.
    public init(
        holders: DeviceHolders, credential: ClusterForwarding.Credential, caPEM: String, timeout: TimeAmount,
        logger: Logger = .silent
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
        tls.applicationProtocols = ["h2"]
        // A node that is gone should fail fast: the push is stored instead.
        let forwarding = HTTP2Client(
            configuration: .init(
                tls: try NIOSSLContext(configuration: tls), connectTimeout: .seconds(2), spread: .perLoop,
                serverNameIndication: false),
            group: group)
        client.withLock { $0 = forwarding }
    }

    /// Closes the connections to the other nodes.
    public func shutdown() async {
        if let forwarding = client.withLock({ current -> HTTP2Client? in
            defer { current = nil }
            return current
        }) {
            await forwarding.shutdown()
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
        guard let forwarding = client.withLock({ $0 }) else {
            return outcome(.failed(node: holder.node, reason: "stopped"))
        }
        guard let endpoint = HTTP2Endpoint(url: holder.address), endpoint.tls else {
            return outcome(.failed(node: holder.node, reason: "not an https://host:port address: \(holder.address)"))
        }
        let request = HTTP2ClientRequest(
            path: ClusterForwarding.pathPrefix + push.registration.token.hex, headers: headers(push),
            body: push.payload, deadline: .now() + timeout, bodyLimit: 512)
        // On the loop of the provider connection the push came from, when there is one (the client's
        // `perLoop` spread): forwarded pushes then spread over the threads as the providers'
        // connections do. Over a single connection they all queued on one thread, which ran at a full
        // core while the other idled (BENCHMARKS.md, bench-cluster).
        forwarding.send(request, to: endpoint) { result in
            switch result {
            case .success(let answer) where answer.status == 200:
                outcome(.answered(.ok(apnsID: push.apnsID, uniqueID: push.uniqueID)))
            case .success(let answer):
                outcome(.failed(node: holder.node, reason: "answered \(answer.status) \(String(buffer: answer.body))"))
            case .failure(let failure):
                outcome(.failed(node: holder.node, reason: failure.description))
            }
        }
    }

    private func headers(_ push: AcceptedPush) -> [(String, String)] {
        var headers: [(String, String)] = [
            ("authorization", credential.authorization), ("apns-id", push.apnsID), ("apns-topic", push.topic),
            ("apns-push-type", push.pushType.rawValue), ("apns-priority", String(push.priority.rawValue)),
        ]
        if let expiration = push.expiration { headers.append(("apns-expiration", String(expiration))) }
        if let collapseID = push.collapseID { headers.append(("apns-collapse-id", collapseID)) }
        headers.append(
            (
                ClusterForwarding.header,
                ClusterForwarding.Fields(
                    environment: push.registration.environment, acceptedAt: push.receivedAt,
                    uniqueID: push.uniqueID, binaryIdentifier: push.binaryIdentifier
                ).text
            ))
        return headers
    }
}
