import Foundation  // the C library's struct linger
import Hummingbird
import NIOCore

/// Per request: the connection it came on, which the connection faults break.
public struct SimulatorRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

/// What a crashing server or a broken middlebox does to an answer, done for real on the socket, so
/// that a client meets the very errors it will meet in production.
enum ConnectionFaults {
    /// Closes the connection without a byte of answer (curl: "Empty reply from server"). The
    /// response returned goes nowhere: Hummingbird finds the connection closed.
    static func drop(_ channel: any Channel) async throws -> Response {
        try await channel.close()
        return Response(status: .ok)
    }

    /// Sends the head and the first half of `body`, then resets the connection (TCP RST).
    static func resetMidResponse(_ body: [UInt8], on channel: any Channel) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: ResponseBody(contentLength: body.count) { writer in
                try await writer.write(ByteBuffer(bytes: body.prefix(body.count / 2)))
                // The half must reach the client first: a reset discards what the kernel still holds.
                try await Task.sleep(for: .milliseconds(50))
                try await reset(channel)
            })
    }

    /// Lingering for zero seconds makes the close send RST instead of FIN. Only a real socket has
    /// the option (an in-memory channel has none); there the close stays a FIN.
    private static func reset(_ channel: any Channel) async throws {
        if let socket = channel as? any SocketOptionProvider {
            try await socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).get()
        }
        try await channel.close()
    }
}
