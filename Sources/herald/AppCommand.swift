import ArgumentParser
import Foundation
import HeraldKit
import Synchronization

extension LegacyRepeatInterval: ExpressibleByArgument {}
extension InterruptionLevel: ExpressibleByArgument {}

struct AppCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app",
        abstract: "Act as an installed app from the shell, through HeraldKit and the app link.",
        discussion: """
            Actions:
              authorize          request authorization (--options alert,sound,badge)
              settings           print the app's notification settings
              categories         set categories (--category ...) or print them
              add                add a request (--id, --title, --body, … and a trigger: --in, --at, --calendar, --region)
              pending            list pending requests with their next fire dates
              delivered          list delivered notifications
              remove-pending     remove pending requests (identifiers after the action; none = all)
              remove-delivered   remove delivered notifications (identifiers after the action; none = all)
              badge [N]          print the badge, or set it to N
              schedule-legacy    a UILocalNotification: --fire-date (none or past: now), --time-zone (wall-clock
                                 time that follows the device), --repeat-interval, --alert-action, --no-action,
                                 --region (with --repeats: keeps firing); the device computes the dates
              cancel-legacy      cancel legacy notifications (identifiers; none = all): pending and on the screen
              focus-status       ask to know whether a Focus is on, and print it (INFocusStatusCenter)
              register           register for remote notifications and print the device token
              listen             stay connected and print what the app is told (willPresent, didReceive, pushes,
                                 widget and control reloads, location queries, Live Activity changes)
              activity-start     start a Live Activity (--attributes-type, --attributes, --content-state,
                                 --push-type token|none|<channel id>) and print it
              activity-update ID update one (--content-state, --stale-date, --relevance-score; --title/--body/--sound alert)
              activity-end ID    end one (--content-state; --dismissal default|immediate|<UNIX seconds>)
              activities         list the app's activities
              push-to-start-token  print the app's push-to-start token for --attributes-type
            Examples:
              herald app com.example.demo authorize --options alert,sound,badge
              herald app com.example.demo add --id tea --title Tea --body Steeped --in 180
              herald app com.example.demo add --id standup --body Standup \\
                  --calendar weekday=2,hour=9 --repeats
              herald app com.example.invites categories \\
                  --category INVITE=accept+foreground,decline+destructive
              herald app com.example.demo listen --foreground --present banner,sound
              herald app com.example.demo activity-start --attributes-type Trip \\
                  --content-state '{"stop":5}'
            The app counts as running (in the background, or the foreground with --foreground) while the \
            command is connected.
            """)

    enum Action: String, ExpressibleByArgument, CaseIterable {
        case authorize, settings, categories, add, pending, delivered
        case removePending = "remove-pending"
        case removeDelivered = "remove-delivered"
        case badge, register, listen
        case scheduleLegacy = "schedule-legacy"
        case cancelLegacy = "cancel-legacy"
        case focusStatus = "focus-status"
        case activityStart = "activity-start"
        case activityUpdate = "activity-update"
        case activityEnd = "activity-end"
        case activities
        case pushToStartToken = "push-to-start-token"
    }

    @Argument(help: "The app's bundle id.")
    var bundleID: String
    @Argument(help: "What to do (see below).")
    var action: Action
    @Argument(help: "Identifiers (remove-*) or the badge number (badge).")
    var values: [String] = []

    @Option(
        name: .long, help: "authorize: options, comma-separated (alert, sound, badge, provisional, criticalAlert, …).")
    var options = "alert,sound,badge"
    @Option(
        name: .long,
        help: ArgumentHelp(
            "categories: ID[+customDismiss]=action[+foreground|+destructive|+auth|+text],… (repeatable); "
                + "+customDismiss: the app hears of dismissals."))
    var category: [String] = []

    @Option(name: .long, help: "add: the request's identifier (default: a new UUID).")
    var id: String?
    @Option(name: .long, help: "add: title.") var title = ""
    @Option(name: .long, help: "add: subtitle.") var subtitle = ""
    @Option(name: .long, help: "add: body.") var body = ""
    @Option(name: .long, help: "add: sound: default or a file name.") var sound: String?
    @Option(name: .customLong("set-badge"), help: "add: the badge the notification sets.") var setBadge: Int?
    @Option(name: .customLong("category-id"), help: "add: the category identifier.") var categoryID = ""
    @Option(name: .long, help: "add: the thread identifier.") var thread = ""
    @Option(name: .long, help: "add: the interruption level: passive, active, time-sensitive or critical.")
    var level: InterruptionLevel?
    @Option(name: .long, help: "add: whom it is from, for its stack's line in Notification Center (summaryArgument).")
    var summaryArg: String?
    @Option(name: .long, help: "add: fire after this many seconds.") var `in`: Double?
    @Option(name: .long, help: "add: fire at this instant (ISO 8601 with offset).") var at: String?
    @Option(name: .long, help: "add: fire when the date matches, e.g. hour=9,minute=30 or weekday=2,hour=9.")
    var calendar: String?
    @Option(name: .long, help: "add: the calendar trigger's time zone (default: floating, the device's zone).")
    var timeZone: String?
    @Option(name: .long, help: "add: fire on entering a region: latitude,longitude,radius in metres.")
    var region: String?
    @Flag(name: .long, help: "add: the region fires on exit as well as on entry.") var onExit = false
    @Flag(name: .long, help: "add: repeat.") var repeats = false
    @Option(name: .long, help: "schedule-legacy: the fire date (ISO 8601 with offset); none: now.")
    var fireDate: String?
    @Option(name: .long, help: "schedule-legacy: minute, hour, day, week, month or year.")
    var repeatInterval: LegacyRepeatInterval?
    @Option(name: .long, help: "schedule-legacy: the action button's and the slider's label (alertAction).")
    var alertAction: String?
    @Flag(name: .long, help: "schedule-legacy: hasAction = NO: one OK button, never opens the app.")
    var noAction = false

    @Flag(name: .long, help: "Connect as the foreground app (default: background).")
    var foreground = false
    @Option(name: .long, help: "listen: what to show for foreground notifications (banner,list,sound,badge; none).")
    var present = "banner,list,sound,badge"
    @Option(name: .long, help: "listen: stop after this many events.")
    var count: Int?
    @Option(name: .long, help: "The app link's socket (default: .herald/device/app.sock).")
    var socket: String?
    @Option(name: .customLong("device-state"), help: "The device's state directory (default .herald/device).")
    var deviceState: String?
    @Option(name: .long, help: "activity-*: the attributes' type name.") var attributesType = "Activity"
    @Option(name: .long, help: "activity-start: the attributes, a JSON object.") var attributes = "{}"
    @Option(name: .long, help: "activity-*: the content state, a JSON object.") var contentState: String?
    @Option(name: .long, help: "activity-start: token, none, or a channel id to subscribe to.") var pushType = "token"
    @Option(name: .long, help: "activity-*: the content's stale date, UNIX seconds.") var staleDate: Int64?
    @Option(
        name: .long, help: "add, activity-*: the relevance score (a notification's: 0 to 1; it orders the summary).")
    var relevanceScore: Double = 0
    @Option(name: .long, help: "activity-end: default, immediate, or UNIX seconds.") var dismissal = "default"
    @Flag(name: .long, help: "Print JSON.")
    var json = false

    func validate() throws {
        if action == .badge, values.count > 1 || values.first.map({ Int($0) == nil }) == true {
            throw ValidationError("badge: give a number to set it (herald app \(bundleID) badge 3), or none to read it")
        }
        if action == .scheduleLegacy, fireDate != nil, region != nil {
            throw ValidationError("schedule-legacy: give --fire-date or --region, not both")
        }
        if let fireDate { _ = try parseDate(fireDate, field: "--fire-date") }
        if action == .add, [`in` != nil, at != nil, calendar != nil, region != nil].filter({ $0 }).count > 1 {
            throw ValidationError("add: give at most one of --in, --at, --calendar and --region")
        }
        if let timeZone, TimeZone(identifier: timeZone) == nil {
            throw ValidationError("--time-zone: unknown time zone '\(timeZone)'")
        }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        if action == .activityUpdate || action == .activityEnd, values.count != 1 {
            throw ValidationError(
                "\(action.rawValue): give the activity's id, e.g. herald app \(bundleID) \(action.rawValue) <id>")
        }
    }

    func run() async throws {
        let path = try appLinkPath(state: deviceState, socket: socket)
        let printer = EventPrinter(json: json, present: try Self.presentationOptions(present), limit: count)
        // Launched by the daemon: its launch mode decides the state; from a shell: --foreground or background.
        let environment = ProcessInfo.processInfo.environment
        let launched = environment[AppLink.Environment.launchMode] != nil
        if action == .listen, let text = environment[AppLink.Environment.launchOptions],
            let options = try? JSONDecoder.appLink.decode(DeliveredNotification.self, from: Data(text.utf8))
        {
            printer.emit(
                "launched", options, extra: ["state": environment[AppLink.Environment.launchMode] ?? ""],
                counts: false)
        }
        let center: UserNotificationCenter
        do {
            center = try await UserNotificationCenter.connect(
                bundleID: bundleID, state: foreground ? .foreground : launched ? nil : .background, socketPath: path,
                delegate: action == .listen ? printer : nil)
        } catch {
            throw Self.readable(error, app: bundleID)
        }
        do {
            try await perform(center, printer: printer)
        } catch {
            await center.close()
            throw Self.readable(error, app: bundleID)
        }
        await center.close()
    }

    func perform(_ center: UserNotificationCenter, printer: EventPrinter) async throws {
        switch action {
        case .authorize, .settings, .categories, .badge, .focusStatus, .register: try await performSettings(center)
        case .add, .pending, .delivered, .removePending, .removeDelivered, .scheduleLegacy, .cancelLegacy:
            try await performRequests(center)
        case .activityStart, .activityUpdate, .activityEnd, .activities, .pushToStartToken:
            try await performActivities(center)
        case .listen:
            if center.launchOptions == nil && !json {
                print("listening as \(bundleID) (\(center.state.rawValue)); Ctrl-C to stop")
            }
            fflush(nil)
            Task {
                for await token in center.tokenChanges { print("token \(token)") }
                printer.finish()  // the link closed
            }
            await printer.waitUntilDone(center)
        }
    }

    /// The user's answers and the app's settings: authorization, settings, categories, badge, Focus status, the push token.
    func performSettings(_ center: UserNotificationCenter) async throws {
        switch action {
        case .authorize:
            var requested: AuthorizationOptions = []
            for name in options.split(separator: ",") {
                guard let option = AuthorizationOptions(name: String(name)) else {
                    throw ValidationError("--options: unknown option '\(name)'")
                }
                requested.insert(option)
            }
            let granted = try await center.requestAuthorization(options: requested)
            if json { return try printJSON(["granted": granted]) }
            print(granted ? "granted" : "denied")
        case .settings:
            let settings = try await center.notificationSettings()
            if json { return try printJSON(settings) }
            print(
                "authorization \(settings.authorizationStatus.rawValue), alert \(settings.alertSetting.rawValue) (\(settings.alertStyle.rawValue)), sound \(settings.soundSetting.rawValue), badge \(settings.badgeSetting.rawValue)"
            )
        case .categories:
            if !category.isEmpty {
                try await center.setNotificationCategories(try category.map(Self.category))
            }
            let categories = try await center.notificationCategories()
            if json { return try printJSON(categories) }
            for c in categories {
                print("\(c.identifier): " + c.actions.map(\.identifier).joined(separator: ", "))
            }
        case .badge:
            if let value = values.first.flatMap({ Int($0) }) {
                try await center.setBadgeCount(value)
                print("badge \(value)")
            } else {
                let badge = try await center.badgeCount()
                if json { return try printJSON(["badge": badge]) }
                print("badge \(badge)")
            }
        case .focusStatus:
            let shared = try await center.requestFocusStatusAuthorization()
            let status = try await center.focusStatus()
            struct Shown: Encodable {
                var authorized: Bool
                var isFocused: Bool?
            }
            if json { return try printJSON(Shown(authorized: shared, isFocused: status.isFocused)) }
            print(status.isFocused.map { $0 ? "focused" : "not focused" } ?? "not shared (the user said no)")
        case .register:
            let token = try await center.registerForRemoteNotifications()
            if json { return try printJSON(["token": token]) }
            print(token)
        case .add, .pending, .delivered, .removePending, .removeDelivered, .scheduleLegacy, .cancelLegacy,
            .activityStart, .activityUpdate, .activityEnd, .activities, .pushToStartToken, .listen:
            return
        }
    }

    /// Notification requests, new and legacy, pending and delivered.
    func performRequests(_ center: UserNotificationCenter) async throws {
        switch action {
        case .add:
            let request = NotificationRequest(
                identifier: id ?? UUID().uuidString, content: content(), trigger: try trigger())
            try await center.add(request)
            if json { return try printJSON(["identifier": request.identifier]) }
            print("added \(request.identifier)")
        case .pending:
            let pending = try await center.pendingNotifications()
            if json { return try printJSON(pending) }
            if pending.isEmpty { print("no pending requests") }
            for p in pending {
                let next = p.nextFireDate.map(AppLinkDates.format) ?? "on location"
                print("\(p.request.identifier)  next \(next)  \(p.request.content.title) \(p.request.content.body)")
            }
        case .delivered:
            let delivered = try await center.deliveredNotifications()
            if json { return try printJSON(delivered) }
            if delivered.isEmpty { print("no delivered notifications") }
            for d in delivered {
                print(
                    "\(d.identifier)  \(AppLinkDates.format(d.date))\(d.isRemote ? "  remote" : "")\(d.late ? "  late" : "")  \(d.request.content.title) \(d.request.content.body)"
                )
            }
        case .removePending:
            if values.isEmpty {
                try await center.removeAllPendingNotificationRequests()
            } else {
                try await center.removePendingNotificationRequests(withIdentifiers: values)
            }
            print("removed")
        case .removeDelivered:
            if values.isEmpty {
                try await center.removeAllDeliveredNotifications()
            } else {
                try await center.removeDeliveredNotifications(withIdentifiers: values)
            }
            print("removed")
        case .scheduleLegacy:
            let notification = try legacy()
            try await center.scheduleLocalNotification(notification)
            if json { return try printJSON(["identifier": notification.identifier]) }
            print("scheduled \(notification.identifier)")
        case .cancelLegacy:
            if values.isEmpty {
                try await center.cancelAllLocalNotifications()
            } else {
                for id in values { try await center.cancelLocalNotification(identifier: id) }
            }
            print("cancelled")
        case .authorize, .settings, .categories, .badge, .focusStatus, .register, .activityStart, .activityUpdate,
            .activityEnd, .activities, .pushToStartToken, .listen:
            return
        }
    }

    /// Live Activities.
    func performActivities(_ center: UserNotificationCenter) async throws {
        switch action {
        case .activityStart:
            let pushType: ActivityPushType? =
                switch self.pushType {
                case "token": .token
                case "none": nil
                default: .channel(self.pushType)
                }
            let activity = try await center.requestActivity(
                ActivityRequest(
                    attributesType: attributesType, attributes: try Self.object(attributes, "--attributes"),
                    content: try activityContent(), pushType: pushType))
            try show(activity)
        case .activityUpdate:
            let alert =
                title.isEmpty && body.isEmpty && sound == nil
                ? nil : ActivityAlert(title: title.isEmpty ? nil : title, body: body.isEmpty ? nil : body, sound: sound)
            try show(try await center.updateActivity(id: values[0], content: try activityContent(), alert: alert))
        case .activityEnd:
            let policy: ActivityDismissalPolicy
            switch dismissal {
            case "default": policy = .default
            case "immediate": policy = .immediate
            default:
                guard let seconds = Double(dismissal), seconds.isFinite else {
                    throw ValidationError("--dismissal: default, immediate or UNIX seconds, not '\(dismissal)'")
                }
                policy = .after(Date(timeIntervalSince1970: seconds))
            }
            let content = contentState == nil ? nil : try activityContent()
            try show(try await center.endActivity(id: values[0], content: content, dismissal: policy))
        case .activities:
            let all = try await center.activities()
            if json { return try printJSON(all) }
            if all.isEmpty { print("no activities") }
            for activity in all { print(EventPrinter.line(activity)) }
        case .pushToStartToken:
            let token = try await center.pushToStartToken(attributesType: attributesType)
            if json { return try printJSON(["token": token, "attributesType": attributesType]) }
            print(token)
        case .authorize, .settings, .categories, .add, .pending, .delivered, .removePending, .removeDelivered, .badge,
            .scheduleLegacy, .cancelLegacy, .focusStatus, .register, .listen:
            return
        }
    }

    /// The `UILocalNotification` the options describe.
    func legacy() throws -> LegacyNotification {
        var schedule = LegacySchedule(
            fireDate: try fireDate.map { try parseDate($0, field: "--fire-date") },
            timeZone: try timeZone.map { name in
                guard let zone = TimeZone(identifier: name) else {
                    throw ValidationError("--time-zone: unknown time zone '\(name)'")
                }
                return zone
            }, repeatInterval: repeatInterval)
        if region != nil, case .location(let trigger)? = try trigger() {
            schedule.region = trigger.region
            schedule.regionTriggersOnce = !repeats
        }
        return LegacyNotification(
            identifier: id ?? UUID().uuidString, schedule: schedule, alertTitle: title.isEmpty ? nil : title,
            alertBody: body.isEmpty ? nil : body, alertAction: alertAction, hasAction: !noAction, soundName: sound,
            applicationIconBadgeNumber: setBadge ?? 0, category: categoryID.isEmpty ? nil : categoryID)
    }

    func activityContent() throws -> LiveActivityContent {
        LiveActivityContent(
            state: try Self.object(contentState ?? "{}", "--content-state"),
            staleDate: staleDate.map { Date(timeIntervalSince1970: TimeInterval($0)) }, relevanceScore: relevanceScore)
    }

    func show(_ activity: LiveActivity) throws {
        if json { return try printJSON(activity) }
        print(EventPrinter.line(activity))
    }

    static func object(_ text: String, _ option: String) throws -> JSONValue {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)), case .object = value else {
            throw ValidationError("\(option) must be a JSON object, e.g. '{\"stop\":3}'")
        }
        return value
    }

    func content() -> NotificationContent {
        var content = NotificationContent(
            title: title, subtitle: subtitle, body: body, badge: setBadge,
            sound: sound.map { $0 == "default" ? .default : .named($0) }, categoryIdentifier: categoryID,
            threadIdentifier: thread)
        if let level { content.interruptionLevel = level }
        content.relevanceScore = relevanceScore
        content.summaryArgument = summaryArg
        return content
    }

    func trigger() throws -> NotificationTrigger? {
        do {
            if let seconds = `in` {
                return .timeInterval(try TimeIntervalTrigger(interval: seconds, repeats: repeats))
            }
            if let at {
                let date = try parseDate(at, field: "--at")
                let zone = TimeZone(identifier: timeZone ?? "UTC")!
                let c = CalendarComponents.of(
                    date, in: zone, units: ["year", "month", "day", "hour", "minute", "second"])
                return .calendar(try CalendarTrigger(components: c, repeats: false, timeZone: .fixed(zone.identifier)))
            }
            if let calendar {
                return .calendar(
                    try CalendarTrigger(
                        components: try CalendarComponents(parsing: calendar), repeats: repeats,
                        timeZone: timeZone.map { .fixed($0) } ?? .floating))
            }
            if let region {
                let parts = region.split(separator: ",").compactMap { Double($0) }
                guard parts.count == 3 else {
                    throw ValidationError("--region: '\(region)' is not latitude,longitude,radius")
                }
                return .location(
                    LocationTrigger(
                        region: try CircularRegion(
                            identifier: id ?? "region", latitude: parts[0], longitude: parts[1], radius: parts[2],
                            notifyOnEntry: true, notifyOnExit: onExit),
                        repeats: repeats))
            }
            return nil
        } catch let error as NotificationError {
            throw ValidationError(error.message)
        }
    }

    /// An error as the person at the terminal reads it: Apple's domain and code for Apple's errors
    /// (they are documented), and for the device's own what happened and what to do about it.
    static func readable(_ error: any Error, app: String) -> any Error {
        if let error = error as? NotificationError {
            return CommandFailure(
                "\(AppLink.notificationErrorDomain) \(error.code.rawValue) (\(error.code)): \(error.message)")
        }
        if let error = error as? AppLinkFailure {
            if let activity = error.activityError { return CommandFailure("ActivityKit \(activity)") }
            if error.domain == AppLink.heraldErrorDomain { return CommandFailure(deviceRefusal(error, app: app)) }
            return CommandFailure(error.description)
        }
        return error
    }

    /// The device daemon's own refusal (domain `Herald`), without its domain and code.
    static func deviceRefusal(_ failure: AppLinkFailure, app: String) -> String {
        switch (failure.domain, failure.code) {
        case (AppLinkFailure.Code.protocolError.domain, AppLinkFailure.Code.protocolError.code)
        where failure.message.contains("is not installed"):
            return "\(failure.message); install it with `herald device install \(app) --aps-environment development` "
                + "(or start `herald up --install \(app)=<executable>`), or check the bundle id with `herald device apps`"
        case (AppLinkFailure.Code.deviceFailed.domain, AppLinkFailure.Code.deviceFailed.code):
            return "the device failed: \(failure.message); its log (.herald/device.log under `herald up`) says more"
        default:
            return failure.message
        }
    }
}
