import Foundation
import HeraldCore
import HeraldRuntime
import NIOCore

/// The channel management API (docs/broadcast.md): a provider creates, reads,
/// lists and deletes an app's broadcast channels. Served on its own listeners by the provider API's
/// transports (`ProviderAPI.managingChannels(store:limit:)`), authenticated as the provider API
/// is (a provider token or the app's certificate).
///
/// Validation order: `apns-request-id` → duplicate headers → path → method → shutdown →
/// authentication → the app and its broadcast capability → `apns-channel-id` or the body → the store.
public struct ChannelAPI: Sendable {
    /// Channels an app may have in one environment (Apple's figure).
    public static let limit = 10_000

    let registry: Registry
    let store: any ChannelStore
    let shuttingDown: ShutdownFlag
    let limit: Int

    /// What a path asks for.
    enum Target {
        /// `/1/apps/<bundle>/channels`: one channel (POST creates; GET, DELETE with `apns-channel-id`).
        case channel
        /// `/1/apps/<bundle>/all-channels`: GET lists.
        case all
    }

    /// What to do with a request: answer now, or after work on the store.
    enum Answer {
        case respond(ProviderResponse)
        case perform(@Sendable () async -> ProviderResponse)
    }

    /// How the channel management and broadcast APIs answer a request: under its `apns-request-id`
    /// (the provider's, or a new one), refusing at once one whose `apns-request-id` is no UUID or
    /// that has a header twice.
    struct Answering {
        let requestID: String
        /// The refusal, when the request goes no further.
        private(set) var refusal: Answer?

        init(_ request: ProviderRequest, now: Date) {
            if let given = request.requestID, !ProviderChecks.isCanonicalUUID(given) {
                requestID = RandomUUID.timeOrderedLowercaseString(at: now)
                refusal = .respond(
                    .requestError(.badRequestParams, requestID: requestID, note: "apns-request-id is not a UUID"))
                return
            }
            requestID = request.requestID ?? RandomUUID.timeOrderedLowercaseString(at: now)
            if request.duplicateHeader != nil { refusal = fail(.duplicateHeaders) }
        }

        func fail(_ reason: BroadcastReason, _ note: String? = nil) -> Answer {
            .respond(.requestError(reason, requestID: requestID, note: note))
        }

        func fail(_ reason: APNsReason, _ note: String? = nil) -> Answer {
            .respond(.requestError(reason, requestID: requestID, note: note))
        }
    }

    func handle(
        _ request: ProviderRequest, connection: inout ProviderConnectionState, now: Date
    ) -> Answer {
        let answering = Answering(request, now: now)
        if let refusal = answering.refusal { return refusal }
        let requestID = answering.requestID
        func fail(_ reason: BroadcastReason, _ note: String? = nil) -> Answer { answering.fail(reason, note) }
        func fail(_ reason: APNsReason, _ note: String? = nil) -> Answer { answering.fail(reason, note) }

        guard let (bundleID, target) = Self.parse(path: request.path) else { return fail(.badPath) }
        switch (target, request.method) {
        case (.channel, "POST"), (.channel, "GET"), (.channel, "DELETE"), (.all, "GET"): break
        default: return fail(.methodNotAllowed)
        }
        if shuttingDown.isSet { return fail(.shutdown) }

        let environment: APNsEnvironment
        switch Self.admit(request, bundleID: bundleID, registry: registry, connection: &connection, now: now) {
        case .admitted(let e): environment = e
        case .refused(let reason, let note): return fail(reason, note)
        case .refusedAPNs(let reason): return fail(reason)
        }

        let store = self.store
        let limit = self.limit
        switch (target, request.method) {
        case (.channel, "POST"):
            let policy: ChannelStoragePolicy
            switch Self.creation(request.body) {
            case .failure(let refusal): return fail(refusal.reason, refusal.note)
            case .success(let parsed): policy = parsed
            }
            let channel = BroadcastChannel(
                id: BroadcastChannel.newID(), bundleID: bundleID, environment: environment, storagePolicy: policy,
                createdAt: now)
            return .perform {
                do {
                    guard try await store.createChannel(channel, limit: limit) else {
                        return .requestError(
                            .cannotCreateChannelConfig, requestID: requestID,
                            note: "the app has \(limit) channels in \(environment.rawValue) already")
                    }
                    return .request(201, requestID: requestID, channelID: channel.id)
                } catch {
                    return Self.unavailable(requestID, error)
                }
            }
        case (.all, _):
            return .perform {
                do {
                    let ids = try await store.channelIDs(bundleID: bundleID, environment: environment)
                    return .request(200, requestID: requestID, json: Self.list(ids))
                } catch {
                    return Self.unavailable(requestID, error)
                }
            }
        default:
            guard let id = request.channelID else { return fail(.missingChannelId) }
            guard BroadcastChannel.isWellFormed(id) else { return fail(.badChannelId) }
            return existingChannel(
                id, deleting: request.method == "DELETE", bundleID: bundleID, environment: environment,
                requestID: requestID)
        }
    }

