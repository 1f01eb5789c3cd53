import Crypto
import Foundation
import HTTPTypes
import Hummingbird

/// Requires `authorization: Bearer <admin token>`.
struct BearerTokenMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let token: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        let given = request.headers[.authorization] ?? ""
        guard given.count > 7, given.prefix(7).lowercased() == "bearer ",
            Self.constantTimeEquals(String(given.dropFirst(7)), token)
        else {
            throw HTTPError(
                .unauthorized, message: "authorization: Bearer <admin token from the state directory> required")
        }
        return try await next(request, context)
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
