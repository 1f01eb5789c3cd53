import Foundation
import Testing

/// Every module's files depend on each other one way (docs/architecture.md): no file names a type of
/// another file of its module that, directly or round a loop, names one of its own. Read from the
/// sources. (Modules themselves cannot loop: the package manager refuses a cycle of targets.)
@Suite struct ArchitectureTests {
    static let sourcesRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources")

    /// Every module: the folders under Sources/.
    static func modules() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: sourcesRoot.path)
            .filter { name in
                var isDirectory: ObjCBool = false
                return FileManager.default.fileExists(
                    atPath: sourcesRoot.appendingPathComponent(name).path, isDirectory: &isDirectory)
                    && isDirectory.boolValue
            }
            .sorted()
    }

    /// The Swift files below `root`, as path → text without comments and string literals.
    static func sources(_ root: URL) throws -> [String: String] {
        var files: [String: String] = [:]
        let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        while let url = enumerator?.nextObject() as? URL {
            guard url.pathExtension == "swift" else { continue }
            let text = try String(contentsOf: url, encoding: .utf8)
            let path = String(url.path.dropFirst(root.path.count + 1))
            files[path] = SwiftCode.code(text)
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

    /// Which files of a module name a type another file of the module declares.
    static func uses(_ files: [String: String]) throws -> [String: Set<String>] {
        let declared = try declarations(files)
        let identifier = try Regex(#"\b[A-Z]\w*"#)
        var uses: [String: Set<String>] = [:]
        for (path, text) in files {
            var used: Set<String> = []
            for match in text.matches(of: identifier) {
                if let owner = declared[String(text[match.range])], owner != path { used.insert(owner) }
            }
            uses[path] = used
        }
        return uses
    }

    @Test func everyModuleIsFound() throws {
        let modules = try Self.modules()
        #expect(
            Set([
                "HeraldCore", "HeraldRuntime", "HeraldDevice", "HeraldGateway", "HeraldKit", "HeraldProvider",
                "HeraldTesting", "herald",
            ]).isSubset(of: Set(modules)),
            "the modules were not found at \(Self.sourcesRoot.path): \(modules)")
        let gateway = try Self.sources(Self.sourcesRoot.appendingPathComponent("HeraldGateway"))
        #expect(gateway.count > 40, "the gateway's sources were not found")
    }

    @Test(arguments: try modules())
    func noTwoFilesOfAModuleDependOnEachOtherRoundALoop(module: String) throws {
        let files = try Self.sources(Self.sourcesRoot.appendingPathComponent(module))
        #expect(!files.isEmpty, "no Swift files in Sources/\(module)")
        let loops = Self.loops(try Self.uses(files))
        #expect(loops.isEmpty, "files of \(module) that depend on each other round a loop: \(loops)")
    }

    @Test func theLoopFinderFindsALoop() {
        let uses: [String: Set<String>] = ["a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]]
        #expect(Self.loops(uses) == [["a", "b", "c"]])
        #expect(Self.loops(["a": ["b"], "b": []]) == [])
    }
}
