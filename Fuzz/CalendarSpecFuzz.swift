// libFuzzer target: `--calendar` specs (`hour=9,minute=30`, HeraldCore/CalendarComponents.swift).
// Built and run by scripts/fuzz.sh; not part of the package.
//
// Properties, for every input: reading never crashes; a spec that reads is valid, and written again
// as name=value pairs it reads back as the same components.
import Foundation
import HeraldCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCalendarSpec(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    guard let components = try? CalendarComponents(parsing: text) else { return 0 }
    check((try? components.validate()) != nil, "\(text) read but is not valid")
    let written = components.pairs.map { "\($0.0)=\($0.1)" }.joined(separator: ",")
    let again = try? CalendarComponents(parsing: written)
    check(again == components, "\(text) → \(written) → \(String(describing: again))")
    return 0
}
