import ArgumentParser
import Foundation
import HeraldCore
import HeraldDevice

/// `herald device focus`: which Focus is on, turning one on or off, and changing the modes.
struct DeviceFocus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "focus",
        abstract: "Show the Focus that is on and the modes, turn one on or off, or change a mode.",
        discussion: """
            A silenced notification makes no sound, shows no banner and does not wake the screen; it goes \
            to Notification Center marked with the Focus. Apps a mode allows, time-sensitive notifications \
            (when the mode lets them through) and critical ones still interrupt.
              herald device focus                   # what is on, and every mode
              herald device focus on do-not-disturb # until turned off
              herald device focus on work --for 2h  # or --until 2026-12-01T18:00:00+01:00
              herald device focus off               # a scheduled one: off until it ends
              herald device focus set reading --name Reading --allow com.example.books
              herald device focus set work --schedule 2-6,09:00-17:00 --time-sensitive off
              herald device focus remove reading
            Schedules are in the device's zone, on its clock: DAYS,HH:MM-HH:MM with DAYS 1 (Sunday) … 7, \
            a range 2-6 or a list 1+7 (or "daily"); an end at or before the start is the next day.
            """)

    enum Action: String, ExpressibleByArgument, CaseIterable {
        case status, on, off, set, remove
    }

    @Argument(help: "status (default), on, off, set or remove.")
    var action: Action = .status
    @Argument(help: "The mode's identifier (on, set, remove): do-not-disturb, sleep, work, or one you set.")
    var mode: String?
    @Option(name: .long, help: "on: until this instant (ISO 8601 with offset).")
    var until: String?
    @Option(name: .long, help: "on: for this long (90, 15m, 2h, 1d).")
    var `for`: String?
    @Option(name: .long, help: "set: the name people see.")
    var name: String?
    @Option(name: .long, help: "set: the apps that still interrupt, comma-separated (none: '').")
    var allow: String?
    @Option(name: .long, help: "set: whether time-sensitive notifications break through: on or off.")
    var timeSensitive: String?
    @Option(name: .long, help: "set: when it turns itself on, DAYS,HH:MM-HH:MM (repeatable; 'none' clears).")
    var schedule: [String] = []
    @OptionGroup var device: DeviceLocation
    @Flag(name: .long, help: "Print JSON.")
    var json = false

    func validate() throws {
        if [.on, .set, .remove].contains(action), mode == nil {
            throw ValidationError("\(action.rawValue): name the mode, e.g. herald device focus \(action.rawValue) work")
        }
        if until != nil && `for` != nil { throw ValidationError("give --until or --for, not both") }
        if let text = `for`, DeviceLocation.seconds(text) == nil {
            throw ValidationError("--for: '\(text)' is not a duration such as 90, 15m, 2h or 1d")
        }
        if let until { _ = try parseDate(until, field: "--until") }
        if let timeSensitive, !["on", "off"].contains(timeSensitive) {
            throw ValidationError("--time-sensitive: on or off, not '\(timeSensitive)'")
        }
        for text in schedule where text != "none" { _ = try Self.schedule(text) }
    }

    /// `2-6,09:00-17:00`, `1+7,10:00-12:00`, `daily,22:00-07:00` as the device API's JSON.
    static func schedule(_ text: String) throws -> JSONValue {
        let parts = text.split(separator: ",")
        guard parts.count == 2 else {
            throw ValidationError("--schedule: '\(text)' is not DAYS,HH:MM-HH:MM (e.g. 2-6,09:00-17:00)")
        }
        var days: [Int] = []
        if parts[0] != "daily" {
            for item in parts[0].split(separator: "+") {
                let range = item.split(separator: "-").compactMap { Int($0) }
                guard (1...2).contains(range.count), range.allSatisfy({ (1...7).contains($0) }),
                    range.first! <= range.last!
                else { throw ValidationError("--schedule: days are 1 (Sunday) … 7, such as 2-6 or 1+7, not '\(item)'") }
                days += Array(range.first!...range.last!)
            }
        }
        let times = parts[1].split(separator: "-").map(String.init)
        guard times.count == 2 else { throw ValidationError("--schedule: '\(parts[1])' is not HH:MM-HH:MM") }
        do {
            _ = try DayTime(times[0])
            _ = try DayTime(times[1])
        } catch {
            throw ValidationError("--schedule: \(error.message)")
        }
        return .object([
            "weekdays": .array(days.map { .int(Int64($0)) }), "start": .string(times[0]), "end": .string(times[1]),
        ])
    }

    func run() async throws {
        let client = try device.client()
        var answer: JSONValue?
        switch action {
        case .status:
            answer = try await client.json("GET", "/focus")
        case .on:
            var body: [String: JSONValue] = ["mode": .string(mode!)]
            if let until { body["until"] = .string(until) }
            if let text = `for`, let seconds = DeviceLocation.seconds(text) {
                let clock = try await client.json("GET", "/clock") ?? .null
                let now = (clock["now"]?.stringValue).flatMap(AppLinkDates.parse) ?? Date()
                body["until"] = .string(AppLinkDates.format(now.addingTimeInterval(seconds)))
            }
            answer = try await client.json("PUT", "/focus", body)
        case .off:
            answer = try await client.json("PUT", "/focus", ["mode": .null])
        case .set:
            var body: [String: JSONValue] = [:]
            if let name { body["name"] = .string(name) }
            if let allow { body["allowedApps"] = .strings(allow.split(separator: ",").map(String.init)) }
            if let timeSensitive { body["allowsTimeSensitive"] = .bool(timeSensitive == "on") }
            if !schedule.isEmpty {
                body["schedules"] = .array(try schedule.filter { $0 != "none" }.map(Self.schedule))
            }
            answer = try await client.json("PUT", "/focus/modes/\(mode!)", body)
        case .remove:
            answer = try await client.json("DELETE", "/focus/modes/\(mode!)")
        }
        if json { return try printJSONObject(answer ?? .null) }
        let view = answer ?? .null
        if let active = view["active"], active.objectValue != nil {
            print(
                "Focus: \(active["name"]?.stringValue ?? "?") on"
                    + ((active["scheduled"]?.boolValue) == true ? " (scheduled)" : "")
                    + ((active["until"]?.stringValue).map { " until \($0)" } ?? ""))
        } else {
            print("Focus: off")
        }
        for m in view["modes"]?.arrayValue ?? [] {
            let allowed = (m["allowedApps"]?.strings ?? []).joined(separator: ", ")
            let schedules = (m["schedules"]?.arrayValue ?? []).map { s in
                let days = (s["weekdays"]?.ints ?? []).map(String.init).joined(separator: "+")
                return
                    "\(days.isEmpty ? "daily" : days),\(s["start"]?.stringValue ?? "")-\(s["end"]?.stringValue ?? "")"
            }
            print(
                "  \(m["identifier"]?.stringValue ?? "")  \(m["name"]?.stringValue ?? "")"
                    + "  allows: \(allowed.isEmpty ? "no apps" : allowed)"
                    + ((m["allowsTimeSensitive"]?.boolValue) == false ? ", not time-sensitive" : ", time-sensitive")
                    + (schedules.isEmpty ? "" : "  scheduled \(schedules.joined(separator: "; "))"))
        }
    }
}

