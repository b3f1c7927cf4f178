import AccessTokens
import Console
import Hummingbird

/// Per request: who is calling. `client` is the name of the caller's API token once
/// `ProtectionMiddleware` has checked it (nil on the notification endpoint, which Apple calls).
public struct APIRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The peer's IP address.
    let remoteIP: String?
    /// The caller's address, for rate-limiting callers without a token: the peer's, or behind a
    /// trusted proxy the address it forwarded for (set by `ProtectionMiddleware`).
    var clientAddress: String?
    /// The caller's token, by name, and what it may do.
    var grant: NamedTokens.Grant?
    var client: String? { grant?.name }

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteIP = source.channel.remoteAddress?.ipAddress
    }
}

/// The console mounted under `/console` counts wrong logins by the caller's address, the one the
/// API limits by.
extension APIRequestContext: ConsoleRequestContext {
    public var callerAddress: String? { clientAddress ?? remoteIP }
}
