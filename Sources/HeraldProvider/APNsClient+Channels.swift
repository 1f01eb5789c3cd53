import Foundation
import HeraldCore
import HeraldNIO
import NIOCore
import NIOHPACK

extension APNsServer {
    /// Apple's channel management service for development, `api-manage-broadcast.sandbox.push.apple.com:2195`.
    public static let channelsSandbox = APNsServer(url: "https://api-manage-broadcast.sandbox.push.apple.com:2195")
    /// Apple's channel management service for production, `api-manage-broadcast.push.apple.com:2196`.
    public static let channelsProduction = APNsServer(url: "https://api-manage-broadcast.push.apple.com:2196")
    /// Apple's broadcast service for development, `api-broadcast.sandbox.push.apple.com:443`.
    public static let broadcastSandbox = APNsServer(url: "https://api-broadcast.sandbox.push.apple.com")
    /// Apple's broadcast service for production, `api-broadcast.push.apple.com:443`.
    public static let broadcastProduction = APNsServer(url: "https://api-broadcast.push.apple.com")
}

/// A broadcast the service accepted.
public struct APNsBroadcastSent: Sendable, Equatable {
    /// `apns-request-id` of the request.
    public var requestID: String
    /// `apns-unique-id`: the message's identity at the service.
    public var uniqueID: String
}

/// A broadcast channel just created.
public struct APNsChannelCreated: Sendable, Equatable {
    /// `apns-channel-id`: what a Live Activity subscribes to and a broadcast names.
    public var channelID: String
    /// `apns-request-id` of the request.
    public var requestID: String
}

/// The channel management API (a Herald gateway's: docs/broadcast.md): an app's
/// broadcast channels, created, read, deleted and listed. The server is the channel management
/// service (``APNsServer/channelsSandbox``, ``APNsServer/channelsProduction``, or a gateway's
/// `channelsURL`), not the push service; the authentication is the client's. A refusal throws
/// ``APNsError`` (its reason ``APNsError/Reason/broadcast(_:)`` for the reasons these APIs add);
/// no answer throws ``APNsClientError``. Nothing is retried.
extension APNsClient {
    /// Creates a channel for `bundleID` with `storagePolicy` (fixed for the channel's life).
    public func createChannel(
        bundleID: String, storagePolicy: ChannelStoragePolicy, on server: APNsServer
    ) async throws -> APNsChannelCreated {
        let body = #"{"message-storage-policy":\#(storagePolicy.rawValue),"push-type":"\#(BroadcastChannel.pushType)"}"#
        let answer = try await channelCall("POST", server, bundleID, "channels", channelID: nil, body: body)
        guard let id = answer.headers.first(name: "apns-channel-id") else {
            throw APNsClientError.transport("the answer has no apns-channel-id", attempts: 1)
        }
        return APNsChannelCreated(channelID: id, requestID: answer.requestID)
    }

    /// The storage policy of one of `bundleID`'s channels.
    public func channelStoragePolicy(
        bundleID: String, channelID: String, on server: APNsServer
    ) async throws -> ChannelStoragePolicy {
        let answer = try await channelCall("GET", server, bundleID, "channels", channelID: channelID, body: nil)
        let object = (try? JSONSerialization.jsonObject(with: Data(answer.body.readableBytesView))) as? [String: Any]
        guard let number = object?["message-storage-policy"] as? Int,
            let policy = ChannelStoragePolicy(rawValue: number)
        else {
            throw APNsClientError.transport("the answer has no message-storage-policy", attempts: 1)
        }
        return policy
    }

    /// Deletes one of `bundleID`'s channels.
    public func deleteChannel(bundleID: String, channelID: String, on server: APNsServer) async throws {
        _ = try await channelCall("DELETE", server, bundleID, "channels", channelID: channelID, body: nil)
    }

    /// The ids of `bundleID`'s channels, oldest first.
    public func channelIDs(bundleID: String, on server: APNsServer) async throws -> [String] {
        let answer = try await channelCall("GET", server, bundleID, "all-channels", channelID: nil, body: nil)
        let object = (try? JSONSerialization.jsonObject(with: Data(answer.body.readableBytesView))) as? [String: Any]
        guard let ids = object?["channels"] as? [String] else {
            throw APNsClientError.transport("the answer has no channels list", attempts: 1)
        }
        return ids
    }

