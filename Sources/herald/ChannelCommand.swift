import ArgumentParser
import Foundation
import HeraldCore
import HeraldProvider

struct ChannelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "channel",
        abstract: "Manage an app's broadcast channels (the channel management API, docs/broadcast.md).",
        discussion: """
            Actions:
              create   create a channel (--policy 0: no storage, 1: the latest message kept) and print its id
              read     print a channel's storage policy (--channel-id)
              delete   delete a channel (--channel-id)
              list     print the app's channel ids, oldest first
              broadcast  send a Live Activity update (--event update or end) to every activity subscribed to
                       --channel-id; it goes to the provider API (--provider-url, default up.json's providerURL)
            Examples:
              herald channel create --policy 1
              herald channel read --channel-id 3q2+7wAAAAAAAAAAAAAAAA==
              herald channel broadcast --channel-id 3q2+7wAAAAAAAAAAAAAAAA== \\
                  --content-state '{"score":"2-1"}'
              herald channel list --apple sandbox --p8 AuthKey.p8 --key-id ABC123DEFG \\
                  --team DEF123GHIJ --topic com.example.app
            Defaults (server, CA, key, topic) come from `herald up`'s up.json.
            """)

    enum Action: String, ExpressibleByArgument, CaseIterable {
        case create, read, delete, list, broadcast
    }

    @Argument(help: "What to do: create, read, delete, list or broadcast.")
    var action: Action
    @Option(name: .long, help: "The app's bundle id (default: up.json's topic).")
    var topic: String?
    @Option(name: .long, help: "read, delete, broadcast: the channel's id (apns-channel-id).")
    var channelId: String?
    @Option(name: .long, help: "create: message-storage-policy, 0 (no storage) or 1 (the latest message kept).")
    var policy = 0
    @Option(name: .long, help: "Use Apple's channel management service instead: sandbox or production.")
    var apple: String?
    @Option(
        name: .long,
        help: "The channel management API's base URL, e.g. https://localhost:2295 (default: up.json's channelsURL).")
    var url: String?
    @Option(
        name: .long,
        help: "broadcast: the provider API's base URL, e.g. https://localhost:2197 (default: up.json's providerURL).")
    var providerUrl: String?
    @Option(name: .long, help: "broadcast: update or end (a broadcast cannot start an activity).")
    var event: APNsLiveActivity.Event = .update
    @Option(name: .long, help: "broadcast: apns-priority, 10 or 5.")
    var priority = 10
    @Option(name: .long, help: "broadcast: apns-expiration in UNIX seconds (0 on a channel that keeps nothing).")
    var expiration: Int64?
    @Option(name: .long, help: "broadcast: the alert's title.")
    var title: String?
    @Option(name: .long, help: "broadcast: the alert's text.")
    var alert: String?
    @Option(name: .long, help: "broadcast: the alert's sound.")
    var sound: String?
    @Option(name: .long, help: "broadcast: a file with the whole JSON payload instead.")
    var payload: String?
    @OptionGroup(title: "Live Activity (broadcast)") var activity: LiveActivityOptions
    @OptionGroup var credentials: ProviderCredentials
    @OptionGroup var up: UpOption
    @Option(name: .long, help: "Seconds the request may take.")
    var timeout: Double = 30
    @Flag(name: .long, help: "Print the result as JSON.")
    var json = false

    func validate() throws {
        if let apple, apple != "sandbox" && apple != "production" {
            throw ValidationError("--apple must be sandbox or production")
        }
        if ChannelStoragePolicy(rawValue: policy) == nil { throw ValidationError("--policy must be 0 or 1") }
        if action == .broadcast {
            if event == .start {
                throw ValidationError("a broadcast cannot start a Live Activity: --event update or end")
            }
            if priority != 10 && priority != 5 { throw ValidationError("--priority must be 10 or 5") }
            if payload != nil && activity.anyGiven {
                throw ValidationError("give --payload or the Live Activity options, not both")
            }
        }
        if (action == .read || action == .delete || action == .broadcast) && channelId == nil {
            throw ValidationError("\(action.rawValue) needs --channel-id")
        }
        if !(timeout > 0 && timeout <= 31_536_000) {
            throw ValidationError("--timeout must be more than 0 seconds and at most a year (31536000)")
        }
    }

    func run() async throws {
        let defaults = up.defaults(useUp: apple == nil)
        guard let bundleID = topic ?? defaults.info?.topic else { throw defaults.missing("--topic is required") }
        let server: APNsServer
        switch (apple, action) {
        case ("sandbox", .broadcast): server = .broadcastSandbox
        case ("production", .broadcast): server = .broadcastProduction
        case ("sandbox", _): server = .channelsSandbox
        case ("production", _): server = .channelsProduction
        case (_, .broadcast):
            guard let base = providerUrl ?? defaults.info?.providerURL else {
                throw defaults.missing("--provider-url is required")
            }
            server = APNsServer(url: base)
        default:
            guard let base = url ?? defaults.info?.channelsURL else { throw defaults.missing("--url is required") }
            server = APNsServer(url: base)
        }
        let authentication = try credentials.authentication(defaults: defaults)
        let caPEM = try credentials.trustedCAPEM(defaults: defaults)
        let client = try APNsClient(
            configuration: .init(
                server: server, authentication: authentication, trustedCAPEM: caPEM,
                timeout: .milliseconds(Int64(timeout * 1000))))
        do {
            try await perform(client, bundleID: bundleID, server: server)
        } catch {
            try? await client.shutdown()
            if let error = error as? APNsError {
                FileHandle.standardError.write(Data("herald channel: \(error)\n".utf8))
                throw ExitCode(1)
            }
            throw error
        }
        try await client.shutdown()
    }

    func perform(_ client: APNsClient, bundleID: String, server: APNsServer) async throws {
        switch action {
        case .create:
            let created = try await client.createChannel(
                bundleID: bundleID, storagePolicy: ChannelStoragePolicy(rawValue: policy) ?? .noStorage, on: server)
            if json {
                try printJSONObject(["channelID": created.channelID, "requestID": created.requestID])
            } else {
                print(created.channelID)
            }
        case .read:
            let stored = try await client.channelStoragePolicy(
                bundleID: bundleID, channelID: channelId ?? "", on: server)
            if json {
                try printJSONObject(
                    [
                        "message-storage-policy": .int(Int64(stored.rawValue)),
                        "push-type": .string(BroadcastChannel.pushType),
                    ] as [String: JSONValue])
            } else {
                print(
                    "message-storage-policy \(stored.rawValue) (\(stored == .noStorage ? "no storage" : "latest kept"))"
                )
            }
        case .delete:
            try await client.deleteChannel(bundleID: bundleID, channelID: channelId ?? "", on: server)
            if !json { print("deleted \(channelId ?? "")") }
        case .broadcast:
            let body: Data
            if let payload {
                body = try CLIFile.data(payload, for: "--payload")
            } else {
                let shown =
                    title == nil && alert == nil && sound == nil
                    ? nil : APNsLiveActivity.Alert(title: title, body: alert, sound: sound)
                body = try activity.activity(event: event, alert: shown).payload()
            }
            let sent = try await client.broadcast(
                payload: body, bundleID: bundleID, channelID: channelId ?? "",
                priority: PushPriority(rawValue: priority) ?? .immediate, expiration: expiration, on: server)
            if json {
                try printJSONObject(
                    [
                        "status": .int(200), "requestID": .string(sent.requestID), "uniqueID": .string(sent.uniqueID),
                    ] as [String: JSONValue])
            } else {
                print("200 apns-request-id \(sent.requestID) apns-unique-id \(sent.uniqueID)")
            }
        case .list:
            let ids = try await client.channelIDs(bundleID: bundleID, on: server)
            if json {
                try printJSONObject(["channels": ids])
            } else {
                for id in ids { print(id) }
            }
        }
    }
}
