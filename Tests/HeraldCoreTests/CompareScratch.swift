import Testing
import Foundation
@testable import HeraldCore

@Test func scratchCompare() {
    let cases = FoundationCalendarReference.randomCases(count: 20000, seed: 42)
    let r = FoundationCalendarReference.compare(cases)
    print("total \(r.total) agree \(r.agreements) explained \(r.explained) unexplained \(r.unexplained.count)")
    let f = ISO8601DateFormatter()
    for (why, ex) in r.examples { for e in ex { print("EX \(why) \(e.0.components) \(e.0.zoneIdentifier) after \(f.string(from: e.0.after)) herald \(e.herald.map(f.string) ?? "nil") foundation \(e.foundation.map(f.string) ?? "nil")") } }
    for e in r.unexplained.prefix(40) {
        let tz = TimeZone(identifier: e.0.zoneIdentifier)!; let g = ISO8601DateFormatter(); g.timeZone = tz
        print("UN \(e.0.components) \(e.0.zoneIdentifier) after \(g.string(from: e.0.after)) herald \(e.herald.map(g.string) ?? "nil") foundation \(e.foundation.map(g.string) ?? "nil")")
    }
}
