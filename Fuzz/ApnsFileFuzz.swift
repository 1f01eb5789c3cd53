// libFuzzer target: `.apns` files (HeraldCore/SimulatorPushFile.swift).
// Built and run by scripts/fuzz.sh; not part of the package.
//
// Properties, for every input: reading never crashes; a file that names an app gives a payload that
// is a JSON object without the "Simulator Target Bundle" key; a file that names none gives its own
// bytes; putting the key back into the payload reads back the same app and payload.
import Foundation
import HeraldCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzApnsFile(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(UnsafeRawBufferPointer(start: start, count: count))
    guard let file = try? SimulatorPushFile(data: data) else { return 0 }
    guard let topic = file.topic else {
        check(file.payload == data, "a file without a target changed")
        return 0
    }
    guard var object = (try? JSONSerialization.jsonObject(with: file.payload)) as? [String: Any] else {
        failure("the payload is not a JSON object")
    }
    check(object[SimulatorPushFile.targetKey] == nil, "the target key stayed in the payload")
    object[SimulatorPushFile.targetKey] = topic
    let rebuilt = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    let again = try? SimulatorPushFile(data: rebuilt)
    check(again == file, "putting the key back changed the file")
    return 0
}
