// libFuzzer target: device link messages (HeraldCore/DeviceLink.swift).
// Built and run by scripts/fuzz.sh; not part of the package.
//
// Properties, for every input: reading never crashes; reading from bytes in place and from a copy
// agree; a message that reads, written again, reads back as the same message.
import Foundation
import HeraldCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDeviceLink(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    let inPlace = try? LinkMessage(json: bytes)
    let copied = try? LinkMessage(json: Data(bytes))
    check(inPlace == copied, "in place \(String(describing: inPlace)) vs copied \(String(describing: copied))")
    guard let message = inPlace else { return 0 }
    let again = try? LinkMessage(json: message.encoded())
    check(again == message, "round trip: \(message) became \(String(describing: again))")
    return 0
}
