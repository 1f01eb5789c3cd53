import ArgumentParser
import Foundation
import HeraldCore
import HeraldGateway

/// `herald gateway faults …`: a running gateway's fault rules from the shell (docs/admin-api.md).
struct FaultsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "faults",
        abstract:
            "A running gateway's fault rules: errors, delays and connection faults on purpose, for testing providers.",
        subcommands: [FaultsAdd.self, FaultsList.self, FaultsRemove.self, FaultsClear.self],
        defaultSubcommand: FaultsList.self)

    /// `herald gateway`'s options: its `--state` names the gateway (given before or after `faults`).
    @ParentCommand var gateway: GatewayCommand
}

/// Where the gateway's admin API is: `--state` (`herald gateway`'s own option, the state directory
/// whose `gateway.json` and `admin-token` say), or these.
struct GatewayAdminOptions: ParsableArguments {
    @Option(name: .long, help: "Admin API URL (overrides the state directory's gateway.json).")
    var adminURL: String?
    @Option(name: .long, help: "Admin token (overrides the state directory's admin-token).")
    var adminToken: String?

    func client(_ faults: FaultsCommand) throws -> AdminClient {
        try AdminClient(state: faults.gateway.state, url: adminURL, token: adminToken)
    }
}

extension ConnectionFault: ExpressibleByArgument {}
extension APNsReason: ExpressibleByArgument {}

struct FaultsAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Add a fault rule.",
        discussion: """
            A push matching --topic and --token-prefix (both optional) is answered --reason, and/or held by \
            --delay or --latency, and/or has its connection faulted (--connection); or, with --device-limit, a \
            device that got that many pushes within --window seconds answers 429 TooManyRequests. Examples:
              herald gateway faults add --connection goaway --after-streams 100 --goaway-reason Shutdown
              herald gateway faults add --connection refuse-handshake --remaining 1
              herald gateway faults add --latency lognormal:80,900 --probability 0.5
              herald gateway faults add --reason Shutdown --connection goaway   (a drain)
            """)

    @Option(name: .long, help: "Only pushes to this apns-topic.")
    var topic: String?
    @Option(name: .long, help: "Only pushes to tokens starting with this hex.")
    var tokenPrefix: String?
    @Option(name: .long, help: "Answer this APNs reason (Unregistered, TooManyRequests, Shutdown, …).")
    var reason: APNsReason?
    @Option(name: .long, help: "Hold the answer this many milliseconds.")
    var delay: Int?
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Hold the answer by a distribution: fixed:MS, uniform:MIN-MAX or lognormal:P50,P99 (milliseconds).",
            valueName: "distribution"))
    var latency: String?
    @Option(name: .long, help: "Fire on this share of the matching pushes (0 to 1).")
    var probability: Double?
    @Option(name: .long, help: "goaway, close, lower-streams or refuse-handshake.")
    var connection: ConnectionFault?
    @Option(name: .long, help: "With goaway: from a connection's Nth push on (default 1: at once).")
    var afterStreams: Int?
    @Option(name: .long, help: "With goaway: the HTTP/2 error code (NO_ERROR, ENHANCE_YOUR_CALM, …).")
    var goawayError: String?
    @Option(name: .long, help: "With goaway: the reason in its debug data (default: --reason, else Shutdown).")
    var goawayReason: String?
    @Option(name: .long, help: "With lower-streams: the new MAX_CONCURRENT_STREAMS (default 1).")
    var maxConcurrentStreams: Int?
    @Option(name: .long, help: "Apple's per-device limit: pushes one device may get within --window.")
    var deviceLimit: Int?
    @Option(name: .long, help: "With --device-limit: the window, in seconds.")
    var window: Double?
    @Option(name: .long, help: "Apply to this many pushes (or connections), then go.")
    var remaining: Int?
    @Flag(name: .long, help: "Print the rule as JSON.")
    var json = false
    @OptionGroup var gateway: GatewayAdminOptions
    @ParentCommand var faults: FaultsCommand

    /// `fixed:MS`, `uniform:MIN-MAX` or `lognormal:P50,P99`.
    static func latency(_ text: String) throws -> FaultLatency {
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        func numbers(_ separator: Character) -> [Double]? {
            guard parts.count == 2 else { return nil }
            let values = parts[1].split(separator: separator).map { Double($0) }
            return values.contains(nil) ? nil : values.map { $0! }
        }
        switch parts.first {
        case "fixed":
            if let v = numbers(","), v.count == 1 { return FaultLatency(distribution: .fixed, milliseconds: v[0]) }
        case "uniform":
            if let v = numbers("-"), v.count == 2 { return FaultLatency(distribution: .uniform, min: v[0], max: v[1]) }
        case "lognormal":
            if let v = numbers(","), v.count == 2 {
                return FaultLatency(distribution: .lognormal, p50: v[0], p99: v[1])
            }
        default: break
        }
        throw ValidationError("--latency: fixed:MS, uniform:MIN-MAX or lognormal:P50,P99 (milliseconds), not \(text)")
    }

    var rule: FaultRule {
        get throws {
            var rule = FaultRule(
                topic: topic, tokenPrefix: tokenPrefix, reason: reason, delayMilliseconds: delay, remaining: remaining)
            rule.latency = try latency.map(Self.latency)
            rule.probability = probability
            rule.connection = connection
            rule.afterStreams = afterStreams
            rule.goawayError = goawayError
            rule.goawayReason = goawayReason
            rule.maxConcurrentStreams = maxConcurrentStreams
            rule.deviceLimit = deviceLimit
            rule.windowSeconds = window
            return rule
        }
    }

    func validate() throws {
        // The gateway checks the same; saying so before connecting names the option.
        if let problem = try rule.problem { throw ValidationError(FaultsAdd.option(problem)) }
    }

    /// A problem as the gateway names it (`afterStreams: …`), with the option's name instead.
    static func option(_ problem: String) -> String {
        guard let colon = problem.firstIndex(of: ":") else { return problem }
        let field = problem[..<colon].replacingOccurrences(of: "latency.", with: "latency ")
        let names: [String: String] = [
            "delayMilliseconds": "--delay", "windowSeconds": "--window", "tokenPrefix": "--token-prefix",
            "afterStreams": "--after-streams", "goawayError": "--goaway-error", "goawayReason": "--goaway-reason",
            "maxConcurrentStreams": "--max-concurrent-streams", "deviceLimit": "--device-limit",
        ]
        let name = names[field] ?? (field.hasPrefix("latency") ? "--latency" : "--" + field)
        return name + problem[colon...]
    }

    func run() async throws {
        let added: FaultRule = try await gateway.client(faults).http.call("POST", "/faults", try rule)
        if json {
            print(String(decoding: try HTTPJSONClient.encoder.encode(added), as: UTF8.self))
        } else {
            print("\(added.id) added: \(FaultsList.describe(added))")
        }
    }
}