/// `herald device summary`: Scheduled Summary's settings, what waits, and what was delivered.
struct DeviceSummary: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "summary",
        abstract: "Show or change Scheduled Summary: on or off, its times, its apps; and what waits for it.",
        discussion: """
            Notifications from the summary's apps that are neither time-sensitive nor critical are held \
            and delivered together at the next time, the most relevant first; badges still change at once.
              herald device summary --on --times 08:00,18:00 \\
                  --apps com.example.news,com.example.shop
              herald device summary --add-app com.example.games
              herald device summary --off            # what waited is delivered now
            """)

    @Flag(name: .long, help: "Turn it on.") var on = false
    @Flag(name: .long, help: "Turn it off (what waits is delivered now).") var off = false
    @Option(name: .long, help: "One to twelve times a day, HH:MM, comma-separated.") var times: String?
    @Option(name: .long, help: "The apps in it, comma-separated (replaces the list).") var apps: String?
    @Option(name: .long, help: "Add an app (repeatable).") var addApp: [String] = []
    @Option(name: .long, help: "Take an app out (repeatable).") var removeApp: [String] = []
    @OptionGroup var device: DeviceLocation
    @Flag(name: .long, help: "Print JSON.") var json = false

    func validate() throws {
        if on && off { throw ValidationError("give --on or --off, not both") }
        if apps != nil && !(addApp.isEmpty && removeApp.isEmpty) {
            throw ValidationError("give --apps, or --add-app/--remove-app, not both")
        }
        for time in times?.split(separator: ",") ?? [] {
            do { _ = try DayTime(String(time)) } catch { throw ValidationError("--times: \(error.message)") }
        }
    }

    func run() async throws {
        let client = try device.client()
        var body: [String: JSONValue] = [:]
        if on { body["enabled"] = .bool(true) }
        if off { body["enabled"] = .bool(false) }
        if let times { body["times"] = .strings(times.split(separator: ",").map(String.init)) }
        if let apps { body["apps"] = .strings(apps.split(separator: ",").map(String.init)) }
        if !addApp.isEmpty || !removeApp.isEmpty {
            let current = try await client.json("GET", "/summary") ?? .null
            var list = current["settings"]?["apps"]?.strings ?? []
            list = (list + addApp).filter { !removeApp.contains($0) }
            body["apps"] = .strings(Array(Set(list)).sorted())
        }
        let answer = try await client.json(body.isEmpty ? "GET" : "PATCH", "/summary", body.isEmpty ? nil : body)
        if json { return try printJSONObject(answer ?? .null) }
        let view = answer ?? .null
        let settings = view["settings"] ?? .null
        let listed = (settings["apps"]?.strings ?? []).joined(separator: ", ")
        print(
            "Scheduled Summary: \((settings["enabled"]?.boolValue) == true ? "on" : "off")"
                + " at \((settings["times"]?.strings ?? []).joined(separator: ", "))"
                + "; apps: \(listed.isEmpty ? "none" : listed)")
        let held = view["held"]?.arrayValue ?? []
        if !held.isEmpty {
            print(
                "  \(held.count) waiting" + ((view["next"]?.stringValue).map { " for \($0)" } ?? "") + ": "
                    + held.map {
                        "\($0["appName"]?.stringValue ?? "") \($0["title"]?.stringValue ?? "") \($0["body"]?.stringValue ?? "")"
                    }
                    .joined(separator: "; "))
        }
        for summary in view["summaries"]?.arrayValue ?? [] {
            print("  \(summary["title"]?.stringValue ?? "") (\(summary["date"]?.stringValue ?? "")):")
            for n in summary["notifications"]?.arrayValue ?? [] { print("    " + DeviceCenter.line(n)) }
        }
    }
}

