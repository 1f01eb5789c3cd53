// libFuzzer target: the gateway's one-pass payload scanner against HeraldCore's full validator.
// Built and run by scripts/fuzz.sh; not part of the package.
//
// Properties, for every input:
// - accept/reject agree on the document: the scanner refuses exactly the bodies `Payload` refuses
//   as a whole ("payload": not JSON, not an object, empty); when the scanner accepts, `Payload` may
//   still refuse a key under `aps` (the device's job), but never the document;
// - when both accept, what the gateway infers from the scan (alert, sound, badge, content-available)
//   is what the device reads.
import Foundation
import HeraldCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPayload(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    let scanned: PayloadSummary?
    do {
        scanned = try PayloadSummary.scan(bytes)
    } catch {
        scanned = nil
    }
    let parsed: Result<Payload, PayloadError>
    do {
        parsed = .success(try Payload(data: Data(bytes)))
    } catch {
        parsed = .failure(error)
    }
    switch (scanned, parsed) {
    case (nil, .success):
        failure("the scanner refused a payload the validator accepts")
    case (nil, .failure(let error)):
        check(error.key == "payload", "the scanner refused the document, the validator only \(error)")
    case (.some, .failure(let error)):
        check(error.key != "payload", "the scanner accepted a document the validator refuses: \(error)")
    case (.some(let summary), .success(let payload)):
        check(summary.hasAlert == (payload.aps.alert != nil), "alert: \(summary) vs \(payload.aps)")
        check(summary.hasSound == (payload.aps.sound != nil), "sound: \(summary) vs \(payload.aps)")
        check(summary.hasBadge == (payload.aps.badge != nil), "badge: \(summary) vs \(payload.aps)")
        check(
            summary.contentAvailable == payload.aps.contentAvailable, "content-available: \(summary) vs \(payload.aps)")
    }
    return 0
}
