import Crypto
import Foundation
import HeraldCore

/// A provider authentication token (JWT, ES256) as APNs reads it (docs/provider-api.md).
///
/// Parsing is lenient in the ways real clients differ: extra header fields (`typ`) and claims,
/// `kid` repeated in the claims, `iat` as an integer, a fractional number straight from a clock
/// (`1795460000.123456`) or either as a JSON string, padding on the base64url parts. A fractional
/// `iat` counts from its whole second (rounded down). The signature must be the raw
/// 64-byte r‖s form; a DER signature is accepted too, since some JWT libraries produce it.
public struct ProviderToken: Sendable, Equatable {
    /// The `kid` header: the key id.
    public var keyID: String
    /// The `iss` claim: the team id.
    public var teamID: String
    /// The `iat` claim, in seconds since 1970.
    public var issuedAt: Int64
    /// The signed part (`header.claims`), as sent.
    public var signingInput: Substring
    /// The signature bytes.
    public var signature: [UInt8]

    /// Why a token could not be read.
    public struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        /// What was wrong.
        public var description: String
    }

    /// Parses the compact form `header.claims.signature`.
    public init(compact: Substring) throws(ParseError) {
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw ParseError(description: "a JWT has three dot-separated parts") }
        guard let headerData = Base64URL.decode(parts[0]),
            case .object(let header)? = try? JSONValue.parse(headerData)
        else { throw ParseError(description: "the JWT header is not base64url JSON") }
        guard let claimsData = Base64URL.decode(parts[1]),
            case .object(let claims)? = try? JSONValue.parse(claimsData)
        else { throw ParseError(description: "the JWT claims are not base64url JSON") }
        guard let signature = Base64URL.decode(parts[2]), !signature.isEmpty else {
            throw ParseError(description: "the JWT signature is not base64url")
        }
        guard header["alg"]?.stringValue == "ES256" else {
            throw ParseError(description: "alg must be ES256")
        }
        guard let kid = header["kid"]?.stringValue ?? claims["kid"]?.stringValue, !kid.isEmpty else {
            throw ParseError(description: "kid is missing")
        }
        guard let iss = claims["iss"]?.stringValue, !iss.isEmpty else {
            throw ParseError(description: "iss is missing")
        }
        guard let iat = claims["iat"].flatMap(Self.seconds) else {
            throw ParseError(
                description: "iat must be a number of seconds (an integer, a fraction, or either as a string)")
        }
        self.keyID = kid
        self.teamID = iss
        self.issuedAt = iat
        self.signingInput = compact[compact.startIndex..<parts[1].endIndex]
        self.signature = Array(signature)
    }

    /// `iat` in whole seconds: an integer, a finite fraction (rounded down), or either in a string.
    static func seconds(_ value: JSONValue) -> Int64? {
        let number: Double
        switch value {
        case .int(let n): return n
        case .double(let d): number = d
        case .string(let s):
            let text = s.trimmingCharacters(in: .whitespaces)
            if let n = Int64(text) { return n }
            guard let d = Double(text) else { return nil }
            number = d
        default: return nil
        }
        // Beyond ±2^62 seconds is no time a clock gives; it also keeps the conversion in range.
        guard number.isFinite, abs(number) < 4.6e18 else { return nil }
        return Int64(number.rounded(.down))
    }

    /// Whether `key` signed this token.
    public func isSigned(by key: P256.Signing.PublicKey) -> Bool {
        let input = Data(signingInput.utf8)
        if signature.count == 64, let sig = try? P256.Signing.ECDSASignature(rawRepresentation: signature) {
            return key.isValidSignature(sig, for: input)
        }
        if let sig = try? P256.Signing.ECDSASignature(derRepresentation: signature) {
            return key.isValidSignature(sig, for: input)
        }
        return false
    }
}
