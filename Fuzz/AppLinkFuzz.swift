// libFuzzer target: app link frames (HeraldCore/AppLink.swift).
// Built and run by scripts/fuzz.sh; not part of the package.
//
// Properties, for every input: reading never crashes (errors are AppLinkFailure protocol errors); a
// frame that reads, written again as a line, reads back as the same frame, and its answer id is
// found even without reading the rest.
import Foundation
import HeraldCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAppLink(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    let frame: AppLinkFrame
    do {
        frame = try AppLinkFrame(line: bytes)
    } catch is AppLinkFailure {
        return 0
    } catch {
        failure("an error that is not a protocol error: \(error)")
    }
    guard let line = try? frame.encodedLine() else {
        // Values that cannot be written back as JSON (a non-finite number) are the one exception.
        return 0
    }
    let again = try? AppLinkFrame(line: line)
    check(again == frame, "round trip: \(frame) became \(String(describing: again))")
    switch frame {
    case .result(let id, _), .failure(let id, _):
        check(AppLinkFrame.answerID(line: line) == id, "answer id of \(frame)")
    default:
        break
    }
    return 0
}
