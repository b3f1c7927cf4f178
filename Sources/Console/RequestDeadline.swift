import FleetConfiguration
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Lanes
import Logging
import NIOCore
import NIOHTTPTypes

/// A server that callers cannot hold: every request must arrive whole within `deadline` (its
/// headers from the moment the connection opens or the previous answer ended, its body from its
/// headers on), so a caller that sends a `Content-Length` and then a byte now and then, or never
/// finishes its headers, holds a connection and a descriptor for at most that long; and it holds
/// at most `maxConnections` at once (`ConnectionCap`; nil: `DescriptorLimit.connectionCap`).
public enum BoundedServer {
    public static func http1(deadline: Duration, maxConnections: Int?) -> HTTPServerBuilder {
        let count = ConnectionCount(limit: maxConnections ?? DescriptorLimit.connectionCap)
        return .http1(configuration: HTTP1Channel.Configuration(
            additionalChannelHandlers: [ConnectionCap(count), RequestDeadline(deadline: TimeAmount(deadline))],
            idleTimeout: nil))
    }

    /// Serves `router` at `host`:`port` until graceful shutdown (or the task is cancelled), telling
    /// `onListening` the bound port (useful with port 0); then runs `close` on a thread of its own,
    /// as waiting for lanes' work in hand must not block the cooperative pool; rethrows the
    /// server's failure after that.
    public static func serve<Context: RequestContext>(
        _ router: Router<Context>, host: String, port: Int, deadline: Duration, maxConnections: Int?, logger: Logger,
        onListening: @escaping @Sendable (Int) async -> Void, closingOn thread: String, _ close: @escaping @Sendable () -> Void
    ) async throws where Context.Source == ApplicationRequestContextSource {
        let app = Application(
            router: router,
            server: http1(deadline: deadline, maxConnections: maxConnections),
            configuration: .init(address: .hostname(host, port: port), serverName: "receiptfleet"),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? 0) },
            logger: logger)
        var failure: (any Error)?
        do { try await app.run() } catch { failure = error }
        _ = try? await onNewThread(named: thread, close)
        if let failure { throw failure }
    }
}

/// Closes the connection when the request being read has not ended `deadline` after its clock
/// started: when the connection opened or the previous response ended (the headers' clock), or
/// when its headers came (the body's). While a request is answered no clock runs: an answer may
/// wait for Apple.
final class RequestDeadline: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let deadline: TimeAmount
    private var timer: Scheduled<Void>?

    init(deadline: TimeAmount) { self.deadline = deadline }

    func handlerAdded(context: ChannelHandlerContext) { arm(context) }

    func handlerRemoved(context: ChannelHandlerContext) { disarm() }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: arm(context)
        case .end: disarm()
        case .body: break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { arm(context) }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    private func arm(_ context: ChannelHandlerContext) {
        disarm()
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: deadline) { bound.value.close(promise: nil) }
    }

    private func disarm() {
        timer?.cancel()
        timer = nil
    }
}
