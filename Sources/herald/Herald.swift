import ArgumentParser
import Foundation
import HeraldCore

@main
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "Apple's local and remote notification system, open and self-hostable.",
        version: BuildInfo.description,
        subcommands: [
            UpCommand.self, GatewayCommand.self, DeviceCommand.self, PushCommand.self, FeedbackCommand.self,
            AppCommand.self,
            RespondCommand.self, KeysCommand.self, TestDeviceCommand.self, TriggerCommand.self, ChannelCommand.self,
            ProbeCommand.self,
        ])

    /// swift-argument-parser's `main`, with the configuration file and the environment written into
    /// the arguments of the commands that read them first (``ConfiguredArguments``), `--print-config`,
    /// and errors about a setting from the file or the environment saying where it was set.
    static func main() async {
        let configured: ConfiguredArguments
        do {
            configured = try ConfiguredArguments(
                Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
        } catch {
            FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
            Foundation.exit(ExitCode.validationFailure.rawValue)
        }
        do {
            var command = try parseAsRoot(configured.arguments)
            if configured.printConfig {
                print(configured.report(), terminator: "")
                return
            }
            if command is TestDeviceCommand { TestDeviceCommand.runTasksOnNIOLoops() }
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            // Help and other clean exits are not errors about a setting.
            if exitCode(for: error) != .success, let message = configured.attributed(message(for: error)) {
                FileHandle.standardError.write(Data("Error: \(message)\n".utf8))
                Foundation.exit(exitCode(for: error).rawValue)
            }
            exit(withError: error)
        }
    }
}

struct TriggerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trigger", abstract: "Work with notification triggers.",
        subcommands: [TriggerNext.self, TriggerCompare.self])
}

/// Formats dates as ISO 8601 with the zone's offset.
func iso8601(_ date: Date, _ zone: TimeZone) -> String {
    let formatter = ISO8601DateFormatter()
    formatter.timeZone = zone
    formatter.formatOptions = [.withInternetDateTime]
    return formatter.string(from: date)
}

func parseDate(_ text: String, field: String) throws -> Date {
    let formatter = ISO8601DateFormatter()
    for options: ISO8601DateFormatter.Options in [
        [.withInternetDateTime], [.withInternetDateTime, .withFractionalSeconds],
    ] {
        formatter.formatOptions = options
        if let date = formatter.date(from: text) { return date }
    }
    throw ValidationError("\(field): '\(text)' is not an ISO 8601 date with a zone, e.g. 2025-03-08T12:00:00Z")
}

