import Crypto
import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import Synchronization

/// A warning as the console shows it: its name, what Apple does quietly, and where Apple says so.
struct WarningView: Codable, Equatable {
    var name: String
    var explanation: String
    var source: String

    init(_ warning: PushWarning) {
        name = warning.rawValue
        explanation = warning.explanation
        source = warning.source
    }
}

/// Private keys (`.p8`) the Send form may start with: `herald up` gives the demo key's here, so a new
/// user's first Send is signed without looking for the file. Kept in memory only, for the
/// signed-in console (the admin token already allows making keys), and only the private half of a
/// key this gateway has.
final class ConsoleSigningKeys: Sendable {
    private let keys = Mutex<[String: String]>([:])

    /// The keys, by key id.
    var all: [String: String] { keys.withLock { $0 } }

    /// Keeps `pem` for `keyID` once it is checked to be that key's private half.
    func set(_ pem: String, for keyID: String, registry: Registry) throws {
        guard let key = registry.key(keyID) else {
            throw HTTPError(.notFound, message: "keyID: \(keyID) is not a key of this gateway")
        }
        guard let privateKey = try? P256.Signing.PrivateKey(pemRepresentation: pem) else {
            throw HTTPError(.badRequest, message: "privateKey: not a P-256 private key in PEM (a .p8 file)")
        }
        guard privateKey.publicKey.x963Representation == key.publicKey else {
            throw HTTPError(.badRequest, message: "privateKey: is not the private half of key \(keyID)")
        }
        keys.withLock { $0[keyID] = pem }
    }

    /// `PUT /console/keys/{keyID}` (body: the `.p8`'s PEM): the Send form starts with this key.
    func addRoutes(to api: RouterGroup<BasicRequestContext>, registry: Registry) {
        api.put("/console/keys/{keyID}") { [self] request, context -> Response in
            let keyID = try context.parameters.require("keyID")
            let body = try await request.body.collect(upTo: 16 * 1024)
            try set(String(buffer: body), for: keyID, registry: registry)
            return Response(status: .noContent)
        }
    }
}

/// The console's Send form (``Console/send(_:)``).
struct ConsoleSendForm: Codable {
    /// `token` (a provider token signed with `privateKey`) or `certificate` (one the gateway issues
    /// for `app`).
    var authentication: String
    var keyID: String?
    /// The `.p8` key (PEM), used to sign and forgotten.
    var privateKey: String?
    var environment: APNsEnvironment
    /// The app (bundle id); the topic is it plus the push type's suffix unless `topic` says otherwise.
    var app: String
    var topic: String?
    var token: String
    var pushType: String?
    var priority: Int?
    var expiration: Int64?
    var collapseID: String?
    var payload: String
    /// Only check the form and give the commands; send nothing.
    var dryRun: Bool?
}

/// A check that failed, naming the key (`aps.badge`) or the form's field (`token`).
struct ConsoleInvalid: Codable {
    var key: String
    var rule: String
    var reason: String?
}

/// What the console checks before it sends a push.
enum ConsoleCheck {
    /// The checks a push passes before the console sends it: what the gateway would refuse (a token,
    /// a payload that is a JSON object within its push type's size, the priority and push type),
    /// each failure naming its key or field. What Apple would accept and handle quietly is not
    /// refused here but named (``PushWarning``), as the gateway names it on its answer.
    static func check(_ form: ConsoleSendForm) -> (invalid: ConsoleInvalid?, warnings: PushWarnings) {
        guard DeviceToken(hex: form.token) != nil else {
            return (
                ConsoleInvalid(key: "token", rule: "a device token is hex (64 characters for Herald's tokens)"), .init()
            )
        }
        if let priority = form.priority, PushPriority(rawValue: priority) == nil {
            return (
                ConsoleInvalid(
                    key: "apns-priority", rule: "must be 10, 5 or 1", reason: APNsReason.badPriority.rawValue),
                .init()
            )
        }
        var given: PushType?
        if let type = form.pushType, !type.isEmpty {
            guard let parsed = PushType(rawValue: type) else {
                return (
                    ConsoleInvalid(
                        key: "apns-push-type", rule: "\(type) is not a push type",
                        reason: APNsReason.invalidPushType.rawValue),
                    .init()
                )
            }
            given = parsed
        }
        let bytes = Array(form.payload.utf8)
        let summary: PayloadSummary
        do {
            summary = try PayloadSummary.scan(bytes)
        } catch {
            return (
                ConsoleInvalid(
                    key: "payload", rule: "is not a JSON object: \(error)", reason: APNsReason.payloadEmpty.rawValue),
                .init()
            )
        }
        let type = given ?? (summary.hasUserVisibleContent ? .alert : .background)
        if bytes.count > type.maximumPayloadSize {
            return (
                ConsoleInvalid(
                    key: "payload",
                    rule:
                        "is \(bytes.count) bytes; the limit for \(type.rawValue) pushes is \(type.maximumPayloadSize)",
                    reason: APNsReason.payloadTooLarge.rawValue),
                .init()
            )
        }
        if type == .background, form.priority == PushPriority.immediate.rawValue {
            return (
                ConsoleInvalid(
                    key: "apns-priority", rule: "background pushes must use priority 5, not 10",
                    reason: APNsReason.badPriority.rawValue),
                .init()
            )
        }
        return (nil, PushWarnings(summary: summary, pushType: type))
    }
}
