import Crypto
import Foundation
import HeraldCore

/// The console's sign-in (docs/console.md): the admin token, given once on the sign-in page, becomes
/// a session cookie; each state-changing request also carries a CSRF token that only the console's
/// own page can read.
///
/// Both are derived from the admin token with HMAC-SHA256, so the gateway keeps no session table:
/// a session survives a restart, and replacing the admin token ends every session. The cookie is
/// `expiry.mac`; the CSRF token is a MAC of the cookie.
public struct ConsoleSession: Sendable {
    /// The cookie's name.
    public static let cookieName = "herald_console"
    /// The header a state-changing request carries the CSRF token in.
    public static let csrfHeader = "x-herald-csrf"
    /// How long a sign-in lasts.
    public static let lifetime: TimeInterval = 12 * 3600

    let adminToken: String
    private let key: SymmetricKey

    /// Sessions of the admin token `adminToken`.
    public init(adminToken: String) {
        self.adminToken = adminToken
        key = SymmetricKey(data: SHA256.hash(data: Data("herald console session\n\(adminToken)".utf8)))
    }

    /// Whether `given` is the admin token (in constant time).
    public func isAdminToken(_ given: String) -> Bool { Self.constantTimeEquals(given, adminToken) }

    /// A new session's cookie value, valid until `now` + ``lifetime``.
    public func cookie(now: Date) -> String {
        let expiry = String(Int64(now.timeIntervalSince1970 + Self.lifetime))
        return expiry + "." + mac("session \(expiry)")
    }

    /// When the session of cookie value `cookie` ends, if it is one of ours and still valid at `now`.
    public func expiry(of cookie: String, now: Date) -> Date? {
        guard let dot = cookie.firstIndex(of: "."), let seconds = Int64(cookie[..<dot]) else { return nil }
        let expiry = String(cookie[..<dot])
        guard Self.constantTimeEquals(String(cookie[cookie.index(after: dot)...]), mac("session \(expiry)")) else {
            return nil
        }
        let end = Date(timeIntervalSince1970: TimeInterval(seconds))
        return end > now ? end : nil
    }

    /// The CSRF token of a session.
    public func csrfToken(for cookie: String) -> String { mac("csrf \(cookie)") }

    /// Whether `given` is the CSRF token of the session `cookie`.
    public func isCSRFToken(_ given: String, for cookie: String) -> Bool {
        Self.constantTimeEquals(given, csrfToken(for: cookie))
    }

    /// The `Set-Cookie` value that starts a session: `HttpOnly` (no script reads it), `SameSite=Strict`
    /// (no other site's request carries it), `Secure` when the console is served over TLS.
    public func setCookie(_ value: String, secure: Bool) -> String {
        "\(Self.cookieName)=\(value); Path=/; Max-Age=\(Int(Self.lifetime)); HttpOnly; SameSite=Strict"
            + (secure ? "; Secure" : "")
    }

    /// The `Set-Cookie` value that ends a session.
    public static func clearCookie(secure: Bool) -> String {
        "\(cookieName)=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }

    /// The session cookie's value in a `Cookie` header, if there is one.
    public static func cookie(in header: String?) -> String? {
        guard let header else { return nil }
        for part in header.split(separator: ";") {
            let pair = part.trimmingCharacters(in: .whitespaces)
            if pair.hasPrefix(cookieName + "=") { return String(pair.dropFirst(cookieName.count + 1)) }
        }
        return nil
    }

    private func mac(_ text: String) -> String {
        Base64URL.encode(Data(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key)))
    }

    static func constantTimeEquals(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<x.count { diff |= x[i] ^ y[i] }
        return diff == 0
    }
}
