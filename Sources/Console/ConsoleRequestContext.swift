import Hummingbird

/// A request context the console can be served in: it knows the caller's address, by which wrong
/// logins are counted. `serve`'s (behind trusted proxies, the address they forwarded for) and
/// `receiptfleet console`'s own.
public protocol ConsoleRequestContext: RequestContext {
    var callerAddress: String? { get }
}

/// `receiptfleet console`'s context: the caller is the peer.
struct ConsoleServerContext: ConsoleRequestContext {
    var coreContext: CoreRequestContextStorage
    let callerAddress: String?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        callerAddress = source.channel.remoteAddress?.ipAddress
    }
}