struct FaultsList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the fault rules.")
    @Flag(name: .long, help: "Print JSON.")
    var json = false
    @OptionGroup var gateway: GatewayAdminOptions
    @ParentCommand var faults: FaultsCommand

    /// A rule in a line.
    static func describe(_ rule: FaultRule) -> String {
        var parts: [String] = []
        parts.append(rule.topic.map { "topic \($0)" } ?? "every topic")
        if let prefix = rule.tokenPrefix { parts.append("tokens \(prefix)…") }
        if let reason = rule.reason { parts.append("answers \(reason.status) \(reason.rawValue)") }
        if let delay = rule.delayMilliseconds { parts.append("after \(delay) ms") }
        if let latency = rule.latency { parts.append("latency \(latency.distribution.rawValue)") }
        if let connection = rule.connection {
            var text = "connection \(connection.rawValue)"
            if let after = rule.afterStreams { text += " from push \(after)" }
            if let limit = rule.maxConcurrentStreams { text += " to \(limit)" }
            parts.append(text)
        }
        if let limit = rule.deviceLimit { parts.append("\(limit) pushes a device per \(rule.windowSeconds ?? 0) s") }
        if let probability = rule.probability { parts.append("probability \(probability)") }
        if let remaining = rule.remaining { parts.append("\(remaining) left") }
        return parts.joined(separator: ", ")
    }

    func run() async throws {
        let rules: [FaultRule] = try await gateway.client(faults).http.call("GET", "/faults")
        if json {
            print(String(decoding: try HTTPJSONClient.encoder.encode(rules), as: UTF8.self))
            return
        }
        if rules.isEmpty { print("no fault rules") }
        for rule in rules { print("\(rule.id)  \(Self.describe(rule))") }
    }
}

struct FaultsRemove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a fault rule.")
    @Argument(help: "The rule's id (herald gateway faults list).")
    var id: String
    @OptionGroup var gateway: GatewayAdminOptions
    @ParentCommand var faults: FaultsCommand

    func run() async throws {
        let (status, body) = try await gateway.client(faults).http.exchange("DELETE", "/faults/\(id)")
        if status == 404 { throw CommandFailure("no fault rule \(id) (herald gateway faults list)") }
        guard status == 204 else {
            throw CommandFailure("DELETE /faults/\(id): HTTP \(status): \(String(decoding: body, as: UTF8.self))")
        }
        print("\(id) removed")
    }
}

struct FaultsClear: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "clear", abstract: "Remove every fault rule.")
    @OptionGroup var gateway: GatewayAdminOptions
    @ParentCommand var faults: FaultsCommand

    func run() async throws {
        try await gateway.client(faults).http.perform("DELETE", "/faults")
        print("every fault rule removed")
    }
}