/// `herald device center`: Notification Center as the user sees it.
struct DeviceCenter: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "center",
        abstract: "Print Notification Center: the summaries, then each app's stacks (count and line), newest first.")

    @OptionGroup var device: DeviceLocation
    @Flag(name: .long, help: "Print JSON.") var json = false

    /// `[Demo] Title — Body (time sensitive, silenced by Work)`.
    static func line(_ n: JSONValue) -> String {
        var text = [n["title"]?.stringValue ?? "", n["subtitle"]?.stringValue ?? ""].filter { !$0.isEmpty }
            .joined(separator: " / ")
        if let body = n["body"]?.stringValue, !body.isEmpty { text += text.isEmpty ? body : " — \(body)" }
        var marks: [String] = []
        if (n["timeSensitive"]?.boolValue) == true { marks.append("time sensitive") }
        if n["level"]?.stringValue == "passive" { marks.append("passive") }
        if let focus = n["silencedBy"]?.stringValue { marks.append("silenced by \(focus)") }
        if (n["quiet"]?.boolValue) == true { marks.append("delivered quietly: keep or turn off") }
        return "[\(n["appName"]?.stringValue ?? "")] \(n["identifier"]?.stringValue ?? ""): \(text)"
            + (marks.isEmpty ? "" : " (\(marks.joined(separator: ", ")))")
    }

    func run() async throws {
        let view = try await device.client().json("GET", "/center") ?? .null
        if json { return try printJSONObject(view) }
        if let focus = view["focus"], focus.objectValue != nil {
            print("Focus: \(focus["name"]?.stringValue ?? "") on")
        }
        let summaries = view["summaries"]?.arrayValue ?? []
        let stacks = view["stacks"]?.arrayValue ?? []
        if summaries.isEmpty && stacks.isEmpty { print("Notification Center is empty") }
        for summary in summaries {
            let items = summary["notifications"]?.arrayValue ?? []
            print("\(summary["title"]?.stringValue ?? "") (\(items.count)):")
            for n in items { print("  " + Self.line(n)) }
        }
        for stack in stacks {
            let items = stack["notifications"]?.arrayValue ?? []
            let thread = stack["thread"]?.stringValue ?? ""
            print(
                "\(stack["appName"]?.stringValue ?? "")" + (thread.isEmpty ? "" : " · \(thread)") + " (\(items.count))"
                    + ((stack["line"]?.stringValue).map { " — \($0)" } ?? ""))
            for n in items { print("  " + Self.line(n)) }
        }
        if let held = view["held"]?.intValue, held > 0 {
            print("\(held) waiting for the summary" + ((view["nextSummary"]?.stringValue).map { " at \($0)" } ?? ""))
        }
    }
}

/// `herald device provisional`: the user's Keep or Turn Off on an app's quiet notifications.
struct DeviceProvisional: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "provisional",
        abstract: "Answer an app's provisional (quiet) notifications: Keep → prominently or quietly, or Turn Off.")

    @Argument(help: "The app's bundle id.") var bundleID: String
    @Argument(help: "prominently (Keep → Deliver Prominently), quietly (Keep → Deliver Quietly) or off (Turn Off).")
    var choice: String
    @OptionGroup var device: DeviceLocation

    func validate() throws {
        guard ["prominently", "quietly", "off"].contains(choice) else {
            throw ValidationError("choice: prominently, quietly or off, not '\(choice)'")
        }
    }

    func run() async throws {
        let view = try await device.client().json("POST", "/apps/\(bundleID)/provisional", ["choice": .string(choice)])
        let settings = view?["settings"] ?? .null
        print("\(bundleID): \(settings["authorizationStatus"]?.stringValue ?? "?")")
    }
}

/// `herald device lock`.
struct DeviceLock: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lock",
        abstract:
            "Lock the device: what arrives lands on the lock screen, and answers that need authentication need the passcode."
    )
    @OptionGroup var device: DeviceLocation

    func run() async throws {
        _ = try await device.client().json("PUT", "/lock", ["locked": .bool(true)])
        print("locked")
    }
}

/// `herald device unlock`.
struct DeviceUnlock: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "unlock", abstract: "Unlock the device.")
    @OptionGroup var device: DeviceLocation

    func run() async throws {
        _ = try await device.client().json("PUT", "/lock", ["locked": .bool(false)])
        print("unlocked")
    }
}
