// libFuzzer target: strings tables, `.strings` and JSON (HeraldCore/Localization.swift), and the
// `%@` / `%1$@` formatter.
// Built and run by scripts/fuzz.sh; not part of the package.
//
// Properties, for every input: reading never crashes; a table that reads, written as a JSON table,
// reads back the same; every format in it fills from arguments without crashing, and a format with
// no `%` comes out as it is.
import Foundation
import HeraldCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLocalization(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(UnsafeRawBufferPointer(start: start, count: count))
    guard let table = try? StringsTable(data: data) else { return 0 }
    let json = try! JSONEncoder().encode(table.entries)
    let again = try? StringsTable(data: json)
    check(again?.entries == table.entries, "JSON round trip of \(table.entries)")
    for (_, format) in table.entries.prefix(16) {
        let filled = LocalizationBundle.format(format, arguments: ["a", "b"])
        if !format.contains("%") { check(filled == format, "\(format) became \(filled)") }
    }
    return 0
}
