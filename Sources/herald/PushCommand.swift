import ArgumentParser
import Foundation
import HeraldCore
import HeraldNIO
import HeraldGateway
import HeraldProvider

extension PushType: ExpressibleByArgument {}

struct PushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Send a push through a Herald gateway (or Apple) with HeraldProvider.",
        discussion: """
            Without --url the push goes to the gateway of `herald up` (read from .herald/up.json: its TLS \
            URL, CA, key and demo app), to the demo device unless --token, --tokens-file or --device says \
            otherwise. Many tokens go over one HTTP/2 connection (or --connections of them), --concurrency \
            streams at a time (at most --rate a second), with a progress bar on a terminal (lines otherwise) \
            and a summary by status and reason that lists the tokens to drop (410, with their timestamps).
            Examples:
              herald push --alert "Hello"
              herald push --title Lunch --alert "Pizza is here" --badge 3 --sound default
              # the file's "Simulator Target Bundle" gives the topic:
              herald push payload.apns
              herald push --tokens-file tokens.txt --alert "Sale" \\
                  --concurrency 200 --rate 5000
              # every device with the app, from the admin API:
              herald push --device all --alert "Everyone"
              herald push --live-activity update --token <64 hex> \\
                  --content-state '{"stop":3}' --alert "Almost there"
              herald push --apple sandbox --p8 AuthKey_ABC.p8 --key-id ABC1234567 \\
                  --team DEF1234567 --topic com.example.app --token <64 hex> --alert Hi
            """)

    @Argument(help: "An .apns file (a JSON payload with \"Simulator Target Bundle\").")
    var apnsFile: String?

    @Option(name: .long, help: "The device token (64 hex characters).")
    var token: String?
    @Option(
        name: [.customLong("tokens-file"), .customLong("tokens")],
        help: "A file of device tokens, one per line (# starts a comment): send to each.")
    var tokens: String?
    @Option(
        name: .long,
        help: ArgumentHelp(
            "A device id: its token for the topic's app, from the gateway's admin API (up.json's, or --admin); "
                + "`all`: every device's.", valueName: "id|all"))
    var device: String?
    @Option(name: .long, help: "With --device: the admin API's URL (default: up.json's adminURL).")
    var admin: String?
    @Option(name: .long, help: "With --device: a file holding the admin token (default: up.json's adminToken).")
    var adminTokenFile: String?
    @Option(name: .long, help: "With --device: the tokens' environment (development or production).")
    var environment: String = "development"
    @Option(name: .long, help: "apns-topic: the app's bundle id.")
    var topic: String?

    @Option(name: .long, help: "Alert text (the body when --title is given).")
    var alert: String?
    @Option(name: .long, help: "Alert title.")
    var title: String?
    @Option(name: .long, help: "Alert subtitle.")
    var subtitle: String?
    @Option(name: .long, help: "Badge number (0 clears it).")
    var badge: Int?
    @Option(name: .long, help: "Sound: default or a file name.")
    var sound: String?
    @Option(name: .long, help: "Category identifier (its actions are shown).")
    var category: String?
    @Option(name: .long, help: "Thread identifier.")
    var thread: String?
    @Flag(name: .long, help: "Set content-available: wake the app in the background.")
    var contentAvailable = false
    @Flag(name: .long, help: "Set mutable-content: the app's service extension may change it.")
    var mutableContent = false
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Send a Live Activity push (start, update or end) built from the Live Activity options, with "
                + "--alert/--title/--sound as its alert; the topic gets .push-type.liveactivity.",
            valueName: "event"))
    var liveActivity: APNsLiveActivity.Event?
    @OptionGroup(title: "Live Activity") var activity: LiveActivityOptions
    @Option(name: .long, help: "A file with the whole JSON payload.")
    var payload: String?

    @Option(name: .long, help: "apns-priority: 10, 5 or 1.")
    var priority: Int?
    @Option(name: .long, help: "apns-expiration: UNIX seconds (0 = deliver now or never).")
    var expiration: Int64?
    @Option(name: .long, help: "apns-collapse-id.")
    var collapseId: String?
    @Option(name: .long, help: "apns-push-type: alert, background, voip, …")
    var pushType: PushType?
    @Option(name: .long, help: "apns-id (default: a new UUID).")
    var apnsId: String?

    @Option(name: .long, help: "Send to Apple instead: sandbox or production.")
    var apple: String?
    @Option(name: .long, help: "The gateway's base URL, e.g. https://localhost:2197.")
    var url: String?
    @OptionGroup var credentials: ProviderCredentials
    @Flag(
        name: .long,
        help: "Send over the legacy binary interface (TLS with an app certificate, which names the topic).")
    var binary = false
    @Option(name: .long, help: "With --binary: the binary gateway's host:port (default: up.json's binaryAddress).")
    var binaryAddress: String?
    @Option(name: .long, help: "With --binary: command 0 (simple), 1 (enhanced) or 2 (frame, the default).")
    var binaryCommand: UInt8 = 2
    @Option(
        name: .long,
        help: "With --binary: the TLS server name the gateway's certificate must carry (default: the host).")
    var serverName: String?
    @OptionGroup var up: UpOption
    @Option(name: .long, help: "With many tokens: requests in flight at once (streams over the connections).")
    var concurrency = 100
    @Option(name: .long, help: "HTTP/2 connections to the server, which requests take in turn.")
    var connections = 1
    @Option(name: .long, help: "With many tokens: at most this many pushes a second (0 = as fast as answered).")
    var rate: Double = 0
    @Option(name: .long, help: "Seconds one push may take, retries included.")
    var timeout: Double = 30
    @Flag(name: .long, help: "Print the result as JSON.")
    var json = false

    func validate() throws {
        if [token != nil, tokens != nil, device != nil].filter({ $0 }).count > 1 {
            throw ValidationError("give one of --token, --tokens-file and --device")
        }
        if !(rate >= 0) { throw ValidationError("--rate must not be negative") }
        if rate > 0 && rate < 0.001 { throw ValidationError("--rate must be 0 (no limit) or at least 0.001 a second") }
        if !(rate <= 1e9) { throw ValidationError("--rate must be at most 1000000000 a second") }
        if environment != "development" && environment != "production" {
            throw ValidationError("--environment must be development or production")
        }
        if (admin != nil || adminTokenFile != nil) && device == nil {
            throw ValidationError("--admin and --admin-token-file go with --device")
        }
        if let apple, apple != "sandbox" && apple != "production" {
            throw ValidationError("--apple must be sandbox or production")
        }
        if let priority, PushPriority(rawValue: priority) == nil {
            throw ValidationError("--priority must be 10, 5 or 1")
        }
        if concurrency < 1 { throw ValidationError("--concurrency must be at least 1") }
        if connections < 1 { throw ValidationError("--connections must be at least 1") }
        if !(timeout > 0 && timeout <= 31_536_000) {
            throw ValidationError("--timeout must be more than 0 seconds and at most a year (31536000)")
        }
        if payload != nil && apnsFile != nil { throw ValidationError("give --payload or an .apns file, not both") }
        if liveActivity == nil, activity.anyGiven {
            throw ValidationError("the Live Activity options (--content-state, …) go with --live-activity")
        }
        if liveActivity != nil {
            for (given, name) in [
                (payload != nil || apnsFile != nil, "--payload or an .apns file"), (badge != nil, "--badge"),
                (category != nil, "--category"), (thread != nil, "--thread"),
                (contentAvailable, "--content-available"), (mutableContent, "--mutable-content"), (binary, "--binary"),
                (pushType.map { $0 != .liveactivity } ?? false, "--push-type other than liveactivity"),
            ] where given {
                throw ValidationError("\(name) has no place in a Live Activity push")
            }
        }
        if binary {
            if apple != nil { throw ValidationError("--binary: Apple retired the binary interface in 2021") }
            if credentials.p8 != nil || credentials.keyId != nil || credentials.team != nil {
                throw ValidationError("--binary authenticates with --cert and --cert-key, not a .p8 key")
            }
            guard binaryCommand <= 2 else { throw ValidationError("--binary-command must be 0, 1 or 2") }
            if let priority, priority != 10 && priority != 5 {
                throw ValidationError("--priority must be 10 or 5 over the binary interface")
            }
            if priority != nil && binaryCommand != 2 { throw ValidationError("--priority needs --binary-command 2") }
            if expiration != nil && binaryCommand == 0 {
                throw ValidationError("--expiration needs --binary-command 1 or 2")
            }
            for (given, name) in [
                (pushType != nil, "--push-type"), (collapseId != nil, "--collapse-id"), (apnsId != nil, "--apns-id"),
                (url != nil, "--url"),
            ] where given {
                throw ValidationError("\(name) has no place in the binary interface")
            }
        } else if binaryAddress != nil || serverName != nil {
            throw ValidationError("--binary-address and --server-name go with --binary")
        }
    }

    func run() async throws {
        let defaults = up.defaults(useUp: apple == nil)
        let (body, fileTopic) = try payloadBytes()
        if binary { return try await sendBinary(body, defaults: defaults) }
        guard let topic = topic ?? fileTopic ?? defaults.info?.topic else {
            throw defaults.missing("--topic is required (or an .apns file with \"Simulator Target Bundle\")")
        }
        let server: APNsServer
        switch apple {
        case "sandbox": server = .sandbox
        case "production": server = .production
        default:
            guard let base = url ?? defaults.info?.providerURL else { throw defaults.missing("--url is required") }
            server = APNsServer(url: base)
        }
        let authentication = try credentials.authentication(defaults: defaults)
        let caPEM = try credentials.trustedCAPEM(defaults: defaults)
        let targets = try await targetTokens(defaults, topic: topic)
        let client = try APNsClient(
            configuration: .init(
                server: server, authentication: authentication, trustedCAPEM: caPEM,
                timeout: .milliseconds(Int64(timeout * 1000)), connections: connections))
        var notification = APNsNotification(
            payload: body, topic: topic, pushType: pushType, priority: priority.flatMap(PushPriority.init(rawValue:)),
            expiration: expiration, collapseID: collapseId, apnsID: apnsId)
        if liveActivity != nil {
            let suffix = PushType.liveactivity.topicSuffix ?? ""
            notification.pushType = .liveactivity
            if !topic.hasSuffix(suffix) { notification.topic = topic + suffix }
        }
        do {
            if targets.count == 1 && device != "all" {
                try await sendOne(client, notification, to: targets[0])
            } else {
                try await sendMany(client, notification, to: targets)
            }
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    func sendOne(_ client: APNsClient, _ notification: APNsNotification, to target: String) async throws {
        do {
            let delivery = try await client.send(notification, to: target)
            if json {
                var object: [String: JSONValue] = [
                    "status": .int(200), "apnsID": .string(delivery.apnsID), "attempts": .int(Int64(delivery.attempts)),
                ]
                if let unique = delivery.uniqueID { object["uniqueID"] = .string(unique) }
                return try printJSONObject(object)
            }
            print(
                "200 apns-id \(delivery.apnsID)" + (delivery.uniqueID.map { " apns-unique-id \($0)" } ?? "")
                    + (delivery.attempts > 1 ? " after \(delivery.attempts) attempts" : ""))
        } catch let error as APNsError {
            if json {
                var object: [String: JSONValue] = [
                    "status": .int(Int64(error.status)), "reason": .string(error.reason.description),
                ]
                if let id = error.apnsID { object["apnsID"] = .string(id) }
                if let t = error.timestamp { object["timestamp"] = .int(Int64(t.timeIntervalSince1970 * 1000)) }
                try printJSONObject(object)
            } else {
                FileHandle.standardError.write(Data("\(error)\n".utf8))
            }
            throw ExitCode(1)
        } catch let error as APNsClientError {
            switch error {
            case .invalidDeviceToken, .invalidConfiguration:
                throw ValidationError("\(error)")
            case .transport, .deadlineExceeded:
                throw CommandFailure("\(error)")
            }
        }
    }

    func sendMany(_ client: APNsClient, _ notification: APNsNotification, to targets: [String]) async throws {
        let progress = ProgressBar(total: targets.count, terminal: isatty(2) != 0, quiet: json)
        let tally = await client.send(
            notification, to: targets, concurrency: concurrency, perSecond: rate, progress: { progress.update($0.done) }
        )
        progress.finish()
        let (answers, drops) = (tally.answers, tally.drops)
        let seconds = progress.elapsed
        let perSecond = Double(targets.count) / max(seconds, 1e-6)
        if json {
            try printJSONObject(
                [
                    "sent": .int(Int64(targets.count)), "seconds": .double((seconds * 1000).rounded() / 1000),
                    "perSecond": .double(perSecond.rounded()),
                    "results": .object(answers.mapValues { .int(Int64($0)) }),
                    "drop": .array(
                        drops.map { drop in
                            var object: [String: JSONValue] = [
                                "token": .string(drop.token), "reason": .string(drop.reason),
                            ]
                            if let at = drop.at {
                                object["timestamp"] = .int(Int64((at.timeIntervalSince1970 * 1000).rounded()))
                            }
                            return .object(object)
                        }),
                ] as [String: JSONValue])
        } else {
            print(String(format: "sent %d in %.1f s (%.0f/s)", targets.count, seconds, perSecond))
            for (answer, n) in answers.sorted(by: { ($0.value, $1.key) > ($1.value, $0.key) }) {
                print("  \(n)  \(answer)")
            }
            if !drops.isEmpty {
                print("tokens to drop (410: the app is gone from the device), \(drops.count):")
                let format = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
                for drop in drops {
                    print("  \(drop.token)  \(drop.reason)" + (drop.at.map { " since \(format.format($0))" } ?? ""))
                }
            }
        }
        if !tally.allAccepted { throw ExitCode(1) }
    }

    /// `--binary`: one notification per token over the legacy binary interface; failures come
    /// back as error packets (the client sends what followed a refused one again).
    func sendBinary(_ body: Data, defaults: UpDefaults) async throws {
        let endpoint = try legacyEndpoint(
            address: binaryAddress ?? defaults.info?.binaryAddress, cert: credentials.cert,
            certKey: credentials.certKey, ca: credentials.ca, serverName: serverName, defaults: defaults)
        let targets = try await targetTokens(defaults)
        let client = APNsBinaryClient(endpoint: endpoint)
        var notifications: [LegacyBinary.Notification] = []
        for target in targets {
            guard let token = DeviceToken(hex: target) else {
                throw ValidationError("--token: '\(target)' is not hex")
            }
            notifications.append(
                LegacyBinary.Notification(
                    command: binaryCommand, expiration: expiration.map { UInt32(clamping: $0) }, token: token.bytes,
                    payload: Array(body), priority: priority.map(UInt8.init)))
        }
        let identifiers: [UInt32]
        let failures: [APNsBinaryClient.Failure]
        // From the first byte out to the gateway's close: by then every notification was routed.
        let clock = ContinuousClock()
        let start = clock.now
        do {
            identifiers = try await client.send(notifications)
            failures = try await client.close()
        } catch {
            throw CommandFailure("binary gateway \(endpoint.host):\(endpoint.port): \(ConnectFailure.describe(error))")
        }
        let elapsed = (clock.now - start) / .milliseconds(1) / 1000
        let rate = Double(identifiers.count) / max(elapsed, 1e-6)
        if json {
            var object: [String: JSONValue] = [
                "sent": .int(Int64(identifiers.count)), "seconds": .double(elapsed),
                "perSecond": .double(rate.rounded()),
                "connections": .int(Int64(await client.connectionsOpened)),
                "failures": .array(
                    failures.map {
                        .object([
                            "identifier": .int(Int64($0.identifier)), "status": .int(Int64($0.status.rawValue)),
                            "reason": .string("\($0.status)"),
                        ])
                    }),
            ]
            if identifiers.count <= 1000 { object["identifiers"] = .array(identifiers.map { .int(Int64($0)) }) }
            try printJSONObject(object)
        } else {
            let range =
                identifiers.count == 1
                ? "identifier \(identifiers[0])" : "identifiers \(identifiers.first ?? 0)…\(identifiers.last ?? 0)"
            print("sent \(identifiers.count) over the binary interface (command \(binaryCommand), \(range))")
            if identifiers.count > 1 {
                print(String(format: "  %.3f s, %.0f notifications/s", elapsed, rate))
            }
            for failure in failures {
                print(
                    "  refused: identifier \(failure.identifier): status \(failure.status.rawValue) (\(failure.status))"
                )
            }
        }
        if !failures.isEmpty { throw ExitCode(1) }
    }

    /// `--tokens-file`'s tokens: one a line (ended by LF, CRLF, CR, VT or FF), without the spaces and
    /// tabs around it; blank lines and `#` comments skipped. Split on the bytes: splitting the text
    /// into `Character`s (grapheme clusters) took 1.8 s of CPU for a million tokens, 0.16 s now.
    static func tokenLines(_ bytes: UnsafeRawBufferPointer) -> [String] {
        var tokens: [String] = []
        tokens.reserveCapacity(bytes.count / 65)
        let isBreak: (UInt8) -> Bool = { (0x0A...0x0D).contains($0) }
        let isBlank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count, !isBreak(bytes[end]) { end += 1 }
            var first = start
            var last = end
            while first < last, isBlank(bytes[first]) { first += 1 }
            while last > first, isBlank(bytes[last - 1]) { last -= 1 }
            if first < last, bytes[first] != UInt8(ascii: "#") {
                tokens.append(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[first..<last]), as: UTF8.self))
            }
            start = end + 1
        }
        return tokens
    }

    /// `--tokens-file`'s lines, `--token`, `--device`'s token(s) from the admin API, or the demo
    /// device's token from `herald up`.
    func targetTokens(_ defaults: UpDefaults, topic: String? = nil) async throws -> [String] {
        if let tokens {
            let contents = try CLIFile.data(tokens, for: "--tokens-file")
            let list = contents.withUnsafeBytes(Self.tokenLines)
            if list.isEmpty { throw ValidationError("--tokens-file: \(tokens) has no tokens") }
            return list
        }
        if let device { return try await deviceTokens(device, topic: topic ?? "", defaults: defaults) }
        guard let one = token ?? defaults.info?.deviceToken else {
            throw defaults.missing("--token is required (or --tokens-file or --device)")
        }
        return [one]
    }

    /// The tokens `--device` names: the topic's app (the topic less its push type's suffix) on that
    /// device, or on every device (`all`), valid and in `--environment`, as the admin API lists them.
    func deviceTokens(_ device: String, topic: String, defaults: UpDefaults) async throws -> [String] {
        guard let base = admin ?? defaults.info?.adminURL else {
            throw defaults.missing("--device needs the admin API: --admin URL")
        }
        var bearer = defaults.info?.adminToken
        if let adminTokenFile {
            let text = try CLIFile.text(adminTokenFile, for: "--admin-token-file")
            bearer = text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let suffix = pushType?.topicSuffix ?? ""
        let app = !suffix.isEmpty && topic.hasSuffix(suffix) ? String(topic.dropLast(suffix.count)) : topic
        let client = AdminClient(url: base, token: bearer)
        let devices: [AdminAPI.DeviceView]
        do {
            devices = device == "all" ? try await client.devices() : [try await client.device(device)]
        } catch {
            throw CommandFailure("--device: the admin API at \(base): \(error)")
        }
        let tokens = devices.flatMap { record in
            record.apps.filter {
                $0.bundleID == app && $0.environment.rawValue == environment && $0.invalidatedAt == nil
                    && $0.scope == nil
            }.map(\.token)
        }
        if tokens.isEmpty {
            let which = device == "all" ? "no device has" : "device \(device) does not have"
            throw ValidationError("--device \(device): \(which) \(app) registered in \(environment)")
        }
        return tokens
    }

    /// The payload's bytes, and the topic an `.apns` file names.
    func payloadBytes() throws -> (Data, String?) {
        if let file = apnsFile ?? payload {
            let data = try CLIFile.data(file, for: apnsFile != nil ? "the .apns file" : "--payload")
            let parsed: SimulatorPushFile
            do {
                parsed = try SimulatorPushFile(data: data)
            } catch {
                throw ValidationError("\(file): \(error)")
            }
            if apnsFile != nil && parsed.topic == nil && self.topic == nil {
                throw ValidationError("\(file) has no \"Simulator Target Bundle\"; pass --topic")
            }
            // The payload goes as written, less the simulator's key.
            return (parsed.payload, parsed.topic)
        }
        if let liveActivity {
            let alert =
                title == nil && self.alert == nil && sound == nil
                ? nil : APNsLiveActivity.Alert(title: title, body: self.alert, sound: sound)
            return (try activity.activity(event: liveActivity, alert: alert).payload(), nil)
        }
        var aps: [String: JSONValue] = [:]
        if let title {
            var alertObject: [String: JSONValue] = ["title": .string(title)]
            if let subtitle { alertObject["subtitle"] = .string(subtitle) }
            if let alert { alertObject["body"] = .string(alert) }
            aps["alert"] = .object(alertObject)
        } else if let subtitle {
            aps["alert"] = .object(["subtitle": .string(subtitle), "body": .string(alert ?? "")])
        } else if let alert {
            aps["alert"] = .string(alert)
        }
        if let badge { aps["badge"] = .int(Int64(badge)) }
        if let sound { aps["sound"] = .string(sound) }
        if let category { aps["category"] = .string(category) }
        if let thread { aps["thread-id"] = .string(thread) }
        if contentAvailable { aps["content-available"] = .int(1) }
        if mutableContent { aps["mutable-content"] = .int(1) }
        if aps.isEmpty {
            throw ValidationError(
                "nothing to send: give --alert, --title, --badge, --sound, --content-available or --payload")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try encoder.encode(["aps": JSONValue.object(aps)]), nil)
    }
}
