import Crypto
import Foundation

/// The device link protocol (`docs/device-link.md`): JSON messages in WebSocket text frames at
/// `/device/v1`, so a browser can be a device.
public enum DeviceLink {
    /// The WebSocket path.
    public static let path = "/device/v1"
    /// The largest message either side accepts (a WebSocket frame or a reassembled fragmented one).
    public static let maximumMessageSize = 1 << 20
    /// What a device signs to prove it holds its key: these bytes followed by the server's nonce.
    public static let signaturePrefix = Array("herald-device-link-v1\n".utf8)
    /// The bytes a device signs for a nonce.
    public static func signedBytes(nonce: Data) -> Data { Data(signaturePrefix) + nonce }
    /// What a device resuming with a ticket authenticates: these bytes followed by the server's nonce.
    public static let resumePrefix = Array("herald-device-link-resume-v1\n".utf8)

    /// The proof a device sends with a resumption ticket: HMAC-SHA256 under the ticket's secret over
    /// ``resumePrefix`` followed by the challenge's nonce (docs/device-link.md, "Resuming").
    public static func resumeProof(secret: Data, nonce: Data) -> Data {
        Data(HMAC<SHA256>.authenticationCode(for: resumedBytes(nonce: nonce), using: SymmetricKey(data: secret)))
    }
    /// The bytes a resumption's proof authenticates for a nonce.
    public static func resumedBytes(nonce: Data) -> Data { Data(resumePrefix) + nonce }

    /// The `Sec-WebSocket-Accept` that answers a `Sec-WebSocket-Key` (RFC 6455 §4.2.2): SHA-1 of
    /// the key followed by the protocol's GUID, in base64.
    public static func webSocketAccept(key: String) -> String {
        Data(Insecure.SHA1.hash(data: Data((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)))
            .base64EncodedString()
    }

    /// Whether one of a header's `values`, a comma-separated list (RFC 9110 §5.6.1), names `token`
    /// (lowercase ASCII), compared without regard to ASCII case and with the whitespace around each
    /// element ignored: what both sides of the opening handshake look for in `Upgrade` and
    /// `Connection`. Reads the bytes in place, without splitting, trimming or lowercasing copies
    /// (in a reconnection storm, those had been a twentieth of a device's CPU).
    public static func header(_ values: [String], lists token: String) -> Bool {
        let wanted = token.utf8
        for value in values {
            let bytes = value.utf8
            var start = bytes.startIndex
            while start < bytes.endIndex {
                let end = bytes[start...].firstIndex(of: UInt8(ascii: ",")) ?? bytes.endIndex
                var (first, last) = (start, end)
                while first < last, isWhitespace(bytes[first]) { first = bytes.index(after: first) }
                while last > first, isWhitespace(bytes[bytes.index(before: last)]) { last = bytes.index(before: last) }
                if bytes[first..<last].elementsEqual(wanted, by: { asciiLowercased($0) == $1 }) { return true }
                start = end == bytes.endIndex ? end : bytes.index(after: end)
            }
        }
        return false
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }

    private static func asciiLowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }
}

/// A broadcast as it travels down the device link to every device subscribed to its channel
/// (docs/broadcast.md): not acknowledged, since the channel's stored message (storage policy 1)
/// is what a device that missed it gets when it connects again.
public struct LinkBroadcast: Sendable, Equatable {
    /// The broadcast's `apns-unique-id`; a device drops a second copy by it.
    public var uniqueID: String
    /// `apns-channel-id`.
    public var channelID: String
    /// The app's Live Activity topic, `<bundle id>.push-type.liveactivity`.
    public var topic: String
    /// The channel's environment.
    public var environment: APNsEnvironment
    /// `apns-priority`.
    public var priority: PushPriority
    /// `apns-expiration` as UNIX seconds (0 = now only); `nil` when the provider gave none.
    public var expiration: Int64?
    /// The payload, byte for byte.
    public var payload: Data

