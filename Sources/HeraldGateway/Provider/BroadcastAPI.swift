import Foundation
import HeraldCore
import HeraldRuntime
import Logging
import NIOCore

/// The broadcast API (docs/broadcast.md): `POST /4/broadcasts/apps/<bundle>` on
/// the provider API's listeners sends one Live Activity update to every device subscribed to a
/// channel. Authenticated as the provider API is; answered 200 once the message is recorded (and
/// on its way to the subscribers here; other nodes of a cluster send it to theirs).
///
/// Validation order: `apns-request-id` → duplicate headers → path → method → shutdown →
/// authentication → the app and its broadcast capability → `apns-channel-id` → `apns-push-type` →
/// `apns-priority` → `apns-expiration` → body → (the store) the channel → the expiration against
/// its storage policy.
public struct BroadcastAPI: Sendable {
    /// The largest body a broadcast takes.
    public static let maximumPayloadSize = 5120
    /// The path every broadcast request starts with.
    static let pathPrefix = "/4/broadcasts/apps/"

    let registry: Registry
    let hub: BroadcastHub
    let shuttingDown: ShutdownFlag
    let logger: Logger

    /// Whether a path is the broadcast API's (compared as bytes: it is asked of every request).
    static func claims(_ path: String) -> Bool { path.utf8.starts(with: "/4/".utf8) }

    func handle(
        _ request: ProviderRequest, connection: inout ProviderConnectionState, now: Date
    ) -> ChannelAPI.Answer {
        let answering = ChannelAPI.Answering(request, now: now)
        if let refusal = answering.refusal { return refusal }
        let requestID = answering.requestID
        func fail(_ reason: BroadcastReason, _ note: String? = nil) -> ChannelAPI.Answer {
            answering.fail(reason, note)
        }
        func fail(_ reason: APNsReason, _ note: String? = nil) -> ChannelAPI.Answer { answering.fail(reason, note) }
        guard let bundleID = Self.bundleID(path: request.path) else { return fail(.badPath) }
        guard request.method == "POST" else { return fail(.methodNotAllowed) }
        if shuttingDown.isSet { return fail(.shutdown) }

        let environment: APNsEnvironment
        switch ChannelAPI.admit(request, bundleID: bundleID, registry: registry, connection: &connection, now: now) {
        case .admitted(let e): environment = e
        case .refused(let reason, let note): return fail(reason, note)
        case .refusedAPNs(let reason): return fail(reason)
        }

        guard let channelID = request.channelID else { return fail(.missingChannelId) }
        guard BroadcastChannel.isWellFormed(channelID) else { return fail(.badChannelId) }
        guard let typeText = request.pushType else { return fail(.missingPushType) }
        guard ASCIICase.trimmed(typeText[...]).lowercased() == PushType.liveactivity.rawValue else {
            return fail(.invalidPushType, "a broadcast's apns-push-type is liveactivity")
        }
        var chosenPriority = PushPriority.immediate
        if let text = request.priority {
            guard let value = Int(ASCIICase.trimmed(text[...])), let parsed = PushPriority(rawValue: value),
                parsed != .low
            else { return fail(.badPriority, "apns-priority must be 10 or 5") }
            chosenPriority = parsed
        }
        var givenExpiration: Int64?
        if let text = request.expiration {
            guard let value = Int64(ASCIICase.trimmed(text[...])), value >= 0 else {
                return fail(.badExpirationDate, "apns-expiration must be UNIX seconds, 0 or more")
            }
            givenExpiration = value
        }
        let body = request.body
        if body.readableBytes > Self.maximumPayloadSize { return fail(.payloadTooLarge) }
        if let problem = Self.problem(in: body) { return fail(.badRequestPayload, problem) }

        let store = hub.store
        let hub = self.hub
        let (priority, expiration) = (chosenPriority, givenExpiration)
        let logger = self.logger
        let payload = Data(body.readableBytesView)
        return .perform {
            do {
                guard let channel = try await store.channel(bundleID: bundleID, environment: environment, id: channelID)
                else { return .requestError(.channelNotRegistered, requestID: requestID) }
                if channel.storagePolicy == .noStorage, let expiration, expiration != 0 {
                    return .requestError(
                        .badExpirationDate, requestID: requestID,
                        note: "apns-expiration must be 0 on a channel whose message-storage-policy is 0")
                }
                let message = BroadcastMessage(
                    uniqueID: RandomUUID.timeOrderedLowercaseString(at: now), requestID: requestID,
                    channelID: channelID, bundleID: bundleID, environment: environment,
                    storagePolicy: channel.storagePolicy, priority: priority,
                    expiration: expiration ?? (channel.storagePolicy == .noStorage ? 0 : nil), payload: payload,
                    sentAt: now)
                let sent = try await hub.publish(message)
                logger.info(
                    "broadcast sent",
                    metadata: [
                        "channel": "\(channelID)", "topic": "\(bundleID)", "unique-id": "\(message.uniqueID)",
                        "subscribers-here": "\(sent)",
                    ])
                return .request(200, requestID: requestID, uniqueID: message.uniqueID)
            } catch {
                return ChannelAPI.unavailable(requestID, error)
            }
        }
    }

    /// `/4/broadcasts/apps/<bundle id>` (a query string ignored).
    static func bundleID(path: String) -> String? {
        var path = Substring(path)
        if let q = path.firstIndex(of: "?") { path = path[..<q] }
        guard path.hasPrefix(pathPrefix) else { return nil }
        let bundle = path.dropFirst(pathPrefix.count)
        guard !bundle.isEmpty, !bundle.contains("/") else { return nil }
        return String(bundle)
    }

    /// What is wrong with a broadcast's body, if anything: it must be a JSON object whose `aps`
    /// is an update or end of a Live Activity (a broadcast cannot start one) with its timestamp,
    /// and an update must carry its `content-state`.
    static func problem(in body: ByteBuffer) -> String? {
        guard body.readableBytes > 0 else { return "the body is empty" }
        guard let object = try? JSONDecoder().decode([String: JSONValue].self, from: Data(body.readableBytesView))
        else { return "the body is not a JSON object" }
        guard case .object(let aps) = object["aps"] else { return "the body has no aps object" }
        guard let event = aps["event"]?.stringValue else { return "aps.event is missing" }
        switch event {
        case "update", "end": break
        case "start": return "aps.event start: a broadcast cannot start a Live Activity"
        default: return "aps.event must be update or end"
        }
        switch aps["timestamp"] {
        case .int, .double: break
        default: return "aps.timestamp must be a number of seconds"
        }
        if event == "update", aps["content-state"]?.objectValue == nil {
            return "aps.content-state must be an object"
        }
        return nil
    }
}
