import Foundation
import Testing

/// The gateway's files depend on each other one way (docs/architecture.md): no file names a type of
/// another file that, directly or round a loop, names one of its own. Read from the sources.
@Suite struct ArchitectureTests {
    static let gatewaySources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/HeraldGateway")

    /// The Swift files below `root`, as path → text without comments and string literals.
    static func sources(_ root: URL) throws -> [String: String] {
        var files: [String: String] = [:]
        let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        while let url = enumerator?.nextObject() as? URL {
            guard url.pathExtension == "swift" else { continue }
            let text = try String(contentsOf: url, encoding: .utf8)
            let path = String(url.path.dropFirst(root.path.count + 1))
            files[path] = text.split(separator: "\n", omittingEmptySubsequences: false)
                .map { line in
                    var line = String(line)
                    if let comment = line.range(of: "//") { line = String(line[..<comment.lowerBound]) }
                    return line.replacingOccurrences(of: #""[^"]*""#, with: "\"\"", options: .regularExpression)
                }
                .joined(separator: "\n")
        }
        return files
    }

    /// Which file declares each top-level type.
    static func declarations(_ files: [String: String]) throws -> [String: String] {
        let declaration = try Regex(
            #"(?m)^(?:public |package |internal |final |private |fileprivate )*(?:class|struct|enum|actor|protocol) (\w+)"#
        )
        var declared: [String: String] = [:]
        for (path, text) in files {
            for match in text.matches(of: declaration) {
                if let name = match.output[1].substring { declared[String(name)] = path }
            }
        }
        return declared
    }

    /// The groups of files that depend on each other round a loop (Tarjan's strongly connected
    /// components of more than one file).
    static func loops(_ uses: [String: Set<String>]) -> [[String]] {
        var index: [String: Int] = [:]
        var low: [String: Int] = [:]
        var stack: [String] = []
        var onStack: Set<String> = []
        var next = 0
        var found: [[String]] = []
        func visit(_ v: String) {
            index[v] = next
            low[v] = next
            next += 1
            stack.append(v)
            onStack.insert(v)
            for w in uses[v, default: []].sorted() {
                if index[w] == nil {
                    visit(w)
                    low[v] = min(low[v]!, low[w]!)
                } else if onStack.contains(w) {
                    low[v] = min(low[v]!, index[w]!)
                }
            }
            if low[v] == index[v] {
                var component: [String] = []
                while let w = stack.popLast() {
                    onStack.remove(w)
                    component.append(w)
                    if w == v { break }
                }
                if component.count > 1 { found.append(component.sorted()) }
            }
        }
        for v in uses.keys.sorted() where index[v] == nil { visit(v) }
        return found
    }

    @Test func noTwoGatewayFilesDependOnEachOtherRoundALoop() throws {
        let files = try Self.sources(Self.gatewaySources)
        #expect(files.count > 40, "the gateway's sources were not found at \(Self.gatewaySources.path)")
        let declared = try Self.declarations(files)
        let identifier = try Regex(#"\b[A-Z]\w*"#)
        var uses: [String: Set<String>] = [:]
        for (path, text) in files {
            var used: Set<String> = []
            for match in text.matches(of: identifier) {
                if let owner = declared[String(text[match.range])], owner != path { used.insert(owner) }
            }
            uses[path] = used
        }
        #expect(Self.loops(uses) == [])
    }

    @Test func theLoopFinderFindsALoop() {
        let uses: [String: Set<String>] = ["a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]]
        #expect(Self.loops(uses) == [["a", "b", "c"]])
        #expect(Self.loops(["a": ["b"], "b": []]) == [])
    }
}
