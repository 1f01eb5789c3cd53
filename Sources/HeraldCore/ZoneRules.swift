import Foundation
import Synchronization

/// A time zone's offset history as a table of transitions, so that local ↔ UTC conversion is a binary
/// search instead of a call into ICU. Built once per zone from Foundation's own `TimeZone` data (the same
/// data `Calendar` uses) for 1900–2200; outside that range the nearest known offset applies.
public final class ZoneRules: Sendable {
    /// The zone's identifier (`America/New_York`, `GMT+0530`).
    public let identifier: String
    let initialOffset: Int64
    package let instants: [Int64]
    package let offsetsBefore: [Int64]
    package let offsetsAfter: [Int64]
    /// Wall-clock start of each transition's gap or overlap: `T + min(before, after)`.
    let localLow: [Int64]
    /// Wall-clock end of each transition's gap or overlap: `T + max(before, after)`.
    let localHigh: [Int64]

    /// How a wall-clock time maps to instants.
    public enum Resolution: Equatable, Sendable {
        /// Exists once.
        case unique(Int64)
        /// Does not exist (spring forward); the payload is the transition, the first instant after the gap.
        case gap(transition: Int64)
        /// Exists twice (fall back).
        case overlap(first: Int64, second: Int64)
    }

    init(identifier: String, initialOffset: Int64, transitions: [(instant: Int64, before: Int64, after: Int64)]) {
        self.identifier = identifier
        self.initialOffset = initialOffset
        instants = transitions.map(\.instant)
        offsetsBefore = transitions.map(\.before)
        offsetsAfter = transitions.map(\.after)
        localLow = transitions.map { $0.instant + min($0.before, $0.after) }
        localHigh = transitions.map { $0.instant + max($0.before, $0.after) }
    }

    private static let cache = Mutex<[String: ZoneRules]>([:])
    static let tableStart = Date(timeIntervalSince1970: -2_208_988_800)  // 1900-01-01
    static let tableEnd = Date(timeIntervalSince1970: 7_258_118_400)  // 2200-01-01

    /// The rules of a Foundation time zone (cached by identifier).
    public static func of(_ timeZone: TimeZone) -> ZoneRules {
        let id = timeZone.identifier
        if let cached = cache.withLock({ $0[id] }) { return cached }
        let rules = build(timeZone)
        cache.withLock { $0[id] = rules }
        return rules
    }

    /// The rules of a zone by identifier, or `nil` when Foundation does not know it.
    public static func named(_ identifier: String) -> ZoneRules? {
        TimeZone(identifier: identifier).map(of)
    }

    /// A zone with a constant offset from UTC.
    public static func fixed(secondsFromGMT: Int) -> ZoneRules {
        ZoneRules(identifier: "GMT\(secondsFromGMT)", initialOffset: Int64(secondsFromGMT), transitions: [])
    }

    private static func build(_ tz: TimeZone) -> ZoneRules {
        var transitions: [(Int64, Int64, Int64)] = []
        var date = tableStart
        var offset = Int64(tz.secondsFromGMT(for: date))
        let initial = offset
        while let next = tz.nextDaylightSavingTimeTransition(after: date), next < tableEnd, next > date {
            let after = Int64(tz.secondsFromGMT(for: next))
            if after != offset {
                transitions.append((Int64(next.timeIntervalSince1970.rounded(.down)), offset, after))
                offset = after
            }
            date = next
        }
        return ZoneRules(
            identifier: tz.identifier, initialOffset: initial,
            transitions: transitions.map { (instant: $0.0, before: $0.1, after: $0.2) })
    }

    /// Index of the last element `<= value` in a sorted array, or -1.
    @inline(__always)
    private static func lastIndex(_ array: [Int64], atMost value: Int64) -> Int {
        var lo = 0
        var hi = array.count
        while lo < hi {
            let mid = (lo + hi) >> 1
            if array[mid] <= value { lo = mid + 1 } else { hi = mid }
        }
        return lo - 1
    }

    /// Seconds east of UTC at an instant (UNIX seconds).
    public func offset(at instant: Int64) -> Int64 {
        let k = Self.lastIndex(instants, atMost: instant)
        return k < 0 ? initialOffset : offsetsAfter[k]
    }

    /// Wall-clock seconds of an instant.
    public func local(_ instant: Int64) -> Int64 { instant + offset(at: instant) }

    /// Where a wall-clock time (local seconds) falls.
    public func resolve(local: Int64) -> Resolution {
        let k = Self.lastIndex(localLow, atMost: local)
        if k < 0 { return .unique(local - initialOffset) }
        if local < localHigh[k] {
            return offsetsAfter[k] > offsetsBefore[k]
                ? .gap(transition: instants[k])
                : .overlap(first: local - offsetsBefore[k], second: local - offsetsAfter[k])
        }
        return .unique(local - offsetsAfter[k])
    }

    /// The wall-clock time from which a forward search starting at `instant` must look: the instant's own
    /// wall time, or — when the instant lies in the first pass of a repeated interval — the start of that
    /// interval, whose second pass is still ahead.
    func searchStart(_ instant: Int64) -> Int64 {
        let k = Self.lastIndex(instants, atMost: instant) + 1
        if k < instants.count, offsetsAfter[k] < offsetsBefore[k],
            instant >= instants[k] - (offsetsBefore[k] - offsetsAfter[k])
        {
            return instants[k] + offsetsAfter[k]
        }
        return local(instant)
    }
}
