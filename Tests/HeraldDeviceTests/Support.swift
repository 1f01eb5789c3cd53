import Foundation
import HeraldCore
import Synchronization

@testable import HeraldDevice

/// A user who answers with `allow` and counts how often they were asked.
final class CountingPolicy: UserDecisionPolicy {
    let allow: Bool
    private let asked = Mutex(0)
    init(allow: Bool) { self.allow = allow }
    var timesAsked: Int { asked.withLock { $0 } }
    func decide(app: String, options: AuthorizationOptions) -> Bool {
        asked.withLock { $0 += 1 }
        return allow
    }
}

func at(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

/// An engine with one installed, authorized app.
func engine(
    app: String = "com.example.app", allow: Bool = true, options: AuthorizationOptions = [.alert, .sound, .badge],
    zone: String = "UTC", now: Date = at("2025-01-01T00:00:00Z")
) throws -> DeviceEngine {
    var config = DeviceEngine.Configuration()
    config.timeZone = TimeZone(identifier: zone)!
    var e = DeviceEngine(configuration: config, policy: FixedDecision(allow: allow))
    _ = try e.handle(.installApp(InstalledApp(bundleID: app)), now: now)
    _ = try e.handle(.requestAuthorization(app: app, options: options), now: now)
    return e
}

func content(_ body: String, badge: Int? = nil, sound: NotificationSound? = .default, category: String = "")
    -> NotificationContent
{
    NotificationContent(body: body, badge: badge, sound: sound, categoryIdentifier: category)
}

extension [DeviceAction] {
    var presentations: [Presentation] {
        compactMap { if case .present(let p) = $0 { return p } else { return nil } }
    }
}