    /// Reads (GET) or deletes (DELETE) the app's channel `id` on the store.
    func existingChannel(
        _ id: String, deleting: Bool, bundleID: String, environment: APNsEnvironment, requestID: String
    ) -> Answer {
        let store = self.store
        return .perform {
            do {
                if deleting {
                    guard try await store.deleteChannel(bundleID: bundleID, environment: environment, id: id) else {
                        return .requestError(.channelNotRegistered, requestID: requestID)
                    }
                    return .request(204, requestID: requestID)
                }
                guard let channel = try await store.channel(bundleID: bundleID, environment: environment, id: id)
                else { return .requestError(.channelNotRegistered, requestID: requestID) }
                return .request(
                    200, requestID: requestID,
                    json:
                        #"{"message-storage-policy":\#(channel.storagePolicy.rawValue),"push-type":"\#(BroadcastChannel.pushType)"}"#
                )
            } catch {
                return Self.unavailable(requestID, error)
            }
        }
    }

    /// Whether a request may manage or broadcast on an app's channels, which both APIs ask alike.
    enum Admission {
        /// Yes, in this environment.
        case admitted(APNsEnvironment)
        /// No, for a reason of these APIs.
        case refused(BroadcastReason, String?)
        /// No, for a reason they share with the provider API.
        case refusedAPNs(APNsReason)
    }

    /// The environment the request names, its caller (provider token or certificate, as on the
    /// provider API), and that the caller's team owns the app, the key's topics include it and its
    /// broadcast is on.
    static func admit(
        _ request: ProviderRequest, bundleID: String, registry: Registry, connection: inout ProviderConnectionState,
        now: Date
    ) -> Admission {
        let environment = ProviderChecks.environment(
            authority: request.authority, default: connection.defaultEnvironment)
        let keyTopics: [String]?
        let teamID: String
        switch ProviderChecks.caller(
            registry: registry, topic: bundleID, environment: environment, authorization: request.authorization,
            connection: &connection, now: now)
        {
        case .failure(let reason): return .refusedAPNs(reason)
        case .success(let who): (teamID, keyTopics) = (who.teamID, who.keyTopics)
        }
        guard let app = registry.app(bundleID), app.teamID == teamID else { return .refusedAPNs(.topicDisallowed) }
        if let keyTopics, !keyTopics.contains(bundleID) { return .refusedAPNs(.topicDisallowed) }
        guard app.broadcast else { return .refused(.featureNotEnabled, "the app's broadcast is off") }
        return .admitted(environment)
    }

    /// `/1/apps/<bundle id>/channels` or `…/all-channels` (a query string ignored).
    static func parse(path: String) -> (bundleID: String, target: Target)? {
        var path = Substring(path)
        if let q = path.firstIndex(of: "?") { path = path[..<q] }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "1", parts[2] == "apps", !parts[3].isEmpty else {
            return nil
        }
        switch parts[4] {
        case "channels": return (String(parts[3]), .channel)
        case "all-channels": return (String(parts[3]), .all)
        default: return nil
        }
    }

    /// Why a creation body was refused.
    struct Refusal: Error {
        var reason: BroadcastReason
        var note: String
    }

    /// Reads a creation body: `{"message-storage-policy": 0|1, "push-type": "LiveActivity"}`.
    static func creation(_ body: ByteBuffer) -> Result<ChannelStoragePolicy, Refusal> {
        guard body.readableBytes > 0,
            let object = try? JSONDecoder().decode([String: JSONValue].self, from: Data(body.readableBytesView))
        else {
            return .failure(Refusal(reason: .badRequestPayload, note: "the body is not a JSON object"))
        }
        guard let type = object["push-type"] else {
            return .failure(Refusal(reason: .missingPushType, note: "the body has no push-type"))
        }
        guard type.stringValue == BroadcastChannel.pushType else {
            return .failure(Refusal(reason: .badRequestParams, note: "push-type must be LiveActivity"))
        }
        guard case .int(let number) = object["message-storage-policy"],
            let policy = ChannelStoragePolicy(rawValue: Int(number))
        else {
            return .failure(Refusal(reason: .badRequestParams, note: "message-storage-policy must be 0 or 1"))
        }
        return .success(policy)
    }

    static func list(_ ids: [String]) -> String {
        let quoted = ids.map { #""\#($0)""# }.joined(separator: ",")
        return #"{"channels":[\#(quoted)]}"#
    }

    static func unavailable(_ requestID: String, _ error: any Error) -> ProviderResponse {
        .requestError(.serviceUnavailable, requestID: requestID, note: "the store failed: \(error)")
    }
}