    /// Creates a broadcast.
    public init(
        uniqueID: String, channelID: String, topic: String, environment: APNsEnvironment, priority: PushPriority,
        expiration: Int64?, payload: Data
    ) {
        self.uniqueID = uniqueID
        self.channelID = channelID
        self.topic = topic
        self.environment = environment
        self.priority = priority
        self.expiration = expiration
        self.payload = payload
    }
}

/// One app registered on a device: its topic, environment and token.
public struct LinkRegistration: Sendable, Equatable, Codable {
    /// The app's bundle id (its topic).
    public var topic: String
    /// The environment.
    public var environment: APNsEnvironment
    /// The token providers push to.
    public var token: DeviceToken
    /// What the token is for beyond the app's own notifications (a Live Activity's, a push-to-start
    /// token); `nil` for the app's token.
    public var scope: TokenScope?

    /// Creates a registration.
    public init(topic: String, environment: APNsEnvironment, token: DeviceToken, scope: TokenScope? = nil) {
        self.topic = topic
        self.environment = environment
        self.token = token
        self.scope = scope
    }
}

/// A device link message, either way.
public enum LinkMessage: Sendable, Equatable {
    // Gateway → device
    /// First message on every connection: the device signs `nonce` to authenticate.
    case challenge(nonce: Data)
    /// The device is authenticated: its id, generation and current registrations, and a ticket
    /// to resume with next time (none when the gateway gives no tickets).
    case welcome(device: String, generation: Int, registrations: [LinkRegistration], ticket: LinkTicket? = nil)
    /// Answer to `register`: the app's token.
    case token(request: Int?, LinkRegistration)
    /// Answer to `unregister`.
    case unregistered(request: Int?, topic: String, environment: APNsEnvironment)
    /// The device was reset (by itself or an administrator): every token it had is void.
    case reset(request: Int?, generation: Int)
    /// A notification; the device answers with `ack`.
    case push(LinkPush)
    /// Answer to `subscribe` and `unsubscribe`: every channel the app is subscribed to now.
    case subscribed(request: Int?, topic: String, environment: APNsEnvironment, channels: [String])
    /// An update broadcast on a channel the device subscribed to; not acknowledged.
    case broadcast(LinkBroadcast)
    /// A request failed (`request` says which), or the connection is refused (`request` nil).
    case error(request: Int?, code: LinkErrorCode, message: String)
    /// The gateway is stopping and closes the link next (1001): connect again after a random wait of
    /// up to `reconnectWithin` ms, to another node when there is one (docs/device-link.md, "Draining").
    case goAway(reconnectWithin: Int)

    // Device → gateway
    /// Authentication: the device id (nil on first contact = let the gateway choose), its public key
    /// (P-256, X9.63 uncompressed, required the first time) and the signature of the nonce
    /// (ECDSA P-256 SHA-256, raw r‖s).
    case hello(device: String?, publicKey: Data?, signature: Data)
    /// Authentication with a ticket from an earlier `welcome`, instead of a signature: the device
    /// id, the ticket, and ``DeviceLink/resumeProof(secret:nonce:)`` over the challenge's nonce.
    /// A refused ticket is answered with `TicketRefused`, and the link waits for a signed `hello`.
    case resume(device: String, ticket: Data, proof: Data)
    /// Registers an app for remote notifications. `installation` counts the app's installs on the
    /// device (absent: the first): a reinstalled app gets a new token, as on today's iOS.
    case register(request: Int?, topic: String, environment: APNsEnvironment, installation: Int? = nil)
    /// Removes an app.
    case unregister(request: Int?, topic: String, environment: APNsEnvironment)
    /// Asks for one of an app's scoped tokens (a Live Activity's, a push-to-start token); answered
    /// with `token`, the same token each time for the same scope.
    case registerScope(request: Int?, topic: String, environment: APNsEnvironment, scope: TokenScope)
    /// Gives a scoped token up (the activity ended): pushes to it answer 410 `Unregistered`;
    /// answered with `unregistered`.
    case unregisterScope(request: Int?, topic: String, environment: APNsEnvironment, scope: TokenScope)
    /// Asks the gateway to reset this device (new generation, new tokens).
    case resetDevice(request: Int?)
    /// Acknowledges notifications by `apns-id`.
    case ack([String])
    /// Subscribes an app (its bundle id, in one environment) to broadcast channels, for as long as
    /// this connection lasts: a device sends its subscriptions again each time it connects.
    case subscribe(request: Int?, topic: String, environment: APNsEnvironment, channels: [String])
    /// Ends an app's subscriptions to channels.
    case unsubscribe(request: Int?, topic: String, environment: APNsEnvironment, channels: [String])
    /// A notification the device acknowledged but could not use (its payload unreadable, its app
    /// not installed, or refused by the notification center): the gateway writes it into the push's
    /// delivery log. `reason` names the key when the payload is at fault.
    case refused(apnsID: String, reason: String)
}

