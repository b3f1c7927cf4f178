import FleetConfiguration
import HTTPTypes
import Hummingbird

/// A request context the console can be served in: it knows the caller's address, by which wrong
/// logins are counted. `serve`'s (behind trusted proxies, the address they forwarded for) and
/// `receiptfleet console`'s own.
public protocol ConsoleRequestContext: RequestContext {
    var callerAddress: String? { get }
}

/// `receiptfleet console`'s context: the caller is the peer, or, behind trusted proxies, the
/// address they forwarded for (`CallerMiddleware`).
struct ConsoleServerContext: ConsoleRequestContext {
    var coreContext: CoreRequestContextStorage
    let peerAddress: String?
    var callerAddress: String?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peerAddress = source.channel.remoteAddress?.ipAddress
        callerAddress = peerAddress
    }
}

/// Names the caller of `receiptfleet console` as `serve` does: the peer, unless it is a trusted
/// proxy, whose header then names the caller.
struct CallerMiddleware: RouterMiddleware {
    typealias Context = ConsoleServerContext
    let trustedProxies: TrustedProxies

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.callerAddress = trustedProxies.client(
            peer: context.peerAddress, forwarded: request.headers[Self.forwarded], xForwardedFor: request.headers[Self.xForwardedFor])
        return try await next(request, context)
    }

    static let forwarded = HTTPField.Name("Forwarded")!
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}