    /// Broadcasts a Live Activity update (or end) on one of `bundleID`'s channels, to every activity
    /// subscribed to it (`POST /4/broadcasts/apps/<bundle>`, docs/broadcast.md). The server is the
    /// broadcast service (``APNsServer/broadcastSandbox``, ``APNsServer/broadcastProduction``) or,
    /// by default, the client's server (a Herald gateway takes broadcasts on its provider API).
    /// `expiration` must be 0 on a channel that keeps no message.
    public func broadcast(
        _ activity: APNsLiveActivity, bundleID: String, channelID: String, priority: PushPriority = .immediate,
        expiration: Int64? = nil, on server: APNsServer? = nil
    ) async throws -> APNsBroadcastSent {
        try await broadcast(
            payload: activity.payload(), bundleID: bundleID, channelID: channelID, priority: priority,
            expiration: expiration, on: server)
    }

    /// Broadcasts a payload as written (``broadcast(_:bundleID:channelID:priority:expiration:on:)``).
    public func broadcast(
        payload: Data, bundleID: String, channelID: String, priority: PushPriority = .immediate,
        expiration: Int64? = nil, on server: APNsServer? = nil
    ) async throws -> APNsBroadcastSent {
        var headers = [("apns-push-type", PushType.liveactivity.rawValue), ("apns-priority", "\(priority.rawValue)")]
        if let expiration { headers.append(("apns-expiration", "\(expiration)")) }
        let answer = try await call(
            "POST", server ?? configuration.server, "/4/broadcasts/apps/\(bundleID)", channelID: channelID,
            headers: headers, body: ByteBuffer(bytes: payload))
        guard let unique = answer.headers.first(name: "apns-unique-id") else {
            throw APNsClientError.transport("the answer has no apns-unique-id", attempts: 1)
        }
        return APNsBroadcastSent(requestID: answer.requestID, uniqueID: unique)
    }

    private func channelCall(
        _ method: String, _ server: APNsServer, _ bundleID: String, _ resource: String, channelID: String?,
        body: String?
    ) async throws -> (requestID: String, headers: HPACKHeaders, body: ByteBuffer) {
        try await call(
            method, server, "/1/apps/\(bundleID)/\(resource)", channelID: channelID,
            headers: body == nil ? [] : [("content-type", "application/json")],
            body: body.map { ByteBuffer(string: $0) })
    }

    /// One request of the channel management or broadcast API, with a new `apns-request-id`.
    private func call(
        _ method: String, _ server: APNsServer, _ path: String, channelID: String?, headers: [(String, String)],
        body: ByteBuffer?
    ) async throws -> (requestID: String, headers: HPACKHeaders, body: ByteBuffer) {
        let requestID = RandomUUID.lowercaseString()
        let (endpoint, base) = try server.endpoint()
        var fields: [(String, String)] = []
        if let tokens { fields.append(("authorization", try tokens.authorization())) }
        fields.append(("apns-request-id", requestID))
        if let channelID { fields.append(("apns-channel-id", channelID)) }
        fields += headers
        let request = HTTP2ClientRequest(
            method: method, path: base + path, headers: fields, body: body,
            deadline: .now() + TimeAmount(configuration.timeout), bodyLimit: 1 << 20)
        let response: HTTP2ClientResponse
        switch await http.execute(request, to: endpoint) {
        case .success(let answer): response = answer
        case .failure(let error) where error.kind == .timedOut: throw APNsClientError.deadlineExceeded(attempts: 1)
        case .failure(let error): throw APNsClientError.transport(error.description, attempts: 1)
        }
        let answeredID = response.headers.first(name: "apns-request-id") ?? requestID
        guard (200..<300).contains(response.status) else {
            throw APNsError.parse(
                status: response.status, body: Data(response.body.readableBytesView), apnsID: answeredID)
        }
        return (answeredID, response.headers, response.body)
    }
}
