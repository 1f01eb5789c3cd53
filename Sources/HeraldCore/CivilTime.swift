/// Proleptic Gregorian civil-date arithmetic on day numbers (days since 1970-01-01), after
/// Howard Hinnant's public-domain algorithms. Pure integer math: no Foundation in the hot path.
package enum Civil {
    package static let secondsPerDay: Int64 = 86_400

    /// Day number of a civil date.
    @inline(__always)
    package static func days(_ year: Int, _ month: Int, _ day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let m = Int64(month)
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// Civil date of a day number.
    @inline(__always)
    package static func date(_ dayNumber: Int64) -> (year: Int, month: Int, day: Int) {
        let z = dayNumber + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (Int(yoe + era * 400 + (m <= 2 ? 1 : 0)), Int(m), Int(d))
    }

    /// Weekday of a day number, 1 = Sunday … 7 = Saturday (Foundation's numbering).
    @inline(__always)
    package static func weekday(_ dayNumber: Int64) -> Int {
        // 1970-01-01 was a Thursday (5).
        Int(((dayNumber % 7) + 7 + 4) % 7) + 1
    }

    @inline(__always)
    package static func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    @inline(__always)
    package static func daysInMonth(_ year: Int, _ month: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    @inline(__always)
    package static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    /// Local seconds (since 1970-01-01T00:00 wall time) of a civil date and second of day.
    @inline(__always)
    package static func seconds(_ year: Int, _ month: Int, _ day: Int, _ secondOfDay: Int = 0) -> Int64 {
        days(year, month, day) * secondsPerDay + Int64(secondOfDay)
    }

    /// Broken-down local time.
    package struct Fields: Equatable {
        package var year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, weekday: Int
    }

    package static func fields(_ localSeconds: Int64) -> Fields {
        let dayNumber = floorDiv(localSeconds, secondsPerDay)
        let tod = Int(localSeconds - dayNumber * secondsPerDay)
        let (y, m, d) = date(dayNumber)
        return Fields(
            year: y, month: m, day: d, hour: tod / 3600, minute: (tod / 60) % 60, second: tod % 60,
            weekday: weekday(dayNumber))
    }
}
