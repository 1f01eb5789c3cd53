import HeraldCore
import Testing

@testable import HeraldDevice

/// What the screen may show of a notification under Show Previews (spec: previews always / when
/// authenticated / never; categories' hiddenPreviewsShowTitle, hiddenPreviewsShowSubtitle and
/// placeholder).
struct ScreenPreviewTests {
    let content: NotificationContent = {
        var content = NotificationContent(title: "Ann", body: "Lunch at noon?")
        content.subtitle = "Team"
        return content
    }()

    func settings(_ previews: ShowPreviewsSetting) -> NotificationSettings {
        var settings = NotificationSettings.after(decision: true, options: [.alert])
        settings.showPreviewsSetting = previews
        return settings
    }

    @Test func whenAuthenticatedHidesOnlyWhileLocked() {
        let unlocked = DeviceAPI.preview(content, category: nil, settings: settings(.whenAuthenticated), locked: false)
        #expect(unlocked == ("Ann", "Team", "Lunch at noon?"))
        let locked = DeviceAPI.preview(content, category: nil, settings: settings(.whenAuthenticated), locked: true)
        #expect(locked == ("", "", "Notification"))
        let always = DeviceAPI.preview(content, category: nil, settings: settings(.always), locked: true)
        #expect(always == ("Ann", "Team", "Lunch at noon?"))
    }

    @Test func theCategoryKeepsItsTitleOrSubtitleAndGivesThePlaceholder() throws {
        let titled = try NotificationCategory(
            identifier: "CHAT", actions: [], options: [.hiddenPreviewsShowTitle],
            hiddenPreviewsBodyPlaceholder: "New message")
        let hidden = DeviceAPI.preview(content, category: titled, settings: settings(.never), locked: false)
        #expect(hidden == ("Ann", "", "New message"))
        let subtitled = try NotificationCategory(identifier: "S", actions: [], options: [.hiddenPreviewsShowSubtitle])
        let onlySubtitle = DeviceAPI.preview(content, category: subtitled, settings: settings(.never), locked: false)
        #expect(onlySubtitle == ("", "Team", "Notification"))
    }
}