struct TriggerNext: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "next",
        abstract: "Print the next fire dates of a trigger.",
        discussion: """
            Examples:
              herald trigger next --calendar hour=2,minute=30 \\
                  --time-zone America/New_York --after 2025-03-08T12:00:00Z --count 3
              herald trigger next --calendar weekday=2,hour=9 --floating \\
                  --device-time-zone Europe/Paris
              herald trigger next --interval 90 --count 5 --json
            Calendar components: era, year, month, day, hour, minute, second, weekday (1 = Sunday),
            weekdayOrdinal, weekOfMonth.
            """)

    @Option(help: "Calendar components to match, e.g. hour=2,minute=30.")
    var calendar: String?

    @Option(help: "A time-interval trigger, in seconds.")
    var interval: Double?

    @Option(help: "The trigger's fixed time zone (an identifier such as America/New_York). Default: UTC.")
    var timeZone: String?

    @Flag(help: "Floating time: wall-clock times follow the device's zone (see --device-time-zone).")
    var floating = false

    @Option(help: "The device's time zone, for floating triggers and printing. Default: the trigger's zone or UTC.")
    var deviceTimeZone: String?

    @Option(help: "Start after this instant (ISO 8601 with offset). Default: now.")
    var after: String?

    @Option(help: "How many fire dates to print.")
    var count = 1

    @Flag(inversion: .prefixedNo, help: "Whether the trigger repeats (a one-shot trigger has at most one date).")
    var repeats = true

    @Flag(help: "Also print Foundation's answer for each date.")
    var compareFoundation = false

    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
        if (calendar == nil) == (interval == nil) {
            throw ValidationError("give exactly one of --calendar or --interval")
        }
        if count < 1 || count > 100_000 { throw ValidationError("--count: must be 1…100000, not \(count)") }
        if floating && timeZone != nil { throw ValidationError("--time-zone and --floating exclude each other") }
        for (field, id) in [("--time-zone", timeZone), ("--device-time-zone", deviceTimeZone)] {
            if let id, TimeZone(identifier: id) == nil { throw ValidationError("\(field): unknown time zone '\(id)'") }
        }
    }

    func run() throws {
        let start = try after.map { try parseDate($0, field: "--after") } ?? Date()
        let device = TimeZone(identifier: deviceTimeZone ?? timeZone ?? "UTC")!
        let trigger: NotificationTrigger
        let zoneForPrinting: TimeZone
        do {
            if let calendar {
                let components = try CalendarComponents(parsing: calendar)
                let zone: TriggerTimeZone = floating ? .floating : .fixed(timeZone ?? "UTC")
                trigger = .calendar(try CalendarTrigger(components: components, repeats: repeats, timeZone: zone))
                zoneForPrinting = zone.resolve(device: device)
            } else {
                trigger = .timeInterval(try TimeIntervalTrigger(interval: interval!, repeats: repeats))
                zoneForPrinting = device
            }
        } catch {
            throw ValidationError(error.message)
        }
        var dates: [Date] = []
        var cursor = start
        while dates.count < count, let next = trigger.nextFireDate(after: cursor, anchor: start, deviceTimeZone: device)
        {
            dates.append(next)
            cursor = next
            if !repeats { break }
        }
        var foundation: [Date?] = []
        if compareFoundation, case .calendar(let c) = trigger {
            let calendar = FoundationCalendarReference.calendar(zoneForPrinting)
            var cursor = start
            for _ in 0..<count {
                let next = FoundationCalendarReference.nextDate(
                    after: cursor, matching: c.components, calendar: calendar)
                foundation.append(next)
                guard let next else { break }
                cursor = next
            }
        }
        if json {
            return try printJSONObject(
                TriggerJSON(
                    after: iso8601(start, zoneForPrinting), timeZone: zoneForPrinting.identifier,
                    fireDates: dates.map { iso8601($0, zoneForPrinting) },
                    foundation: compareFoundation
                        ? foundation.map { $0.map { iso8601($0, zoneForPrinting) } ?? "none" } : nil))
        }
        if dates.isEmpty { print("no fire date after \(iso8601(start, zoneForPrinting))") }
        for (i, date) in dates.enumerated() {
            var line = iso8601(date, zoneForPrinting)
            if compareFoundation {
                let f = i < foundation.count ? foundation[i] : nil
                line +=
                    f == date
                    ? "  (Foundation agrees)" : "  (Foundation: \(f.map { iso8601($0, zoneForPrinting) } ?? "none"))"
            }
            print(line)
        }
    }
}

/// `herald trigger next --json`: `after` and `timeZone` as strings, the dates as lists.
struct TriggerJSON: Encodable {
    var after: String
    var timeZone: String
    var fireDates: [String]
    var foundation: [String]?
}

struct TriggerCompare: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compare",
        abstract: "Compare Herald's calendar matcher with this machine's Foundation on seeded random cases.")

    @Option(help: "Number of cases.") var count = 10_000
    @Option(help: "Random seed.") var seed: UInt64 = 42

    func run() throws {
        let result = FoundationCalendarReference.compare(
            FoundationCalendarReference.randomCases(count: count, seed: seed))
        print("cases: \(result.total)  agreements: \(result.agreements)")
        for (why, n) in result.explained.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            print("explained \(why.rawValue): \(n)")
        }
        print("unexplained: \(result.unexplained.count)")
        for (c, h, f) in result.unexplained.prefix(20) {
            let zone = TimeZone(identifier: c.zoneIdentifier)!
            print(
                "  \(c.components) in \(c.zoneIdentifier) after \(iso8601(c.after, zone)): herald \(h.map { iso8601($0, zone) } ?? "none"), foundation \(f.map { iso8601($0, zone) } ?? "none")"
            )
        }
        if !result.unexplained.isEmpty { throw ExitCode(1) }
    }
}
