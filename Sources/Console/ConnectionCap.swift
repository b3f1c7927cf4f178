import NIOCore
import Synchronization

/// The connections one server holds, shared by its connections' `ConnectionCap` handlers.
final class ConnectionCount: Sendable {
    let limit: Int
    let open = Atomic<Int>(0)

    init(limit: Int) { self.limit = limit }
}

/// Closes a connection as soon as it opens when its server already holds `count.limit`: a caller
/// opening connections by the thousand gets refused ones, while the process keeps descriptors for
/// the callers it holds and for its own connections (Redis, PostgreSQL, Apple), instead of every
/// accept and connect failing with "too many open files".
final class ConnectionCap: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let count: ConnectionCount
    private var counted = false

    init(_ count: ConnectionCount) { self.count = count }

    // Counted from the moment the server sets the connection up (its handlers are added once it is accepted).
    func handlerAdded(context: ChannelHandlerContext) {
        counted = true
        if count.open.wrappingAdd(1, ordering: .relaxed).newValue > count.limit {
            let channel = context.channel
            context.eventLoop.execute { channel.close(promise: nil) }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if counted { count.open.wrappingSubtract(1, ordering: .relaxed) }
        counted = false
    }
}
