import Foundation
import Testing

/// Runs the real `herald` executable built beside the tests.
func runHerald(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
    try run(try heraldExecutable().path, arguments)
}

@Suite(.ownThread) struct TriggerCommandTests {
    @Test func nextFireDatesAcrossSpringForward() throws {
        let r = try runHerald([
            "trigger", "next", "--calendar", "hour=2,minute=30", "--time-zone", "America/New_York",
            "--after", "2025-03-08T12:00:00Z", "--count", "3",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "2025-03-09T03:00:00-04:00\n2025-03-10T02:30:00-04:00\n2025-03-11T02:30:00-04:00\n")
    }

    @Test func jsonForMachines() throws {
        let r = try runHerald([
            "trigger", "next", "--calendar", "weekday=2,hour=9", "--floating", "--device-time-zone", "Asia/Tokyo",
            "--after", "2025-01-01T00:00:00Z", "--count", "2", "--json",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        #expect(object?["fireDates"] as? [String] == ["2025-01-06T09:00:00+09:00", "2025-01-13T09:00:00+09:00"])
        #expect(object?["timeZone"] as? String == "Asia/Tokyo")
    }

    @Test func oneShotAndIntervals() throws {
        let once = try runHerald([
            "trigger", "next", "--calendar", "hour=9", "--no-repeats", "--count", "5", "--after",
            "2025-01-01T00:00:00Z",
        ])
        #expect(once.stdout == "2025-01-01T09:00:00Z\n")
        let every = try runHerald([
            "trigger", "next", "--interval", "90", "--count", "2", "--after", "2025-01-01T00:00:00Z",
        ])
        #expect(every.stdout == "2025-01-01T00:01:30Z\n2025-01-01T00:03:00Z\n")
    }

    @Test(arguments: [
        (["trigger", "next", "--calendar", "hour=25"], "calendar.hour: must be 0…23, not 25"),
        (["trigger", "next", "--calendar", "hr=2"], "unknown component 'hr'"),
        (
            ["trigger", "next", "--calendar", "hour=2", "--time-zone", "Mars/Base"],
            "--time-zone: unknown time zone 'Mars/Base'"
        ),
        (
            ["trigger", "next", "--calendar", "hour=2", "--after", "yesterday"],
            "--after: 'yesterday' is not an ISO 8601 date"
        ),
        (["trigger", "next", "--interval", "30", "--repeats"], "must be at least 60 seconds when repeating"),
        (["trigger", "next"], "give exactly one of --calendar or --interval"),
    ])
    func badInputNamesTheField(arguments: [String], message: String) throws {
        let r = try runHerald(arguments)
        #expect(r.status != 0)
        #expect(r.stderr.contains(message), "\(r.stderr)")
    }

    @Test func compareWithFoundation() throws {
        let r = try runHerald(["trigger", "compare", "--count", "500", "--seed", "3"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("cases: 500") && r.stdout.contains("unexplained: 0"))
    }
}
