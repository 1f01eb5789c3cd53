import AsyncHTTPClient
import Foundation
import HeraldCore
import NIOCore
import NIOHTTP1

extension APNsServer {
    /// Apple's channel management service for development, `api-manage-broadcast.sandbox.push.apple.com:2195`.
    public static let channelsSandbox = APNsServer(url: "https://api-manage-broadcast.sandbox.push.apple.com:2195")
    /// Apple's channel management service for production, `api-manage-broadcast.push.apple.com:2196`.
    public static let channelsProduction = APNsServer(url: "https://api-manage-broadcast.push.apple.com:2196")
}

/// A broadcast channel just created.
public struct APNsChannelCreated: Sendable, Equatable {
    /// `apns-channel-id`: what a Live Activity subscribes to and a broadcast names.
    public var channelID: String
    /// `apns-request-id` of the request.
    public var requestID: String
}

/// The channel management API (spec/APNS.md §8; a Herald gateway's, docs/broadcast.md): an app's
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
        let answer = try await channelCall(.POST, server, bundleID, "channels", channelID: nil, body: body)
        guard let id = answer.headers.first(name: "apns-channel-id") else {
            throw APNsClientError.transport("the answer has no apns-channel-id", attempts: 1)
        }
        return APNsChannelCreated(channelID: id, requestID: answer.requestID)
    }

    /// The storage policy of one of `bundleID`'s channels.
    public func channelStoragePolicy(
        bundleID: String, channelID: String, on server: APNsServer
    ) async throws -> ChannelStoragePolicy {
        let answer = try await channelCall(.GET, server, bundleID, "channels", channelID: channelID, body: nil)
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
        _ = try await channelCall(.DELETE, server, bundleID, "channels", channelID: channelID, body: nil)
    }

    /// The ids of `bundleID`'s channels, oldest first.
    public func channelIDs(bundleID: String, on server: APNsServer) async throws -> [String] {
        let answer = try await channelCall(.GET, server, bundleID, "all-channels", channelID: nil, body: nil)
        let object = (try? JSONSerialization.jsonObject(with: Data(answer.body.readableBytesView))) as? [String: Any]
        guard let ids = object?["channels"] as? [String] else {
            throw APNsClientError.transport("the answer has no channels list", attempts: 1)
        }
        return ids
    }

    private func channelCall(
        _ method: HTTPMethod, _ server: APNsServer, _ bundleID: String, _ resource: String, channelID: String?,
        body: String?
    ) async throws -> (requestID: String, headers: HTTPHeaders, body: ByteBuffer) {
        let requestID = RandomUUID.lowercaseString()
        var request = HTTPClientRequest(url: server.url + "/1/apps/\(bundleID)/\(resource)")
        request.method = method
        if let tokens { request.headers.add(name: "authorization", value: "bearer " + (try tokens.token())) }
        request.headers.add(name: "apns-request-id", value: requestID)
        if let channelID { request.headers.add(name: "apns-channel-id", value: channelID) }
        if let body {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let deadline = NIODeadline.now() + TimeAmount(configuration.timeout)
        let response: HTTPClientResponse
        let bytes: ByteBuffer
        do {
            response = try await http.execute(request, deadline: deadline, logger: logger)
            bytes = try await response.body.collect(upTo: 1 << 20)
        } catch let error as HTTPClientError where error == .deadlineExceeded {
            throw APNsClientError.deadlineExceeded(attempts: 1)
        } catch {
            throw APNsClientError.transport("\(error)", attempts: 1)
        }
        let answeredID = response.headers.first(name: "apns-request-id") ?? requestID
        guard (200..<300).contains(response.status.code) else {
            throw APNsError.parse(
                status: Int(response.status.code), body: Data(bytes.readableBytesView), apnsID: answeredID)
        }
        return (answeredID, response.headers, bytes)
    }
}
