import Foundation
import HeraldCore

extension LocalizationBundle {
    /// Reads `<lang>.lproj/Localizable.strings` (or `Localizable.json`) from an app's bundle directory;
    /// `nil` when it has none. A table that cannot be read is an error.
    public static func load(bundleDirectory: String) throws -> LocalizationBundle? {
        let fm = FileManager.default
        guard let names = try? fm.contentsOfDirectory(atPath: bundleDirectory) else { return nil }
        var tables: [String: StringsTable] = [:]
        for name in names.sorted() where name.hasSuffix(".lproj") {
            let language = String(name.dropLast(".lproj".count))
            for file in ["Localizable.strings", "Localizable.json"] {
                let path = (bundleDirectory as NSString).appendingPathComponent("\(name)/\(file)")
                guard let data = fm.contents(atPath: path) else { continue }
                tables[language] = try StringsTable(data: data)
                break
            }
        }
        return tables.isEmpty ? nil : LocalizationBundle(tables: tables)
    }
}