/// A device link message that could not be read.
public struct LinkMessageError: Error, Equatable, CustomStringConvertible {
    /// What was wrong, naming the field.
    public var description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}

extension LinkMessage {
    /// The message as JSON (one WebSocket text frame).
    public func encoded() -> Data {
        switch self {
        case .push(let push): return Data(push.encodedMessage())
        case .ack(let ids): return Data(Self.encodedAck(ids))
        default: break
        }
        let e = envelope
        if let flat = e.flatJSON() { return Data(flat) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // Encoding a struct of strings, numbers and Data cannot fail.
        return (try? encoder.encode(e)) ?? Data()
    }

    /// The message in the flat form every message shares (not for `push` and `ack`, which are
    /// written by hand).
    var envelope: Envelope {
        var e: Envelope
        switch self {
        case .challenge(let nonce):
            e = Envelope(type: "challenge")
            e.nonce = nonce
        case .welcome(let device, let generation, let registrations, let ticket):
            e = Envelope(type: "welcome")
            e.device = device
            e.generation = generation
            e.registrations = registrations
            e.ticket = ticket?.ticket
            e.ticketSecret = ticket?.secret
            e.ticketExpires = ticket?.expires
        case .token(let request, let r):
            e = Envelope(type: "token")
            e.request = request
            e.topic = r.topic
            e.environment = r.environment
            e.token = r.token
            e.scope = r.scope
        case .unregistered(let request, let topic, let environment):
            e = Envelope(type: "unregistered")
            e.request = request
            e.topic = topic
            e.environment = environment
        case .reset(let request, let generation):
            e = Envelope(type: "reset")
            e.request = request
            e.generation = generation
        case .error(let request, let code, let message):
            e = Envelope(type: "error")
            e.request = request
            e.code = code.rawValue
            e.message = message
        case .goAway(let within):
            e = Envelope(type: "goaway")
            e.reconnectWithin = within
        case .hello(let device, let publicKey, let signature):
            e = Envelope(type: "hello")
            e.device = device
            e.publicKey = publicKey
            e.signature = signature
        case .resume(let device, let ticket, let proof):
            e = Envelope(type: "resume")
            e.device = device
            e.ticket = ticket
            e.proof = proof
        case .register(let request, let topic, let environment, let installation):
            e = Envelope(type: "register")
            e.request = request
            e.topic = topic
            e.environment = environment
            e.installation = installation
        case .unregister(let request, let topic, let environment):
            e = Envelope(type: "unregister")
            e.request = request
            e.topic = topic
            e.environment = environment
        case .registerScope(let request, let topic, let environment, let scope),
            .unregisterScope(let request, let topic, let environment, let scope):
            if case .registerScope = self {
                e = Envelope(type: "registerScope")
            } else {
                e = Envelope(type: "unregisterScope")
            }
            e.request = request
            e.topic = topic
            e.environment = environment
            e.scope = scope
        case .resetDevice(let request):
            e = Envelope(type: "resetDevice")
            e.request = request
        case .refused(let apnsID, let reason):
            e = Envelope(type: "refused")
            e.apnsID = apnsID
            e.message = reason
        case .subscribe(let request, let topic, let environment, let channels),
            .unsubscribe(let request, let topic, let environment, let channels),
            .subscribed(let request, let topic, let environment, let channels):
            e = Envelope(
                type: {
                    switch self {
                    case .subscribe: "subscribe"
                    case .unsubscribe: "unsubscribe"
                    default: "subscribed"
                    }
                }())
            e.request = request
            e.topic = topic
            e.environment = environment
            e.channels = channels
        case .broadcast(let b):
            e = Envelope(type: "broadcast")
            e.uniqueID = b.uniqueID
            e.channelID = b.channelID
            e.topic = b.topic
            e.environment = b.environment
            e.priority = b.priority
            e.expiration = b.expiration
            e.payload = b.payload
        case .push, .ack:
            preconditionFailure("push and ack are written by hand")
        }
        return e
    }

    /// Reads a message; the error names what is missing or malformed.
    ///
    /// Messages with only strings, integers and arrays of strings (every `push` and `ack`) are
    /// read without `JSONDecoder`, a `push` in the very form the gateway writes in one pass
    /// (``LinkPush/init(gatewayForm:)``); anything else, and anything those readers decline, is
    /// decoded by `JSONDecoder`.
    public init(json: Data) throws(LinkMessageError) {
        if let push = json.withUnsafeBytes({ LinkPush(gatewayForm: $0) }) {
            self = .push(push)
            return
        }
        let fast = json.withUnsafeBytes { Envelope(flatJSON: $0) }
        if let fast {
            try self.init(envelope: fast)
        } else {
            try self.init(envelope: Self.decodeEnvelope(json))
        }
    }

    /// Reads a message from bytes in place (a WebSocket frame's), as ``init(json:)`` reads it,
    /// copying them only when `JSONDecoder` has to decide.
    public init(json bytes: UnsafeRawBufferPointer) throws(LinkMessageError) {
        if let push = LinkPush(gatewayForm: bytes) {
            self = .push(push)
        } else if let fast = Envelope(flatJSON: bytes) {
            try self.init(envelope: fast)
        } else {
            try self.init(envelope: Self.decodeEnvelope(Data(bytes)))
        }
    }

    init(envelope e: Envelope) throws(LinkMessageError) {
        func need<T>(_ value: T?, _ name: String) throws(LinkMessageError) -> T {
            guard let value else { throw LinkMessageError("\(e.type) needs \"\(name)\"") }
            return value
        }
        switch e.type {
        case "challenge": self = .challenge(nonce: try need(e.nonce, "nonce"))
        case "welcome":
            var ticket: LinkTicket?
            if let sealed = e.ticket {
                ticket = LinkTicket(
                    ticket: sealed, secret: try need(e.ticketSecret, "ticketSecret"),
                    expires: try need(e.ticketExpires, "ticketExpires"))
            }
            self = .welcome(
                device: try need(e.device, "device"), generation: try need(e.generation, "generation"),
                registrations: e.registrations ?? [], ticket: ticket)
        case "token":
            self = .token(
                request: e.request,
                LinkRegistration(
                    topic: try need(e.topic, "topic"), environment: try need(e.environment, "environment"),
                    token: try need(e.token, "token"), scope: e.scope))
        case "unregistered":
            self = .unregistered(
                request: e.request, topic: try need(e.topic, "topic"),
                environment: try need(e.environment, "environment"))
        case "reset": self = .reset(request: e.request, generation: try need(e.generation, "generation"))
        case "goaway":
            let within = try need(e.reconnectWithin, "reconnectWithin")
            guard within >= 0 else { throw LinkMessageError("goaway needs \"reconnectWithin\" of 0 or more") }
            self = .goAway(reconnectWithin: within)
        case "error":
            self = .error(
                request: e.request, code: LinkErrorCode(rawValue: try need(e.code, "code")), message: e.message ?? "")
        case "push":
            self = .push(
                LinkPush(
                    apnsID: try need(e.apnsID, "apnsID"), uniqueID: e.uniqueID, topic: try need(e.topic, "topic"),
                    token: try need(e.token, "token"), environment: try need(e.environment, "environment"),
                    pushType: try need(e.pushType, "pushType"), priority: try need(e.priority, "priority"),
                    expiration: e.expiration, collapseID: e.collapseID, payload: try need(e.payload, "payload")))
        case "hello":
            self = .hello(device: e.device, publicKey: e.publicKey, signature: try need(e.signature, "signature"))
        case "resume":
            self = .resume(
                device: try need(e.device, "device"), ticket: try need(e.ticket, "ticket"),
                proof: try need(e.proof, "proof"))
        case "register":
            self = .register(
                request: e.request, topic: try need(e.topic, "topic"),
                environment: try need(e.environment, "environment"), installation: e.installation)
        case "unregister":
            self = .unregister(
                request: e.request, topic: try need(e.topic, "topic"),
                environment: try need(e.environment, "environment"))
        case "registerScope", "unregisterScope":
            let (topic, environment) = (try need(e.topic, "topic"), try need(e.environment, "environment"))
            let scope = try need(e.scope, "scope")
            self =
                e.type == "registerScope"
                ? .registerScope(request: e.request, topic: topic, environment: environment, scope: scope)
                : .unregisterScope(request: e.request, topic: topic, environment: environment, scope: scope)
        case "resetDevice": self = .resetDevice(request: e.request)
        case "ack": self = .ack(try need(e.ids, "ids"))
        case "refused": self = .refused(apnsID: try need(e.apnsID, "apnsID"), reason: try need(e.message, "message"))
        case "subscribe", "unsubscribe", "subscribed":
            let topic = try need(e.topic, "topic")
            let environment = try need(e.environment, "environment")
            let channels = try need(e.channels, "channels")
            switch e.type {
            case "subscribe":
                self = .subscribe(request: e.request, topic: topic, environment: environment, channels: channels)
            case "unsubscribe":
                self = .unsubscribe(request: e.request, topic: topic, environment: environment, channels: channels)
            default:
                self = .subscribed(request: e.request, topic: topic, environment: environment, channels: channels)
            }
        case "broadcast":
            self = .broadcast(
                LinkBroadcast(
                    uniqueID: try need(e.uniqueID, "uniqueID"), channelID: try need(e.channelID, "channelID"),
                    topic: try need(e.topic, "topic"), environment: try need(e.environment, "environment"),
                    priority: try need(e.priority, "priority"), expiration: e.expiration,
                    payload: try need(e.payload, "payload")))
        default: throw LinkMessageError("unknown message type \(TextExcerpt.quoted(e.type, limit: 64))")
        }
    }

    /// Decodes with `JSONDecoder`, turning its errors into ones that name the field.
    static func decodeEnvelope(_ json: Data) throws(LinkMessageError) -> Envelope {
        do {
            return try JSONDecoder().decode(Envelope.self, from: json)
        } catch let DecodingError.keyNotFound(key, _) {
            throw LinkMessageError("missing field \"\(key.stringValue)\"")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            throw LinkMessageError(
                "field \"\(context.codingPath.map(\.stringValue).joined(separator: "."))\" has the wrong type")
        } catch let DecodingError.dataCorrupted(context) {
            let field = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw LinkMessageError(field.isEmpty ? "not a JSON object" : "field \"\(field)\" is malformed")
        } catch {
            throw LinkMessageError("not a JSON object")
        }
    }
}

extension LinkMessage {
    /// The `ack` message, written by hand: a device sends one per read of notifications.
    static func encodedAck(_ ids: [String]) -> [UInt8] {
        var w = JSONWriter(capacity: 24 + ids.count * 40)
        w.raw(#"{"type":"ack","ids":["#)
        for (i, id) in ids.enumerated() {
            if i > 0 { w.raw(",") }
            w.string(id)
        }
        w.raw("]}")
        return w.bytes
    }
}
