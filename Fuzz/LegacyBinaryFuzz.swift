// libFuzzer target for the legacy binary frame parser (HeraldCore/LegacyBinary.swift).
// Built and run by scripts/fuzz.sh (and scripts/fuzz-binary-parser.sh); not part of the package.
//
// Besides "never crashes", every input checks what the gateway relies on:
// - a notification parsed from a stream is the same when parsed from exactly its bytes;
// - any shorter prefix of it asks for more bytes (so a split read never changes the verdict);
// - re-encoding it in its command's form and parsing that gives it back.

import HeraldCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLegacyBinary(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    var offset = 0
    while offset < bytes.count {
        let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
        switch LegacyBinary.parse(rest) {
        case .notification(let n, let consumed):
            check(consumed > 0 && consumed <= rest.count, "consumed \(consumed) of \(rest.count)")
            let exact = UnsafeRawBufferPointer(rebasing: rest[..<consumed])
            check(LegacyBinary.parse(exact) == .notification(n, consumed: consumed), "not the same alone")
            let cut = UnsafeRawBufferPointer(rebasing: rest[..<(consumed - 1)])
            check(LegacyBinary.parse(cut) == .needMoreBytes, "a prefix did not ask for more")
            let again = n.encoded()
            guard case .notification(let m, let used) = LegacyBinary.parse(again) else {
                failure("re-encoded notification refused")
            }
            check(m == n && used == again.count, "re-encoding changed it")
            offset += consumed
        case .failure(let status, _):
            check(status != .noError && status != .shutdown, "a parse cannot fail with \(status)")
            return 0
        case .needMoreBytes:
            return 0
        }
    }
    return 0
}
