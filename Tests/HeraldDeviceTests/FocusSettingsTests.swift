import Foundation
import HeraldCore
import Testing

@testable import HeraldDevice

/// Focus schedules on the device's zone: days, intervals across midnight, daylight saving time, and
/// what a manual choice does to them.
@Suite struct FocusSettingsTests {
    let newYork = ZoneRules.of(TimeZone(identifier: "America/New_York")!)

    func settings(_ schedules: [FocusSchedule], mode: String = "work") -> FocusSettings {
        var focus = FocusSettings()
        focus.modes = focus.modes.map { m in
            var m = m
            if m.identifier == mode { m.schedules = schedules }
            return m
        }
        return focus
    }

    @Test func aWeekdayScheduleCoversItsDaysOnly() throws {
        let focus = settings([
            try FocusSchedule(weekdays: [2, 3, 4, 5, 6], start: DayTime("09:00"), end: DayTime("17:00"))
        ])
        // Friday 2025-01-10 16:59 in New York: on; 17:00: off; Saturday 10:00: off.
        #expect(focus.active(at: at("2025-01-10T21:59:00Z"), in: newYork)?.identifier == "work")
        #expect(focus.active(at: at("2025-01-10T22:00:00Z"), in: newYork) == nil)
        #expect(focus.active(at: at("2025-01-11T15:00:00Z"), in: newYork) == nil)
        // The next change after Friday evening is Monday 09:00.
        #expect(focus.nextChange(after: at("2025-01-10T22:00:00Z"), in: newYork) == at("2025-01-13T14:00:00Z"))
    }

    @Test func anIntervalAcrossMidnightBelongsToTheDayItStarts() throws {
        let focus = settings(
            [try FocusSchedule(weekdays: [6], start: DayTime("22:00"), end: DayTime("06:00"))], mode: "sleep")
        // Friday 22:00 → Saturday 06:00 (New York).
        #expect(focus.active(at: at("2025-01-11T05:00:00Z"), in: newYork)?.identifier == "sleep")  // Sat 00:00
        #expect(focus.active(at: at("2025-01-11T11:00:00Z"), in: newYork) == nil)  // Sat 06:00
        #expect(focus.active(at: at("2025-01-12T05:00:00Z"), in: newYork) == nil)  // Sun 00:00: not a Friday night
    }

    @Test func aStartInTheSpringForwardGapIsTheFirstInstantAfterIt() throws {
        let focus = settings([try FocusSchedule(start: DayTime("02:30"), end: DayTime("03:30"))])
        // 2025-03-09 in New York: 02:00 EST jumps to 03:00 EDT (07:00Z).
        #expect(focus.active(at: at("2025-03-09T06:59:59Z"), in: newYork) == nil)
        #expect(focus.active(at: at("2025-03-09T07:00:00Z"), in: newYork)?.identifier == "work")
        #expect(focus.active(at: at("2025-03-09T07:30:00Z"), in: newYork) == nil)  // 03:30 EDT
        #expect(focus.nextChange(after: at("2025-03-09T05:00:00Z"), in: newYork) == at("2025-03-09T07:00:00Z"))
    }

    @Test func manualChoicesWinOverSchedules() throws {
        var focus = settings([try FocusSchedule(start: DayTime("09:00"), end: DayTime("17:00"))])
        let noon = at("2025-01-10T17:00:00Z")
        try focus.turnOn("sleep", until: nil)
        #expect(focus.active(at: noon, in: newYork)?.identifier == "sleep")
        focus.turnOff(at: noon, in: newYork)
        // Off by hand inside the schedule: off until 17:00, then the schedule decides again.
        #expect(focus.manual?.until == at("2025-01-10T22:00:00Z"))
        #expect(focus.active(at: noon, in: newYork) == nil)
        #expect(focus.active(at: at("2025-01-11T14:30:00Z"), in: newYork)?.identifier == "work")
        #expect(throws: NotificationError.self) { try focus.remove("work") }
        try focus.put(FocusMode(identifier: "reading", name: "Reading"))
        try focus.turnOn("reading", until: nil)
        try focus.remove("reading")
        #expect(focus.manual == nil && focus.mode("reading") == nil)
        #expect(throws: NotificationError.self) { try focus.put(FocusMode(identifier: "bad id", name: "x")) }
        #expect(FocusMode.identifier(forName: "Deep Work!") == "deep-work")
    }

    @Test func timesOfDayReadAndWriteAsHHMM() throws {
        #expect(try DayTime("7:05").description == "07:05")
        #expect(throws: NotificationError.self) { try DayTime("24:00") }
        #expect(throws: NotificationError.self) { try DayTime("9") }
        let data = try JSONEncoder().encode(
            try FocusSchedule(weekdays: [7, 1], start: DayTime("22:00"), end: DayTime("07:00")))
        #expect(String(decoding: data, as: UTF8.self).contains(#""start":"22:00""#))
        let back = try JSONDecoder().decode(FocusSchedule.self, from: data)
        let seven = try DayTime("07:00")
        #expect(back.weekdays == [1, 7] && back.end == seven)
        #expect(throws: (any Error).self) {
            try JSONDecoder().decode(
                FocusSchedule.self, from: Data(#"{"weekdays":[],"start":"25:00","end":"07:00"}"#.utf8))
        }
    }

    @Test func summaryTimesAndTitles() throws {
        var summary = SummarySettings()
        summary.times = [try DayTime("08:00"), try DayTime("18:00")]
        #expect(summary.nextTime(after: at("2025-01-10T23:30:00Z"), in: newYork) == at("2025-01-11T13:00:00Z"))
        #expect(SummarySettings.title(at: at("2025-01-11T13:00:00Z"), in: newYork) == "Your Morning Summary")
        #expect(SummarySettings.title(at: at("2025-01-11T19:00:00Z"), in: newYork) == "Your Afternoon Summary")
        #expect(SummarySettings.title(at: at("2025-01-11T23:00:00Z"), in: newYork) == "Your Evening Summary")
        summary.times = (0..<13).map { try! DayTime(hour: $0) }
        #expect(throws: NotificationError.self) { try summary.validate() }
    }
}
