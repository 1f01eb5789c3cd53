import HeraldCore
import Testing

@Suite struct RecentIDsTests {
    @Test func remembersOnlyTheNewestCapacityIDs() {
        var ids = RecentIDs(capacity: 3)
        for id in ["a", "b", "c"] { ids.insert(id) }
        #expect(ids.contains("a") && ids.contains("b") && ids.contains("c"))
        ids.insert("b")  // already there: nothing is forgotten
        #expect(ids.contains("a"))
        ids.insert("d")  // the oldest, "a", goes
        #expect(!ids.contains("a") && ids.contains("b") && ids.contains("d"))
        ids.insert("e")
        ids.insert("f")
        #expect(!ids.contains("b") && !ids.contains("c") && ["d", "e", "f"].allSatisfy(ids.contains))
    }
}
