import Hummingbird

/// Per request: who is calling. `client` is the name of the caller's API token once
/// `ProtectionMiddleware` has checked it (nil on the notification endpoint, which Apple calls).
public struct APIRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The peer's IP address, for rate-limiting callers without a token.
    let remoteIP: String?
    var client: String?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteIP = source.channel.remoteAddress?.ipAddress
    }
}
