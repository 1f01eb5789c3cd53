// libFuzzer target: provider token (JWT) parsing and verification (HeraldGateway/ProviderToken.swift).
// Built and run by scripts/fuzz.sh; not part of the package.
//
// Properties, for every input:
// - reading never crashes, and reading the same text twice gives the same token;
// - a token that reads has a signing input that is exactly its text up to the second dot;
// - written again in canonical form (header {alg, kid}, claims {iss, iat}) it reads back with the same
//   key id, team and iat;
// - that canonical form, signed with a test key, verifies with the key (raw and DER signatures), and
//   fails once one byte of it or of its signature changes; the input's own signature never verifies
//   with a key it was not made with.
import Crypto
import Foundation
import HeraldCore

let key = P256.Signing.PrivateKey()
let other = P256.Signing.PrivateKey()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJWT(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = Substring(String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self))
    guard let token = try? ProviderToken(compact: text) else { return 0 }
    check((try? ProviderToken(compact: text)) == token, "reading twice differs")
    let parts = text.split(separator: ".", omittingEmptySubsequences: false)
    check(token.signingInput == text[text.startIndex..<parts[1].endIndex], "signing input")
    check(!token.isSigned(by: other.publicKey), "a random signature verified")

    // Canonical form of what was read.
    func json(_ s: String) -> String {
        String(decoding: try! JSONEncoder().encode(s), as: UTF8.self)
    }
    let header = #"{"alg":"ES256","kid":\#(json(token.keyID))}"#
    let claims = #"{"iss":\#(json(token.teamID)),"iat":\#(token.issuedAt)}"#
    let input = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data(claims.utf8))
    let signature = try! key.signature(for: Data(input.utf8))
    for encoded in [signature.rawRepresentation, signature.derRepresentation] {
        let canonical = input + "." + Base64URL.encode(encoded)
        guard let again = try? ProviderToken(compact: Substring(canonical)) else {
            failure("the canonical form does not read: \(canonical)")
        }
        check(
            again.keyID == token.keyID && again.teamID == token.teamID && again.issuedAt == token.issuedAt,
            "canonical form changed the token")
        check(again.isSigned(by: key.publicKey), "a good signature did not verify")
        check(!again.isSigned(by: other.publicKey), "verified with the wrong key")
        var tampered = again
        tampered.signature[tampered.signature.count / 2] ^= 0x01
        check(!tampered.isSigned(by: key.publicKey), "a changed signature verified")
        let changedInput = "x" + input.dropFirst()
        if let changed = try? ProviderToken(compact: Substring(changedInput + "." + Base64URL.encode(encoded))) {
            check(!changed.isSigned(by: key.publicKey), "a changed input verified")
        }
    }
    return 0
}
