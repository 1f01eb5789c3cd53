import Crypto
import Foundation
import HTTPTypes
import HeraldCore
import HeraldRuntime
import Hummingbird
import NIOCore
import ServiceLifecycle

/// The push console (docs/console.md): the page at the admin listener's `/console`, its sign-in, and
/// what it needs beside the admin API (which it calls with its session): its settings, the payload
/// check, the send, and the live counters.
struct Console: Sendable {
    let session: ConsoleSession
    let sender: ConsoleSender
    let directory: GatewayDirectory
    let router: PushRouter
    let clock: any WallClock
    /// Whether the console is served over TLS (the cookie is then `Secure`).
    let secure: Bool
    /// The CA certificate's path, for the commands the console shows.
    let caCertificatePath: String
    /// How long the delivery log keeps a push.
    let logRetention: TimeInterval
    /// The `.p8` keys the Send form starts with (the demo key's, under `herald up`).
    var signingKeys = ConsoleSigningKeys()

    static let files = WebResources(bundle: "Herald_HeraldGateway", folder: "Console")

    /// The page, its files and the sign-in: no session needed.
    func addPublicRoutes(to router: Router<BasicRequestContext>) {
        router.get("/console") { _, _ in try Self.files.response("index.html") }
        router.get("/console/files/{file}") { _, context in
            try Self.files.response(try context.parameters.require("file"))
        }
        let session = self.session
        let clock = self.clock
        let secure = self.secure
        router.post("/console/session") { request, context -> Response in
            // A sign-in another site's page posts would sign the user in to the attacker's choice.
            try AdminAuthentication.requireSameOrigin(request)
            struct SignIn: Decodable { var token: String }
            let body = try await request.decode(as: SignIn.self, context: context)
            guard session.isAdminToken(body.token.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw HTTPError(.unauthorized, message: "token: not this gateway's admin token")
            }
            let cookie = session.cookie(now: clock.now())
            var response = try PreciseJSON.response(SessionView(session: session, cookie: cookie, now: clock.now()))
            response.headers[.setCookie] = session.setCookie(cookie, secure: secure)
            return response
        }
    }

    struct SessionView: Codable {
        var csrf: String
        var expires: Date
        init(session: ConsoleSession, cookie: String, now: Date) {
            csrf = session.csrfToken(for: cookie)
            expires = session.expiry(of: cookie, now: now) ?? now
        }
    }

