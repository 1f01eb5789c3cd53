import Foundation
import HeraldCore
import Testing

/// `Duration.timeInterval`: how a configuration's durations become Foundation's seconds.
@Suite struct DurationTests {
    @Test func wholeAndFractionalSecondsBecomeTheSameTimeInterval() {
        #expect(Duration.seconds(300).timeInterval == 300)
        #expect(Duration.seconds(30 * 86400).timeInterval == 30 * 86400)
        #expect(Duration.milliseconds(500).timeInterval == 0.5)
        #expect(Duration.milliseconds(50).timeInterval == 0.05)
        #expect(Duration.nanoseconds(1).timeInterval == 1e-9)
        #expect(Duration.zero.timeInterval == 0)
        #expect(Duration.seconds(-2).timeInterval == -2)
    }
}
