import HTTPTypes
import Hummingbird

/// Refuses a request that changes something when a browser says it comes from another site: the
/// device API has no authentication (it listens on loopback), so without this any web page the user
/// opens could post to it, answer a permission dialog or act on a notification. Browsers send
/// `Origin` with such requests; curl, `herald` and the web device's own page (same origin) pass.
struct SameOriginMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        if request.method != .get, request.method != .head, let origin = request.headers[.origin],
            origin != "http://\(request.head.authority ?? "")"
        {
            throw HTTPError(
                .forbidden, message: "origin: \(origin) may not change this device (only its own page may)")
        }
        return try await next(request, context)
    }
}