    /// What the page asks for once signed in (behind ``AdminAuthentication``).
    func addRoutes(to api: RouterGroup<BasicRequestContext>) {
        let session = self.session
        let clock = self.clock
        let secure = self.secure
        api.get("/console/session") { request, _ -> Response in
            // Signed in with a bearer token (curl): there is no cookie and no CSRF token to give.
            guard let cookie = ConsoleSession.cookie(in: request.headers[.cookie]) else {
                throw HTTPError(.notFound, message: "no console session: sign in at /console")
            }
            return try PreciseJSON.response(SessionView(session: session, cookie: cookie, now: clock.now()))
        }
        api.delete("/console/session") { _, _ -> Response in
            var response = Response(status: .noContent)
            response.headers[.setCookie] = ConsoleSession.clearCookie(secure: secure)
            return response
        }
        api.get("/console/settings") { _, _ -> Response in try PreciseJSON.response(self.settings) }
        signingKeys.addRoutes(to: api, registry: directory.registry)
        api.post("/console/send") { request, context -> Response in
            let form = try await request.decode(as: SendForm.self, context: context)
            return try PreciseJSON.response(try await self.send(form))
        }
        let push = self.router
        api.get("/console/events") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
                body: ResponseBody { writer in try await Self.stream(push, to: &writer) })
        }
    }

    // MARK: Settings

    struct PushTypeView: Codable {
        var name: String
        var topicSuffix: String?
        var maximumPayloadSize: Int
    }

    struct ReasonView: Codable {
        var name: String
        var status: Int
    }

    struct Settings: Codable {
        var pushTypes: [PushTypeView]
        /// Every APNs reason, for the fault rules.
        var reasons: [ReasonView]
        var providerURL: String
        var developmentURL: String?
        var caCertificate: String
        var logRetentionDays: Double
        var historyRows: Int
        /// Every ``PushWarning``, for the Send view and the delivery log.
        var warnings: [WarningView]
        /// Private keys the Send form starts with, by key id (``ConsoleSigningKeys``).
        var signingKeys: [String: String]
        /// Apple's delivery states with Apple's names for them.
        var states: [DeliveryMetricsView.StateView]
    }

    var settings: Settings {
        Settings(
            pushTypes: PushType.allCases.map {
                PushTypeView(name: $0.rawValue, topicSuffix: $0.topicSuffix, maximumPayloadSize: $0.maximumPayloadSize)
            },
            reasons: APNsReason.allCases.map { ReasonView(name: $0.rawValue, status: $0.status) },
            providerURL: "https://localhost:\(sender.targets.tlsPort)",
            developmentURL: sender.targets.developmentPort.map { "http://127.0.0.1:\($0)" },
            caCertificate: caCertificatePath, logRetentionDays: logRetention / 86400,
            historyRows: DeliveryHistory.rowsRead, warnings: PushWarning.allCases.map(WarningView.init),
            signingKeys: signingKeys.all,
            states: AppleDeliveryState.allCases.map { .init(name: $0, title: $0.title) })
    }

    // MARK: Send

    /// The Send form (``ConsoleSendForm``).
    typealias SendForm = ConsoleSendForm
    /// A check that failed (``ConsoleInvalid``).
    typealias Invalid = ConsoleInvalid

    /// What the page shows after Send.
    struct SendResult: Codable {
        /// The payload or form failed its checks: nothing was sent.
        var invalid: Invalid?
        /// What Apple would do quietly with the push: as the gateway answered (`herald-warnings`),
        /// or, for a dry run, as the console's own check found.
        var warnings: [WarningView]?
        var answer: ConsoleSender.Answer?
        var curl: String
        var herald: String
    }

    func send(_ form: SendForm) async throws -> SendResult {
        let pushType = form.pushType.flatMap { $0.isEmpty ? nil : $0 }
        let topic =
            form.topic.flatMap { $0.isEmpty ? nil : $0 }
            ?? form.app + (pushType.flatMap(PushType.init(rawValue:))?.topicSuffix ?? "")
        var headers: [(String, String)] = [("apns-topic", topic)]
        if let pushType { headers.append(("apns-push-type", pushType)) }
        if let priority = form.priority { headers.append(("apns-priority", String(priority))) }
        if let expiration = form.expiration { headers.append(("apns-expiration", String(expiration))) }
        if let collapse = form.collapseID, !collapse.isEmpty { headers.append(("apns-collapse-id", collapse)) }
        let body = Data(form.payload.utf8)
        let path = "/3/device/\(form.token)"
        let (invalid, warnings) = ConsoleCheck.check(form)
        func result(_ invalid: Invalid?, _ answer: ConsoleSender.Answer?, jwt: String?) -> SendResult {
            let said = answer.map { PushWarnings(headerValue: $0.warnings ?? "") } ?? warnings
            return SendResult(
                invalid: invalid, warnings: invalid == nil && !said.isEmpty ? said.map(WarningView.init) : nil,
                answer: answer,
                curl: curl(path: path, headers: headers, payload: form.payload, form: form, jwt: jwt),
                herald: herald(form, topic: topic))
        }
        if let invalid { return result(invalid, nil, jwt: nil) }
        guard ["token", "certificate"].contains(form.authentication) else {
            return result(Invalid(key: "authentication", rule: "token or certificate"), nil, jwt: nil)
        }

        let authentication: ConsoleSender.Authentication
        var jwt: String?
        if form.authentication == "certificate" {
            guard directory.registry.app(form.app) != nil else {
                return result(Invalid(key: "app", rule: "\(form.app) is not an app of this gateway"), nil, jwt: nil)
            }
            let key = P256.Signing.PrivateKey()
            let certificate = try sender.ca.issueAppCertificate(
                bundleID: form.app, environments: [form.environment], key: key, validity: 3600, now: clock.now())
            authentication = .certificate(
                chainPEM: try certificate.serializeAsPEM().pemString, keyPEM: key.pemRepresentation)
        } else {
            guard let keyID = form.keyID, let key = directory.registry.key(keyID) else {
                return result(Invalid(key: "keyID", rule: "choose a key of this gateway"), nil, jwt: nil)
            }
            let privateKey: P256.Signing.PrivateKey
            do {
                privateKey = try P256.Signing.PrivateKey(pemRepresentation: form.privateKey ?? "")
            } catch {
                return result(
                    Invalid(key: "privateKey", rule: "paste or choose the key's .p8 file (PEM, P-256)"), nil, jwt: nil)
            }
            guard privateKey.publicKey.x963Representation == key.publicKey else {
                return result(
                    Invalid(key: "privateKey", rule: "is not the private half of key \(keyID)"), nil, jwt: nil)
            }
            jwt = try ProviderTokenSigner.token(
                keyID: keyID, teamID: key.teamID, privateKey: privateKey, issuedAt: clock.now())
            authentication = .token(jwt!)
        }
        if form.dryRun == true { return result(nil, nil, jwt: jwt) }
        do {
            let answer = try await sender.send(
                path: path, headers: headers, body: body, environment: form.environment,
                authentication: authentication)
            return result(nil, answer, jwt: jwt)
        } catch {
            // No answer at all (the listener gone, a TLS failure): say which and why.
            throw HTTPError(
                .badGateway, message: "no answer from the gateway's provider API: \(error)")
        }
    }

    /// The same push as a `curl` command.
    func curl(path: String, headers: [(String, String)], payload: String, form: SendForm, jwt: String?) -> String {
        let authority = form.environment == .production ? "api.push.apple.com" : "api.sandbox.push.apple.com"
        let bearer = "-H " + Self.quoted("authorization: bearer \(jwt ?? "<provider token>")")
        var lines: [String]
        if form.authentication == "token", let development = sender.targets.developmentPort {
            lines = [
                "curl -i --http2-prior-knowledge http://127.0.0.1:\(development)\(path) \\",
                "  -H 'host: \(authority)' \(bearer) \\",
            ]
        } else {
            // TLS: the gateway's certificate names localhost; `host` gives the environment.
            let certificate = Self.quoted(Self.certificateFile(app: form.app))
            lines = [
                "curl -i --http2 --cacert \(Self.quoted(caCertificatePath)) https://localhost:\(sender.targets.tlsPort)\(path) \\",
                "  -H 'host: \(authority)' "
                    + (form.authentication == "certificate" ? "--cert \(certificate)" : bearer) + " \\",
            ]
        }
        lines.append("  " + headers.map { "-H \(Self.quoted("\($0.0): \($0.1)"))" }.joined(separator: " ") + " \\")
        lines.append("  --data-binary \(Self.quoted(payload))")
        return lines.joined(separator: "\n")
    }

    /// The same push as a `herald push` command (the payload from a file).
    func herald(_ form: SendForm, topic: String) -> String {
        var arguments = [
            "herald push payload.json", "--url https://localhost:\(sender.targets.tlsPort)",
            "--ca \(Self.quoted(caCertificatePath))",
        ]
        if form.authentication == "certificate" {
            let certificate = Self.quoted(Self.certificateFile(app: form.app))
            arguments.append("--cert \(certificate) --cert-key \(certificate)")
        } else {
            let keyID = form.keyID ?? "<key id>"
            let team = form.keyID.flatMap { directory.registry.key($0)?.teamID } ?? "<team id>"
            arguments.append("--p8 AuthKey_\(keyID).p8 --key-id \(keyID) --team \(team)")
        }
        arguments.append("--topic \(Self.quoted(topic)) --token \(form.token)")
        if let type = form.pushType, !type.isEmpty { arguments.append("--push-type \(type)") }
        if let priority = form.priority { arguments.append("--priority \(priority)") }
        if let expiration = form.expiration { arguments.append("--expiration \(expiration)") }
        if let collapse = form.collapseID, !collapse.isEmpty {
            arguments.append("--collapse-id \(Self.quoted(collapse))")
        }
        return "cat > payload.json <<'EOF'\n\(form.payload)\nEOF\n" + arguments.joined(separator: " \\\n  ")
    }

    /// The file *Devices & apps* downloads an app's certificate and key to (one PEM), as the commands
    /// name it.
    static func certificateFile(app: String) -> String { "\(app).pem" }

    /// A word for a POSIX shell, in single quotes.
    static func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }

    // MARK: Live counters

    /// How often the live counters go out.
    static let tick = Duration.seconds(1)

    /// Writes the metrics (Prometheus text, the very counters `/metrics` shows) as a Server-Sent Event
    /// every ``tick`` until the page goes or the gateway shuts down.
    static func stream(_ push: PushRouter, to writer: inout some ResponseBodyWriter) async throws {
        let (ticks, sink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let ticker = Task {
            repeat { sink.yield() } while (try? await Task.sleep(for: tick)) != nil
            sink.finish()
        }
        defer { ticker.cancel() }
        try await writer.write(ByteBuffer(string: ": herald console\n\n"))
        for await _ in ticks.cancelOnGracefulShutdown() {
            let text = await push.metricsText()
            var event = ByteBuffer(string: "event: metrics\n")
            for line in String(decoding: text, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
                event.writeString("data: \(line)\n")
            }
            event.writeString("\n")
            try await writer.write(event)
        }
        try await writer.finish(nil)
    }
}
