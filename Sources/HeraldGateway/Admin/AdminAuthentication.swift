import Foundation
import HTTPTypes
import HeraldRuntime
import Hummingbird

/// Who may use the admin API: a client with `authorization: Bearer <admin token>`, or the console's
/// page with its session cookie. A request from the page that changes something must also carry the
/// session's CSRF token (`x-herald-csrf`) and, when the browser names its origin, come from the
/// console's own origin: another site's form or script can send the cookie-less request only, or
/// none at all (`SameSite=Strict`), and cannot read the token.
struct AdminAuthentication: RouterMiddleware {
    typealias Context = BasicRequestContext
    let session: ConsoleSession
    let clock: any WallClock

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        if let given = request.headers[.authorization] {
            guard given.count > 7, given.prefix(7).lowercased() == "bearer ",
                session.isAdminToken(String(given.dropFirst(7)))
            else { throw Self.unauthorized }
            return try await next(request, context)
        }
        guard let cookie = ConsoleSession.cookie(in: request.headers[.cookie]),
            session.expiry(of: cookie, now: clock.now()) != nil
        else { throw Self.unauthorized }
        if !request.method.isSafe {
            try Self.requireSameOrigin(request)
            guard let csrf = request.headers[HTTPField.Name(ConsoleSession.csrfHeader)!],
                session.isCSRFToken(csrf, for: cookie)
            else {
                throw HTTPError(
                    .forbidden,
                    message:
                        "\(ConsoleSession.csrfHeader): missing or wrong; a console request carries its page's token")
            }
        }
        return try await next(request, context)
    }

    static var unauthorized: HTTPError {
        HTTPError(
            .unauthorized,
            message: "authorization: Bearer <admin token from the state directory> required (or sign in at /console)")
    }

    /// Refuses a request a browser says comes from another origin than the console's.
    static func requireSameOrigin(_ request: Request) throws {
        guard let origin = request.headers[.origin] else { return }
        let authority = request.head.authority ?? ""
        guard origin == "http://\(authority)" || origin == "https://\(authority)" else {
            throw HTTPError(.forbidden, message: "origin: \(origin) may not change this gateway (only its console may)")
        }
    }
}

extension HTTPRequest.Method {
    /// GET, HEAD and OPTIONS change nothing.
    var isSafe: Bool { self == .get || self == .head || self == .options }
}
