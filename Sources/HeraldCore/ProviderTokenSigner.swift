import Crypto
import Foundation

/// Signs provider authentication tokens (docs/provider-api.md): ES256 JWT with `{"alg":"ES256","kid":…}`
/// and `{"iss":…,"iat":…}`, the signature in the raw r‖s form. The provider client and the
/// gateway's console both sign with it.
public enum ProviderTokenSigner {
    /// A token for `keyID` of `teamID`, issued at `issuedAt` (whole seconds, rounded down).
    public static func token(
        keyID: String, teamID: String, privateKey: P256.Signing.PrivateKey, issuedAt: Date
    ) throws -> String {
        let iat = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        let header = Base64URL.encode(Data(#"{"alg":"ES256","kid":"\#(keyID)"}"#.utf8))
        let claims = Base64URL.encode(Data(#"{"iss":"\#(teamID)","iat":\#(iat)}"#.utf8))
        let input = header + "." + claims
        let signature = try privateKey.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }
}
