import AccessTokens
import FleetConfiguration
import HTTPTypes
import Hummingbird
import Logging

/// In front of every route: the body size limit, the per-client rate limit (fleet-wide, in Redis), bearer-token
/// authentication (for everything but Apple's notification endpoint), and errors as JSON.
///
/// Apple's notification endpoint is limited after the notification is authenticated instead
/// (`APIServer.receiveNotification`): charged up front to the caller's address, Apple's own
/// notifications would share a bucket with whatever junk comes from the same proxy.
struct ProtectionMiddleware: RouterMiddleware {
    typealias Context = APIRequestContext

    let tokens: NamedTokens
    let limiter: FleetClientLimiter
    let trustedProxies: TrustedProxies
    let maxBodyBytes: Int
    let metrics: APIMetrics
    /// Paths Apple calls, which carry their own proof (a password or a signature) instead of a token.
    let openPaths: Set<String>
    /// Whether /console is the ops console's, which has its own login and answers with pages.
    let consoleMounted: Bool

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.clientAddress = trustedProxies.client(
            peer: context.remoteIP, forwarded: request.headers[Self.forwarded], xForwardedFor: request.headers[Self.xForwardedFor])
        if consoleMounted, request.uri.path == "/console" || request.uri.path.hasPrefix("/console/") {
            return try await next(request, context)
        }
        do {
            context.grant = bearerToken(of: request).flatMap { tokens.grant(presenting: $0) }
            if let length = request.headers[.contentLength].flatMap(Int.init), length > maxBodyBytes {
                // Not Apple's on its own path either: its sender is charged, as for a forgery.
                if openPaths.contains(request.uri.path) { try await limiter.charge(address: context.clientAddress, counting: metrics) }
                metrics.rejected("body_too_large")
                throw APIError.bodyTooLarge(limit: maxBodyBytes)
            }
            // Callers without a valid token are limited by address, so guessing tokens is slow too.
            if !openPaths.contains(request.uri.path) {
                switch await limiter.admit(context.client.map { "token:\($0)" } ?? "address:\(context.clientAddress ?? "unknown")") {
                case .admitted: break
                case .limited(let wait):
                    metrics.rejected("rate_limited")
                    throw APIError.rateLimited(retryAfter: wait)
                case .unknown:
                    // Without Redis no limit can be checked: the app's own back end (it has a token)
                    // goes on; anonymous callers, who could only be guessing tokens, wait.
                    if context.client == nil {
                        metrics.rejected("rate_limit_unavailable")
                        throw APIError.unavailable(
                            "rate_limit_unavailable", "the rate limit cannot be checked right now; try again shortly",
                            retryAfter: .seconds(5))
                    }
                }
            }
            if context.client == nil, !openPaths.contains(request.uri.path) {
                metrics.rejected("unauthorized")
                throw APIError.unauthorized
            }
            return try await next(request, context)
        } catch let error as APIError {
            return error.response
        } catch let error as any HTTPResponseError {
            if error.status == .contentTooLarge { metrics.rejected("body_too_large") }
            return APIError.from(error).response
        } catch {
            // Errors from the clients name hosts and causes, never secrets or receipts.
            context.logger.error("request failed", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            return APIError(.internalServerError, "internal_error", "the request failed on the server; it is logged, try again").response
        }
    }

    static let forwarded = HTTPField.Name("Forwarded")!
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!

    private func bearerToken(of request: Request) -> Substring? {
        guard let value = request.headers[.authorization], value.lowercased().hasPrefix("bearer ") else { return nil }
        return value.dropFirst("bearer ".count).drop(while: { $0 == " " })
    }
}
